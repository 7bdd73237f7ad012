import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import { POSTAL_ADDRESS_KEYS } from '../../../domain/iso20022.js';
import { demoAccounts } from './demo-accounts.js';
import { SandboxCoreBanking } from './sandbox-core-banking.js';
import { figuresOf, openTestBooks, type TestBooks } from '../../../../test/institutions/sandbox/sandbox-test-books.js';
import { seedSandbox } from './seed.js';

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });

let books: TestBooks;
beforeEach(async () => {
  books = await openTestBooks(demoAccounts);
});
afterEach(async () => {
  await books.close();
});

async function expectError(promise: Promise<unknown>, name: ErrorName): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error instanceof ConnectorError ? error.errorName : error).toBe(name);
}

async function expectDemoTotal(total: string): Promise<void> {
  const report = await books.ledger.conservationCheck();
  expect(report.problems).toEqual([]);
  expect(report.currencies).toEqual([{ currency: 'ZMW', totalBalance: total, totalFunded: total, totalHeld: '0', totalHolds: '0' }]);
}

describe('demo accounts and seeding', () => {
  it('covers every case: a full address, each inactive status, a name only, an account id, a sub-value', () => {
    const customers = demoAccounts.customers;
    const full = customers.find((customer) => Object.keys(customer.postalAddress ?? {}).length === POSTAL_ADDRESS_KEYS.length);
    expect(full?.idValue).toBe('260971000001');
    expect(full?.countryOfResidence).toBe('ZM');
    expect(customers.filter((customer) => customer.status !== 'active').map((customer) => [customer.idValue, customer.status])).toEqual([
      ['260971000003', 'barred'],
      ['260971000004', 'blocked'],
      ['260971000005', 'closed'],
    ]);
    const nameOnly = customers.filter((c) => c.postalAddress === undefined && c.countryOfResidence === undefined && c.dateOfBirth === undefined && c.status === 'active');
    expect(nameOnly.map((customer) => customer.idValue)).toEqual(['260971000006']);
    expect(customers.filter((customer) => customer.idType === 'ACCOUNT_ID').map((customer) => customer.idValue)).toEqual(['1000234567']);
    expect(customers.filter((customer) => customer.idSubValue !== undefined).map((customer) => [customer.idValue, customer.idSubValue])).toEqual([['260971000008', 'savings']]);
  });

  it('opens the books once: a second start changes nothing', async () => {
    await expectDemoTotal('1019715.75');
    expect(await seedSandbox(books.ledger, demoAccounts)).toBe(false);
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '1000000', held: '0' });
    expect(await figuresOf(books.ledger, 'zm-acc-0002')).toEqual({ balance: '1200.5', held: '0' });
    await expectDemoTotal('1019715.75');
  });

  it('refuses accounts that do not validate, listing the problems', async () => {
    const broken = { ...demoAccounts, float: { accountId: 'zm-acc-0001', balance: '1.234' } };
    await expect(seedSandbox(books.ledger, broken)).rejects.toThrow(
      'Generic validation error: sandbox accounts: float.balance: "1.234" has more decimals than ZMW allows; customers[0].accountId: "zm-acc-0001" is taken by another account',
    );
  });
});

describe('SandboxCoreBanking', () => {
  it('declares native holds and the configured outgoing flow, bank by default', async () => {
    expect(new SandboxCoreBanking(books.ledger).capabilities).toEqual({ outgoingFlow: 'bank', nativeHolds: true });
    expect(new SandboxCoreBanking(books.ledger, { outgoingFlow: 'mobile-operator' }).capabilities).toEqual({ outgoingFlow: 'mobile-operator', nativeHolds: true });
    expect(new SandboxCoreBanking(books.ledger).name).toBe('sandbox');
    await expect(new SandboxCoreBanking(books.ledger).health()).resolves.toBeUndefined();
  });

  it('maps a fully described customer to party details', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    expect(await bank.lookupParty({ idType: 'MSISDN', idValue: '260971000001' })).toEqual({
      idType: 'MSISDN',
      idValue: '260971000001',
      accountId: 'zm-acc-0001',
      currency: 'ZMW',
      status: 'active',
      displayName: 'Mwansa C. Banda',
      firstName: 'Mwansa',
      middleName: 'Chileshe',
      lastName: 'Banda',
      dateOfBirth: '1988-04-12',
      postalAddress: demoAccounts.customers[0]?.postalAddress,
      countryOfResidence: 'ZM',
      kycInformation: 'NRC 204518/10/1; verified in branch 2021-06-03',
    });
  });

  it('maps a customer with only a name, an account id and a sub-value', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    expect(await bank.lookupParty({ idType: 'MSISDN', idValue: '260971000006' })).toEqual({
      idType: 'MSISDN',
      idValue: '260971000006',
      accountId: 'zm-acc-0006',
      currency: 'ZMW',
      status: 'active',
      displayName: 'Lubinda Sakala',
      firstName: 'Lubinda',
      lastName: 'Sakala',
    });
    expect((await bank.lookupParty({ idType: 'ACCOUNT_ID', idValue: '1000234567' })).displayName).toBe('Zulu Hardware Supplies');
    const sub = await bank.lookupParty({ idType: 'MSISDN', idValue: '260971000008', idSubValue: 'savings' });
    expect([sub.accountId, sub.idSubValue, sub.middleName]).toEqual(['zm-acc-0008', 'savings', 'Kalaba']);
  });

  it('answers PartyNotFound for an unknown identifier, a wrong type or a missing sub-value; reports statuses', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    await expectError(bank.lookupParty({ idType: 'MSISDN', idValue: '260971999999' }), 'PartyNotFound');
    await expectError(bank.lookupParty({ idType: 'EMAIL', idValue: '260971000001' }), 'PartyNotFound');
    await expectError(bank.lookupParty({ idType: 'MSISDN', idValue: '260971000008' }), 'PartyNotFound');
    await expectError(bank.lookupParty({ idType: 'MSISDN', idValue: '260971000001', idSubValue: 'savings' }), 'PartyNotFound');
    const statuses = [];
    for (const idValue of ['260971000003', '260971000004', '260971000005']) statuses.push((await bank.lookupParty({ idType: 'MSISDN', idValue })).status);
    expect(statuses).toEqual(['barred', 'blocked', 'closed']);
  });

  it('reserves, commits and releases through the port, moving money exactly', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    await bank.reserve({ reference: 't-1', amount: zmw('99'), payeeAccountId: 'zm-acc-0006' });
    await bank.reserve({ reference: 't-2', amount: zmw('10.1'), payeeAccountId: 'zm-acc-0006' });
    await bank.commit({ reference: 't-1', amount: zmw('99'), payeeAccountId: 'zm-acc-0006' });
    await bank.release('t-2');
    expect(await figuresOf(books.ledger, 'zm-acc-0006')).toEqual({ balance: '139', held: '0' });
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '999901', held: '0' });
    expect([await bank.transactionStatus('t-1'), await bank.transactionStatus('t-2'), await bank.transactionStatus('t-3')]).toEqual(['succeeded', 'failed', 'not-found']);
    await expectDemoTotal('1019715.75');
  });

  it('collects at once in the bank flow and refunds', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    expect(await bank.collect({ reference: 'c-1', amount: zmw('100'), payerId: '260971000002', description: 'Send money' })).toEqual({
      status: 'succeeded',
      institutionReference: 'sandbox-collection-c-1',
    });
    await bank.refund({ reference: 'r-1', originalReference: 'c-1', amount: zmw('40'), payerId: '260971000002' });
    expect(await figuresOf(books.ledger, 'zm-acc-0002')).toEqual({ balance: '1140.5', held: '0' });
    // One account model: the debit went into the float and the refund came out of it.
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '1000060', held: '0' });
    await expectError(bank.collect({ reference: 'c-2', amount: zmw('1'), payerId: '260971000004' }), 'PayerRejected');
    await expectDemoTotal('1019715.75');
  });

  it('answers pending in the mobile-operator flow and moves money only on approval', async () => {
    const bank = new SandboxCoreBanking(books.ledger, { outgoingFlow: 'mobile-operator' });
    expect(await bank.collect({ reference: 'c-1', amount: zmw('100'), payerId: '260971000002' })).toEqual({
      status: 'pending',
      institutionReference: 'sandbox-collection-c-1',
    });
    expect(await figuresOf(books.ledger, 'zm-acc-0002')).toEqual({ balance: '1200.5', held: '0' });
    expect(await bank.transactionStatus('c-1')).toBe('pending');
    await books.ledger.settleCollection('c-1', true);
    expect(await bank.transactionStatus('c-1')).toBe('succeeded');
    expect(await figuresOf(books.ledger, 'zm-acc-0002')).toEqual({ balance: '1100.5', held: '0' });
    await expectDemoTotal('1019715.75');
  });

  it('health fails once the database is closed', async () => {
    const bank = new SandboxCoreBanking(books.ledger);
    await books.database.close();
    await expect(bank.health()).rejects.toThrow();
  });
});
