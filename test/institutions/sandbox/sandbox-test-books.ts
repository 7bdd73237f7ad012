import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresDatabase } from '../../../src/adapters/store/postgres-database.js';
import type { SqlDatabase } from '../../../src/adapters/store/sql-database.js';
import { SqliteDatabase } from '../../../src/adapters/store/sqlite-database.js';
import { createTestDatabase } from '../../support/postgres.js';
import { SandboxLedger } from '../../../src/adapters/core-banking/sandbox/ledger.js';
import type { SandboxAccounts } from '../../../src/adapters/core-banking/sandbox/sandbox-accounts.js';
import { sandboxMigrations } from '../../../src/adapters/core-banking/sandbox/sandbox-migrations.js';
import { seedSandbox } from '../../../src/adapters/core-banking/sandbox/seed.js';

/**
 * Fresh sandbox books on a real SQLite file in a temporary directory, for the sandbox's tests.
 * Not a test itself; kept out of index.ts.
 */

export const TEST_CURRENCY = 'ZMW';

/** Small books with round numbers; their total is 1335. */
export const TEST_ACCOUNTS: SandboxAccounts = {
  currency: TEST_CURRENCY,
  float: { accountId: 'float-zmw', balance: '1000' },
  customers: [
    { accountId: 'acc-payee', idType: 'MSISDN', idValue: '260971000101', firstName: 'Chanda', lastName: 'Mwila', status: 'active', balance: '50' },
    { accountId: 'acc-payer', idType: 'MSISDN', idValue: '260971000102', firstName: 'Mutale', lastName: 'Banda', status: 'active', balance: '200' },
    { accountId: 'acc-barred', idType: 'MSISDN', idValue: '260971000103', firstName: 'Bwalya', lastName: 'Phiri', status: 'barred', balance: '10' },
    { accountId: 'acc-blocked', idType: 'MSISDN', idValue: '260971000104', firstName: 'Kondwani', lastName: 'Tembo', status: 'blocked', balance: '20' },
    { accountId: 'acc-closed', idType: 'MSISDN', idValue: '260971000105', firstName: 'Mutinta', lastName: 'Hamoonga', status: 'closed', balance: '0' },
    { accountId: 'acc-shop', idType: 'ACCOUNT_ID', idValue: '4000123', firstName: 'Chipo', lastName: 'Zulu', status: 'active', balance: '55' },
  ],
};

export interface TestBooks {
  readonly database: SqlDatabase;
  readonly ledger: SandboxLedger;
  close(): Promise<void>;
}

/**
 * How the books are opened: `unchecked` skips the accounts check of seedSandbox, as books opened
 * by an earlier version, which checked less, were.
 */
export interface TestBooksOptions {
  readonly unchecked?: boolean;
}

export async function openTestBooks(accounts: SandboxAccounts = TEST_ACCOUNTS, clock?: () => Date, options: TestBooksOptions = {}): Promise<TestBooks> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-ledger-'));
  return booksIn(new SqliteDatabase(join(dir, 'books.sqlite')), accounts, clock, options, async () => rmSync(dir, { recursive: true, force: true }));
}

/** The same books in a fresh PostgreSQL database of their own, dropped on close. */
export async function openPostgresTestBooks(accounts: SandboxAccounts = TEST_ACCOUNTS, clock?: () => Date, options: TestBooksOptions = {}): Promise<TestBooks> {
  const testDatabase = await createTestDatabase();
  return booksIn(new PostgresDatabase({ url: testDatabase.url, poolMax: 12 }), accounts, clock, options, () => testDatabase.drop());
}

/** Migrates and seeds the books in `database`; closing closes it, then removes what held it. */
async function booksIn(
  database: SqlDatabase,
  accounts: SandboxAccounts,
  clock: (() => Date) | undefined,
  options: TestBooksOptions,
  remove: () => Promise<void>,
): Promise<TestBooks> {
  await database.migrate(sandboxMigrations);
  const ledger = new SandboxLedger(database, clock);
  await (options.unchecked === true ? ledger.openBooks(accounts) : seedSandbox(ledger, accounts));
  return {
    database,
    ledger,
    async close() {
      await database.close();
      await remove();
    },
  };
}

/** Both databases the sandbox keeps its books in, for describe.each. */
export const BOOK_STORES = [
  ['SQLite', openTestBooks],
  ['PostgreSQL', openPostgresTestBooks],
] as const;

/** Balance and held amount of one account, as decimal strings. */
export async function figuresOf(ledger: SandboxLedger, accountId: string): Promise<{ balance: string; held: string }> {
  const account = (await ledger.balances()).find((candidate) => candidate.accountId === accountId);
  if (account === undefined) throw new Error(`no account ${accountId}`);
  return { balance: account.balance, held: account.held };
}
