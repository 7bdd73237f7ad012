import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { PostgresDatabase } from '../../../adapters/store/postgres-database.js';
import type { DatabaseWork, SqlDatabase } from '../../../adapters/store/sql-database.js';
import { SqliteDatabase } from '../../../adapters/store/sqlite-database.js';
import { EXCHANGE_SHARDS, ExchangeLedger, exchangeShardOf } from './exchange-ledger.js';
import { sandboxExchangeMigrations, type ExchangeSchema } from './exchange-migrations.js';

/** 80000 MWK is 10000.00 on each of the eight shards; 1000.03 ZMW leaves 0.03 over, kept on shard 0. */
const CONFIG = { liquidity: { ZMW: '1000.03', MWK: '80000' }, pairs: [] };

interface OpenBooks {
  readonly database: SqlDatabase;
  readonly ledger: ExchangeLedger;
  close(): Promise<void>;
}

async function openDatabase(store: 'sqlite' | 'postgres'): Promise<{ database: SqlDatabase; cleanUp: () => Promise<void>; url?: string }> {
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'fx-exchange-'));
    return { database: new SqliteDatabase(join(dir, 'fx.db')), cleanUp: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const testDatabase: TestDatabase = await createTestDatabase();
  return { database: new PostgresDatabase({ url: testDatabase.url, poolMax: 4 }), cleanUp: () => testDatabase.drop(), url: testDatabase.url };
}

async function openBooks(store: 'sqlite' | 'postgres'): Promise<OpenBooks> {
  const { database, cleanUp } = await openDatabase(store);
  await database.migrate(sandboxExchangeMigrations);
  const ledger = new ExchangeLedger(database, () => new Date('2026-11-25T10:00:00.000Z'));
  expect(await ledger.open(CONFIG)).toEqual(['ZMW', 'MWK']);
  return {
    database,
    ledger,
    async close() {
      await database.close();
      await cleanUp();
    },
  };
}

function spent(database: SqlDatabase, before: DatabaseWork): Omit<DatabaseWork, 'roundTrips'> {
  const after = database.work();
  return { statements: after.statements - before.statements, transactions: after.transactions - before.transactions, commits: after.commits - before.commits };
}

async function figures(ledger: ExchangeLedger): Promise<Record<string, string>> {
  return Object.fromEntries((await ledger.balances()).map((row) => [row.accountId, `${row.balance}/${row.held}`]));
}

/** An account's shards as "balance/held" in minor units, in shard order. */
async function shards(database: SqlDatabase, accountId: string): Promise<string[]> {
  const rows = await database.reader<ExchangeSchema>().selectFrom('fx_exchange_shards').select(['balance', 'held']).where('account_id', '=', accountId).orderBy('shard').execute();
  return rows.map((row) => `${row.balance}/${row.held}`);
}

/** Eight shards at `all`, except those given. */
function eight(all: string, except: Record<number, string> = {}): string[] {
  return Array.from({ length: EXCHANGE_SHARDS }, (_, shard) => except[shard] ?? all);
}

/** The first of prefix-0, prefix-1, ... whose shard is `shard`. */
function referenceOn(prefix: string, shard: number): string {
  for (let index = 0; ; index += 1) if (exchangeShardOf(`${prefix}-${index}`) === shard) return `${prefix}-${index}`;
}

/** Statements per operation: PostgreSQL counts BEGIN and COMMIT; SQLite its group's savepoints and BEGIN/COMMIT. */
const EXPECTED_STATEMENTS = {
  postgres: { reserve: 4, commit: 6, release: 4 },
  sqlite: { reserve: 7, commit: 8, release: 7 },
} as const;

describe('exchangeShardOf', () => {
  it('is the shared hash of the reference (src/shared/shards.ts) modulo eight, as the sandbox float uses', () => {
    expect(EXCHANGE_SHARDS).toBe(8);
    expect(['', 'a', '01JDV6M3AZ6XK1B0SPZ8Q4W2RA'].map(exchangeShardOf)).toEqual([0x811c9dc5 % 8, 0xe40c292c % 8, 3]);
  });
});

describe.each(['sqlite', 'postgres'] as const)('the sandbox exchange ledger on %s', (store) => {
  let books: OpenBooks | undefined;
  afterEach(async () => {
    await books?.close();
    books = undefined;
  });

  it('opens each liquidity account as eight equal shards, the remainder on shard 0, and each clearing account at zero', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    expect(await shards(database, 'liquidity-zmw')).toEqual(eight('12500/0', { 0: '12503/0' }));
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0'));
    expect(await shards(database, 'clearing-zmw')).toEqual(eight('0/0'));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/0', 'liquidity-zmw': '1000.03/0' });
    expect(await ledger.open(CONFIG)).toEqual([]);
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('opens a currency added to the config later, funded from the config; a currency it has keeps its balances', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    await ledger.reserve('before-usd', { amount: '100', currency: 'MWK' });
    // ZMW's amount in the config changed too: its books stay as they are.
    expect(await ledger.open({ liquidity: { ZMW: '5', MWK: '80000', USD: '250.07' }, pairs: [] })).toEqual(['USD']);
    expect(await shards(database, 'liquidity-usd')).toEqual(eight('3125/0', { 0: '3132/0' }));
    expect(await shards(database, 'clearing-usd')).toEqual(eight('0/0'));
    expect(await figures(ledger)).toEqual({
      'clearing-mwk': '0/0',
      'clearing-usd': '0/0',
      'clearing-zmw': '0/0',
      'liquidity-mwk': '80000/100',
      'liquidity-usd': '250.07/0',
      'liquidity-zmw': '1000.03/0',
    });
    const funding = await database.reader<ExchangeSchema>().selectFrom('fx_exchange_postings').select(['movement_id', 'account_id', 'amount']).where('kind', '=', 'FUNDING').orderBy('movement_id').execute();
    expect(funding).toEqual([
      { movement_id: 'open:MWK', account_id: 'liquidity-mwk', amount: '8000000' },
      { movement_id: 'open:USD', account_id: 'liquidity-usd', amount: '25007' },
      { movement_id: 'open:ZMW', account_id: 'liquidity-zmw', amount: '100003' },
    ]);
    expect(await ledger.open({ liquidity: { ZMW: '5', MWK: '80000', USD: '250.07' }, pairs: [] })).toEqual([]);
    await ledger.reserve('usd-1', { amount: '0.07', currency: 'USD' });
    await ledger.commit('before-usd', { amount: '3', currency: 'USD' }, { amount: '100', currency: 'MWK' });
    expect(await figures(ledger)).toEqual({
      'clearing-mwk': '100/0',
      'clearing-usd': '-3/0',
      'clearing-zmw': '0/0',
      'liquidity-mwk': '79900/0',
      'liquidity-usd': '253.07/0.07',
      'liquidity-zmw': '1000.03/0',
    });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('reserves, commits and releases on the shard of the reference, one shard row of each account written once per operation', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    const conversion = referenceOn('conv', 5);
    let before = database.work();
    await ledger.reserve(conversion, { amount: '6425.16', currency: 'MWK' });
    expect(spent(database, before)).toEqual({ statements: EXPECTED_STATEMENTS[store].reserve, transactions: 1, commits: 1 });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0', { 5: '1000000/642516' }));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/6425.16', 'liquidity-zmw': '1000.03/0' });

    before = database.work();
    await ledger.commit(conversion, { amount: '100', currency: 'ZMW' }, { amount: '6425.16', currency: 'MWK' });
    expect(spent(database, before)).toEqual({ statements: EXPECTED_STATEMENTS[store].commit, transactions: 1, commits: 1 });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0', { 5: '357484/0' }));
    expect(await shards(database, 'clearing-mwk')).toEqual(eight('0/0', { 5: '642516/0' }));
    expect(await shards(database, 'liquidity-zmw')).toEqual(eight('12500/0', { 0: '12503/0', 5: '22500/0' }));
    expect(await shards(database, 'clearing-zmw')).toEqual(eight('0/0', { 5: '-10000/0' }));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '6425.16/0', 'clearing-zmw': '-100/0', 'liquidity-mwk': '73574.84/0', 'liquidity-zmw': '1100.03/0' });
    expect(await ledger.status(conversion)).toBe('committed');

    const released = referenceOn('conv', 2);
    await ledger.reserve(released, { amount: '10', currency: 'MWK' });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0', { 2: '1000000/1000', 5: '357484/0' }));
    before = database.work();
    await ledger.release(released);
    expect(spent(database, before)).toEqual({ statements: EXPECTED_STATEMENTS[store].release, transactions: 1, commits: 1 });
    expect(await ledger.status(released)).toBe('released');
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0', { 5: '357484/0' }));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '6425.16/0', 'clearing-zmw': '-100/0', 'liquidity-mwk': '73574.84/0', 'liquidity-zmw': '1100.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('spreads the liquidity when the shard of the reference cannot cover a reservation that the liquidity as a whole can', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    const big = referenceOn('big', 2);
    const before = database.work();
    await ledger.reserve(big, { amount: '15000', currency: 'MWK' });
    // The first run finds shard 2 short and is rolled back; the second spreads: 80000 - 15000 =
    // 65000 available, 8125.00 a shard, shard 2 holding the 15000 besides.
    expect(spent(database, before).transactions).toBe(2);
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('812500/0', { 2: '2312500/1500000' }));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/15000', 'liquidity-zmw': '1000.03/0' });
    // A repeat is answered from the hold, on the first run.
    const repeat = database.work();
    await ledger.reserve(big, { amount: '15000', currency: 'MWK' });
    expect(spent(database, repeat).transactions).toBe(1);

    await ledger.commit(big, { amount: '250', currency: 'ZMW' }, { amount: '15000', currency: 'MWK' });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('812500/0'));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '15000/0', 'clearing-zmw': '-250/0', 'liquidity-mwk': '65000/0', 'liquidity-zmw': '1250.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('refuses a reservation the liquidity as a whole cannot cover and keeps no hold of it (the hold is written first)', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    await expect(ledger.reserve('too-much', { amount: '80000.01', currency: 'MWK' })).rejects.toThrow('MWK liquidity cannot cover 80000.01');
    expect(await ledger.status('too-much')).toBe('not-found');
    await expect(ledger.reserve('no-pair', { amount: '1', currency: 'USD' })).rejects.toThrow('no liquidity in USD');
    expect(await ledger.status('no-pair')).toBe('not-found');
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('1000000/0'));
    // Everything it has, gathered from all eight shards onto one.
    const all = referenceOn('all', 7);
    await ledger.reserve(all, { amount: '80000', currency: 'MWK' });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('0/0', { 7: '8000000/8000000' }));
    await expect(ledger.reserve('one-more', { amount: '0.01', currency: 'MWK' })).rejects.toThrow('MWK liquidity cannot cover 0.01');
    await ledger.release(all);
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/0', 'liquidity-zmw': '1000.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('keeps nothing of a commit whose source currency has no accounts (the postings are written first)', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    await ledger.reserve('conv-3', { amount: '100', currency: 'MWK' });
    await expect(ledger.commit('conv-3', { amount: '1', currency: 'USD' }, { amount: '100', currency: 'MWK' })).rejects.toThrow('no account liquidity-usd');
    expect(await ledger.status('conv-3')).toBe('held');
    const postings = await database.reader<ExchangeSchema>().selectFrom('fx_exchange_postings').select('movement_id').where('movement_id', '=', 'commit:conv-3').execute();
    expect(postings).toEqual([]);
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/100', 'liquidity-zmw': '1000.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('reports a shard whose held amount differs from the holds recorded on it', async () => {
    books = await openBooks(store);
    const { database, ledger } = books;
    const conversion = referenceOn('conv', 4);
    await ledger.reserve(conversion, { amount: '1', currency: 'MWK' });
    // The hold moved to another shard behind the ledger's back: both shards are now wrong.
    await database.autocommit<ExchangeSchema, void>(async (db) => {
      await db.updateTable('fx_exchange_holds').set({ shard: 6 }).where('reference', '=', conversion).execute();
    });
    expect(await ledger.conservationCheck()).toEqual({
      ok: false,
      problems: ['liquidity-mwk shard 4: held 100 but holds 0', 'liquidity-mwk shard 6: held 0 but holds 100'],
    });
  });

  it('moves books opened before the shards into shards: open holds on shard 0, available liquidity spread, clearing whole on shard 0', async () => {
    const { database, cleanUp } = await openDatabase(store);
    books = { database, ledger: new ExchangeLedger(database, () => new Date('2026-11-25T10:00:00.000Z')), close: async () => { await database.close(); await cleanUp(); } };
    await database.migrate(sandboxExchangeMigrations.slice(0, 1));
    // Books as the ledger before the shards left them: 10000.03 MWK funded, one conversion of
    // 10 ZMW into 50 MWK committed, 3000 MWK held for another.
    await database.autocommit<Record<string, Record<string, unknown>>, void>(async (db) => {
      const at = '2026-11-20T10:00:00.000Z';
      await db
        .insertInto('fx_exchange_accounts')
        .values([
          { account_id: 'liquidity-mwk', kind: 'liquidity', currency: 'MWK', balance: '995003', held: '300000', updated_at: at },
          { account_id: 'clearing-mwk', kind: 'clearing', currency: 'MWK', balance: '5000', held: '0', updated_at: at },
          { account_id: 'liquidity-zmw', kind: 'liquidity', currency: 'ZMW', balance: '1000', held: '0', updated_at: at },
          { account_id: 'clearing-zmw', kind: 'clearing', currency: 'ZMW', balance: '-1000', held: '0', updated_at: at },
        ])
        .execute();
      await db
        .insertInto('fx_exchange_postings')
        .values([
          { movement_id: 'open:MWK', leg: 0, kind: 'FUNDING', account_id: 'liquidity-mwk', currency: 'MWK', amount: '1000003', created_at: at },
          { movement_id: 'commit:old-1', leg: 0, kind: 'TRANSFER', account_id: 'clearing-zmw', currency: 'ZMW', amount: '-1000', created_at: at },
          { movement_id: 'commit:old-1', leg: 1, kind: 'TRANSFER', account_id: 'liquidity-zmw', currency: 'ZMW', amount: '1000', created_at: at },
          { movement_id: 'commit:old-1', leg: 2, kind: 'TRANSFER', account_id: 'liquidity-mwk', currency: 'MWK', amount: '-5000', created_at: at },
          { movement_id: 'commit:old-1', leg: 3, kind: 'TRANSFER', account_id: 'clearing-mwk', currency: 'MWK', amount: '5000', created_at: at },
        ])
        .execute();
      await db
        .insertInto('fx_exchange_holds')
        .values([
          { reference: 'old-1', state: 'COMMITTED', target_currency: 'MWK', target_amount: '5000', source_currency: 'ZMW', source_amount: '1000', created_at: at, updated_at: at },
          { reference: 'old-2', state: 'HELD', target_currency: 'MWK', target_amount: '300000', source_currency: null, source_amount: null, created_at: at, updated_at: at },
        ])
        .execute();
    });
    await database.migrate(sandboxExchangeMigrations);
    const { ledger } = books;
    // 995003 - 300000 = 695003 available: 86875 a shard, 3 over on shard 0 with the 300000 held.
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('86875/0', { 0: '386878/300000' }));
    expect(await shards(database, 'clearing-mwk')).toEqual(eight('0/0', { 0: '5000/0' }));
    expect(await shards(database, 'liquidity-zmw')).toEqual(eight('125/0'));
    expect(await shards(database, 'clearing-zmw')).toEqual(eight('0/0', { 0: '-1000/0' }));
    const account = await database.reader<ExchangeSchema>().selectFrom('fx_exchange_accounts').selectAll().where('account_id', '=', 'liquidity-mwk').executeTakeFirstOrThrow();
    expect(account).toEqual({ account_id: 'liquidity-mwk', kind: 'liquidity', currency: 'MWK', updated_at: '2026-11-20T10:00:00.000Z' });
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '50/0', 'clearing-zmw': '-10/0', 'liquidity-mwk': '9950.03/3000', 'liquidity-zmw': '10/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
    // The old hold is committed from shard 0, where the migration put it.
    await ledger.commit('old-2', { amount: '600', currency: 'ZMW' }, { amount: '3000', currency: 'MWK' });
    expect(await shards(database, 'liquidity-mwk')).toEqual(eight('86875/0', { 0: '86878/0' }));
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '3050/0', 'clearing-zmw': '-610/0', 'liquidity-mwk': '6950.03/0', 'liquidity-zmw': '610/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });
});

describe('the sandbox exchange ledger on PostgreSQL under concurrent operations from two replicas', () => {
  interface Replicas {
    readonly ledgers: readonly [ExchangeLedger, ExchangeLedger];
    close(): Promise<void>;
  }
  let replicas: Replicas | undefined;
  afterEach(async () => {
    await replicas?.close();
    replicas = undefined;
  });

  async function twoReplicas(): Promise<Replicas> {
    const { database: first, cleanUp, url } = await openDatabase('postgres');
    const second = new PostgresDatabase({ url: url as string, poolMax: 4 });
    await first.migrate(sandboxExchangeMigrations);
    await second.migrate(sandboxExchangeMigrations);
    const clock = () => new Date('2026-11-25T10:00:00.000Z');
    const ledgers = [new ExchangeLedger(first, clock), new ExchangeLedger(second, clock)] as const;
    expect(await ledgers[0].open(CONFIG)).toEqual(['ZMW', 'MWK']);
    expect(await ledgers[1].open(CONFIG)).toEqual([]);
    return {
      ledgers,
      async close() {
        await second.close();
        await first.close();
        await cleanUp();
      },
    };
  }

  it('reserves, spreads, commits and releases 64 conversions at once without a deadlock, to the cent', async () => {
    replicas = await twoReplicas();
    const { ledgers } = replicas;
    // 64 holds of 1200 MWK, eight a shard on average; a shard of 10000 takes eight, and some
    // shards have more references than that, so they run short and spread.
    const references = Array.from({ length: 64 }, (_, index) => `race-${index}`);
    const perShard = eight('0').map((_, shard) => references.filter((reference) => exchangeShardOf(reference) === shard).length);
    expect(perShard).toStrictEqual([8, 8, 9, 8, 7, 9, 8, 7]);
    const ledgerOf = (index: number) => ledgers[index % 2] as ExchangeLedger;
    await Promise.all(references.map((reference, index) => ledgerOf(index).reserve(reference, { amount: '1200', currency: 'MWK' })));
    expect((await figures(ledgers[0]))['liquidity-mwk']).toBe('80000/76800');
    // Even ones committed (20 ZMW each), odd ones released, each by the other replica.
    await Promise.all(
      references.map((reference, index) =>
        index % 2 === 0 ? ledgerOf(index + 1).commit(reference, { amount: '20', currency: 'ZMW' }, { amount: '1200', currency: 'MWK' }) : ledgerOf(index + 1).release(reference),
      ),
    );
    const ledger = ledgers[0];
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '38400/0', 'clearing-zmw': '-640/0', 'liquidity-mwk': '41600/0', 'liquidity-zmw': '1640.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
    await expect(ledger.reserve('after-1', { amount: '41600.01', currency: 'MWK' })).rejects.toThrow('MWK liquidity cannot cover 41600.01');
    await ledger.reserve('after-2', { amount: '41600', currency: 'MWK' });
    expect(await figures(ledger)).toEqual({ 'clearing-mwk': '38400/0', 'clearing-zmw': '-640/0', 'liquidity-mwk': '41600/41600', 'liquidity-zmw': '1640.03/0' });
    expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('opens a currency added to the config once when both replicas start with it at the same moment', async () => {
    replicas = await twoReplicas();
    const [a, b] = replicas.ledgers;
    const config = { liquidity: { ...CONFIG.liquidity, USD: '100' }, pairs: [] };
    const opened = await Promise.all([a.open(config), b.open(config)]);
    expect(opened.flat()).toEqual(['USD']);
    expect(opened.filter((currencies) => currencies.length === 0)).toHaveLength(1);
    expect(await figures(a)).toEqual({ 'clearing-mwk': '0/0', 'clearing-usd': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/0', 'liquidity-usd': '100/0', 'liquidity-zmw': '1000.03/0' });
    expect(await a.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('finds the books whole when checked while conversions settle: the check reads one snapshot', async () => {
    replicas = await twoReplicas();
    const { ledgers } = replicas;
    const references = Array.from({ length: 48 }, (_, index) => `checked-${index}`);
    await Promise.all(references.map((reference, index) => ledgers[index % 2]!.reserve(reference, { amount: '10', currency: 'MWK' })));
    // Half committed, half released, by the other replica, with a check begun beside every fourth.
    const checks: Array<Promise<{ ok: boolean; problems: string[] }>> = [];
    const settled = references.map((reference, index) => {
      const ledger = ledgers[(index + 1) % 2]!;
      if (index % 4 === 0) checks.push(ledgers[index % 2]!.conservationCheck());
      return index % 2 === 0 ? ledger.commit(reference, { amount: '1', currency: 'ZMW' }, { amount: '10', currency: 'MWK' }) : ledger.release(reference);
    });
    await Promise.all(settled);
    const reports = await Promise.all(checks);
    expect(reports.filter((report) => !report.ok)).toEqual([]);
    expect(reports).toHaveLength(12);
    expect(await figures(ledgers[0])).toEqual({ 'clearing-mwk': '240/0', 'clearing-zmw': '-24/0', 'liquidity-mwk': '79760/0', 'liquidity-zmw': '1024.03/0' });
  });

  it('holds once when both replicas reserve the same reference at the same moment', async () => {
    replicas = await twoReplicas();
    const [a, b] = replicas.ledgers;
    const references = Array.from({ length: 16 }, (_, index) => `twice-${index}`);
    await Promise.all(references.flatMap((reference) => [a.reserve(reference, { amount: '100', currency: 'MWK' }), b.reserve(reference, { amount: '100', currency: 'MWK' })]));
    expect((await figures(a))['liquidity-mwk']).toBe('80000/1600');
    expect(await a.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('ends a reservation and a release of the same reference racing each other released, whichever came first', async () => {
    replicas = await twoReplicas();
    const [a, b] = replicas.ledgers;
    const references = Array.from({ length: 16 }, (_, index) => `abort-${index}`);
    const outcomes = await Promise.allSettled(references.flatMap((reference) => [a.reserve(reference, { amount: '100', currency: 'MWK' }), b.release(reference)]));
    // A release that came first leaves the reference released, and the late reservation is refused.
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(String(outcome.reason)).toContain('the conversion was released before it was reserved');
    for (const reference of references) expect(await a.status(reference)).toBe('released');
    expect(await figures(a)).toEqual({ 'clearing-mwk': '0/0', 'clearing-zmw': '0/0', 'liquidity-mwk': '80000/0', 'liquidity-zmw': '1000.03/0' });
    expect(await a.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('lets exactly one of a commit and a release of the same hold happen', async () => {
    replicas = await twoReplicas();
    const [a, b] = replicas.ledgers;
    const references = Array.from({ length: 16 }, (_, index) => `either-${index}`);
    for (const reference of references) await a.reserve(reference, { amount: '100', currency: 'MWK' });
    const outcomes = await Promise.allSettled(references.flatMap((reference) => [a.commit(reference, { amount: '2', currency: 'ZMW' }, { amount: '100', currency: 'MWK' }), b.release(reference)]));
    let committed = 0;
    for (const [index, reference] of references.entries()) {
      const [commit, release] = [outcomes[index * 2], outcomes[index * 2 + 1]];
      const status = await a.status(reference);
      if (status === 'committed') {
        committed += 1;
        expect(commit?.status).toBe('fulfilled');
        expect(release?.status === 'rejected' && String(release.reason)).toContain('the conversion was committed');
      } else {
        expect(status).toBe('released');
        expect(release?.status).toBe('fulfilled');
        expect(commit?.status === 'rejected' && String(commit.reason)).toContain('the conversion was released');
      }
    }
    const paid = 100 * committed;
    expect(await figures(a)).toEqual({
      'clearing-mwk': `${paid}/0`,
      'clearing-zmw': committed === 0 ? '0/0' : `-${2 * committed}/0`,
      'liquidity-mwk': `${80000 - paid}/0`,
      'liquidity-zmw': `${1000 + 2 * committed}.03/0`,
    });
    expect(await a.conservationCheck()).toEqual({ ok: true, problems: [] });
  });
});
