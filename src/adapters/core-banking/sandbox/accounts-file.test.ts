import { describe, expect, it } from 'vitest';
import { ConnectorError } from '../../../domain/errors.js';
import { parseSandboxAccountsFile, sandboxAccountsProblems } from './accounts-file.js';
import { demoAccounts } from './demo-accounts.js';
import type { SandboxCustomerSeed } from './sandbox-accounts.js';

function problemsOf(text: string): { name: string; message: string } {
  try {
    parseSandboxAccountsFile(text);
  } catch (error) {
    if (error instanceof ConnectorError) return { name: error.errorName, message: error.message };
    throw error;
  }
  throw new Error('expected the file to be refused');
}

const customer = {
  accountId: 'acc-1',
  idType: 'MSISDN',
  idValue: '260971000001',
  firstName: 'Chanda',
  lastName: 'Mwila',
  status: 'active',
  balance: '10.5',
};

describe('parseSandboxAccountsFile', () => {
  it('reads a minimal file and keeps optional fields only when present', () => {
    const text = JSON.stringify({
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000' },
      customers: [customer, { ...customer, accountId: 'acc-2', idValue: '260971000002', idSubValue: 'savings', middleName: 'K', postalAddress: { TwnNm: 'Lusaka', Ctry: 'ZM' }, countryOfResidence: 'ZM', dateOfBirth: '1990-02-28' }],
    });
    expect(parseSandboxAccountsFile(text)).toEqual({
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000' },
      customers: [
        customer,
        { ...customer, accountId: 'acc-2', idValue: '260971000002', idSubValue: 'savings', middleName: 'K', postalAddress: { TwnNm: 'Lusaka', Ctry: 'ZM' }, countryOfResidence: 'ZM', dateOfBirth: '1990-02-28' },
      ],
    });
  });

  it('reads the demo accounts written out as JSON back to the same value', () => {
    expect(parseSandboxAccountsFile(JSON.stringify(demoAccounts))).toEqual(demoAccounts);
  });

  it('lists every problem at once, with where it is', () => {
    const text = JSON.stringify({
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000.001' },
      extra: true,
      customers: [
        { ...customer, idValue: '0971', balance: '01' },
        { ...customer, accountId: 'float-zmw', status: 'frozen', dateOfBirth: '1990-02-30', postalAddress: { Town: 'Lusaka' } },
        { ...customer, accountId: 'acc-3', idType: 'PHONE', firstName: '', countryOfResidence: 'zm' },
        { ...customer, accountId: 'acc-4', balance: 12 },
        { ...customer, idValue: '0971' },
        'not an object',
      ],
    });
    expect(problemsOf(text)).toEqual({
      name: 'ValidationFailed',
      message:
        'Generic validation error: the sandbox accounts file has 16 problem(s): ' +
        [
          '(top level): unknown field "extra"',
          'customers[1].status: must be one of active, barred, blocked, closed',
          'customers[1].dateOfBirth: must be a date YYYY-MM-DD',
          'customers[1].postalAddress: unknown field "Town"',
          'customers[1].postalAddress: must have at least one element',
          'customers[2].idType: "PHONE" is not an identifier type',
          'customers[2].firstName: must be a string of 1-128 characters',
          'customers[2].countryOfResidence: must be an ISO 3166 alpha-2 code',
          'customers[3].balance: must be a string of 1-40 characters',
          'customers[5]: must be an object',
          'float.balance: "1000.001" has more decimals than ZMW allows',
          'customers[0].balance: "01" is not an amount (digits, optional decimals, no leading zeros)',
          'customers[0].idValue: must be an E.164 number in international format, without a leading 0 or 00',
          'customers[4].accountId: "acc-1" is taken by another account',
          'customers[4]: identifier MSISDN/0971/ is used twice',
          'customers[4].idValue: must be an E.164 number in international format, without a leading 0 or 00',
        ].join('; '),
    });
  });

  it('names missing fields and a wrong top level', () => {
    expect(problemsOf(JSON.stringify({ currency: 'XYZ', customers: {} })).message).toBe(
      'Generic validation error: the sandbox accounts file has 3 problem(s): float: must be an object; customers: must be an array; currency: "XYZ" is not an ISO 4217 code',
    );
    expect(problemsOf(JSON.stringify({ currency: 'ZMW', float: { accountId: 'f' }, customers: [{ accountId: 'a' }] })).message).toBe(
      'Generic validation error: the sandbox accounts file has 7 problem(s): float.balance: is required; customers[0].idType: is required; ' +
        'customers[0].status: is required; customers[0].idValue: is required; customers[0].firstName: is required; ' +
        'customers[0].lastName: is required; customers[0].balance: is required',
    );
    expect(problemsOf('[1, 2]')).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: the sandbox accounts file has 1 problem(s): (top level): must be an object' });
    expect(problemsOf('{"currency": ')).toEqual({ name: 'MalformedSyntax', message: 'Malformed syntax: the sandbox accounts file is not JSON' });
  });

  it('refuses a customer account id that takes the float\'s or another customer\'s; no other account id is reserved', () => {
    const seed: SandboxCustomerSeed = { ...customer, idType: 'MSISDN', status: 'active' };
    const taken = [
      { ...seed, accountId: 'outgoing-settlement-zmw' },
      { ...seed, accountId: 'f', idValue: '260971000002' },
      { ...seed, accountId: 'outgoing-settlement-zmw', idValue: '260971000003' },
    ];
    expect(sandboxAccountsProblems({ currency: 'ZMW', float: { accountId: 'f', balance: '1' }, customers: taken })).toEqual([
      'customers[1].accountId: "f" is taken by another account',
      'customers[2].accountId: "outgoing-settlement-zmw" is taken by another account',
    ]);
  });

  it('refuses an account id that is another customer\'s identifier value, which would make that payerId name both', () => {
    const text = JSON.stringify({
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000' },
      customers: [
        { ...customer, accountId: 'acc-shop', idType: 'ACCOUNT_ID', idValue: '1000234567' },
        { ...customer, accountId: '1000234567', idValue: '260971000002' },
        // Not found by payerId (a sub-value), nor a clash with itself: both accepted.
        { ...customer, accountId: 'acc-3', idValue: 'acc-4', idType: 'ALIAS', idSubValue: 'savings' },
        { ...customer, accountId: 'acc-4', idValue: '260971000004' },
        { ...customer, accountId: '4000555', idType: 'ACCOUNT_ID', idValue: '4000555' },
      ],
    });
    expect(problemsOf(text)).toEqual({
      name: 'ValidationFailed',
      message:
        'Generic validation error: the sandbox accounts file has 1 problem(s): customers[1].accountId: "1000234567" is also the ACCOUNT_ID identifier value ' +
        'of customers[0] (account "acc-shop"), so a payerId "1000234567" would name two customers',
    });
  });
});
