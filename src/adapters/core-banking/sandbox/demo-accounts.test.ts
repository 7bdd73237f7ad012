import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sandboxAccountsProblems } from './accounts-file.js';
import { demoAccounts } from './demo-accounts.js';

describe('demo accounts', () => {
  it('validate as an accounts file would', () => {
    expect(sandboxAccountsProblems(demoAccounts)).toEqual([]);
  });

  it('match the table of the README, row by row', () => {
    const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Demo customers'));
    const rows = section
      .split('\n')
      .filter((line) => line.startsWith('| ') && !line.startsWith('| Identifier') && !line.startsWith('| ---'))
      .map((line) => line.split('|').slice(1, 6).map((cell) => cell.trim()));
    expect(rows).toEqual(
      demoAccounts.customers.map((customer) => [
        `${customer.idType} ${customer.idValue}${customer.idSubValue === undefined ? '' : `, sub-value \`${customer.idSubValue}\``}`,
        customer.accountId,
        [customer.firstName, customer.middleName, customer.lastName].filter((part) => part !== undefined).join(' ') +
          (customer.displayName === undefined ? '' : ` (${customer.displayName})`),
        customer.status,
        customer.balance,
      ]),
    );
  });
});
