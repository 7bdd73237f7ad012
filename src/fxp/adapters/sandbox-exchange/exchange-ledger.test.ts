import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { PostgresDatabase } from '../../../adapters/store/postgres-database.js';
import type { DatabaseWork, SqlDatabase } from '../../../adapters/store/sql-database.js';
import { SqliteDatabase } from '../../../adapters/store/sqlite-database.js';
import { ExchangeLedger } from './exchange-ledger.js';
import { sandboxExchangeMigrations } from './exchange-migrations.js';

const CONFIG = { liquidity: { ZMW: '1000', MWK: '50000' }, pairs: [] };

interface OpenBooks {
  readonly database: SqlDatabase;
  readonly ledger: ExchangeLedger;
  close(): Promise<void>;
}

async function openBooks(store: 'sqlite' | 'postgres'): Promise<OpenBooks> {
  let database: SqlDatabase;
  let cleanUp: () => Promise<void>;
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'fx-exchange-'));
    database = new SqliteDatabase(join(dir, 'fx.db'));
    cleanUp = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const testDatabase: TestDatabase = await createTestDatabase();
    database = new PostgresDatabase({ url: testDatabase.url, poolMax: 4 });
    cleanUp = () => testDatabase.drop();
  }
  await database.migrate(sandboxExchangeMigrations);
  const ledger = new ExchangeLedger(database, () => new Date('2026-11-25T10:00:00.000Z'));
  expect(await ledger.open(CONFIG)).toBe(true);
  return {
    database,
    ledger,
    async close() {
      await database.close();
      await cleanUp();
    },
  };
}

function spent(database: SqlDatabase, before: DatabaseWork): DatabaseWork {
  const after = database.work();
  return { statements: after.statements - before.statements, transactions: after.transactions - before.transactions, commits: after.commits - before.commits };
}

async function figures(ledger: ExchangeLedger): Promise<Record<string, string>> {
  return Object.fromEntries((await ledger.balances()).map((row) => [row.accountId, `${row.balance}/${row.held}`]));
}

/** Statements per operation: PostgreSQL counts BEGIN, its advisory lock and COMMIT; SQLite its group's savepoints and BEGIN/COMMIT. */
const EXPECTED_STATEMENTS = {
  postgres: { reserve: 7, commit: 8, release: 7 },
  sqlite: { reserve: 8, commit: 9, release: 8 },
} as const;

describe.each(['sqlite', 'postgres'] as const)('the sandbox exchange ledger on %s', (store) => {
  let books: OpenBooks | undefined;
  afterEach(async () => {
    await books?.close();
    books = undefined;
  });

  it('reserves, commits and releases with the liquidity rows written once per operation, books balanced', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    let before = database.work();
    await ledger.reserve('conv-1', { amount: '6425.16', currency: 'MWK' });
    expect(spent(database, before)).toEqual({ statements: EXPECTED_STATEMENTS[store].reserve, transactions: 1, commits: 1 });
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '50000/6425.16', 'liquidity-zmw': '1000/0' });

    before = database.work();
    await ledger.commit('conv-1', { amount: '100', currency: 'ZMW' }, { amount: '6425.16', currency: 'MWK' });
    expect(spent(database, before).statements).toBe(EXPECTED_STATEMENTS[store].commit);
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '6425.16/0', 'clearing-zmw': '-100/0', 'liquidity-mwk': '43574.84/0', 'liquidity-zmw': '1100/0' });
    expect(await ledger.status('conv-1')).toBe('committed');

    await ledger.reserve('conv-2', { amount: '10', currency: 'MWK' });
    before = database.work();
    await ledger.release('conv-2');
    expect(spent(database, before).statements).toBe(EXPECTED_STATEMENTS[store].release);
    expect(await ledger.status('conv-2')).toBe('released');
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '6425.16/0', 'clearing-zmw': '-100/0', 'liquidity-mwk': '43574.84/0', 'liquidity-zmw': '1100/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('refuses a reservation the liquidity cannot cover and keeps no hold of it (the hold is written first)', async () => {
    books = await openBooks(store);
    const { ledger } = books;
    await expect(ledger.reserve('too-much', { amount: '50000.01', currency: 'MWK' })).rejects.toThrow('MWK liquidity cannot cover 50000.01');
    expect(await ledger.status('too-much')).toBe('not-found');
    await expect(ledger.reserve('no-pair', { amount: '1', currency: 'USD' })).rejects.toThrow('no liquidity in USD');
    expect(await ledger.status('no-pair')).toBe('not-found');
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '50000/0', 'liquidity-zmw': '1000/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('keeps nothing of a commit whose source currency has no accounts (the postings are written first)', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    await ledger.reserve('conv-3', { amount: '100', currency: 'MWK' });
    await expect(ledger.commit('conv-3', { amount: '1', currency: 'USD' }, { amount: '100', currency: 'MWK' })).rejects.toThrow('no account liquidity-usd');
    expect(await ledger.status('conv-3')).toBe('held');
    const postings = await database.reader<{ fx_exchange_postings: { movement_id: string } }>().selectFrom('fx_exchange_postings').select('movement_id').where('movement_id', '=', 'commit:conv-3').execute();
    expect(postings).toEqual([]);
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '50000/100', 'liquidity-zmw': '1000/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });
});
