import { afterEach, describe, expect, it } from 'vitest';
import { BOOK_STORES, figuresOf, openPostgresTestBooks, type TestBooks } from '../../../../test/institutions/sandbox/sandbox-test-books.js';
import { ConnectorError } from '../../../domain/errors.js';
import type { SqlDatabase } from '../../store/sql-database.js';
import { SqliteDatabase } from '../../store/sqlite-database.js';
import { ALL_FLOAT_SHARDS, FLOAT_LANES, FLOAT_SHARDS, floatLaneOf, shardOf } from './ledger-float.js';
import { SandboxLedger } from './ledger.js';
import { sandboxMigrations } from './sandbox-migrations.js';
import type { SandboxSchema } from './sandbox-schema.js';

/**
 * The float kept in shards (ledger-float.ts), on both databases: SQLite changes a shard with a
 * read and a write, PostgreSQL with one conditional UPDATE, and both must give the same figures.
 * Amounts in the shard rows are minor units (ZMW has 2 decimals).
 */

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });

let open: TestBooks | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function shards(database: SqlDatabase): Promise<Array<[number, string, string]>> {
  const rows = await database.reader<SandboxSchema>().selectFrom('sandbox_float_shards').select(['shard', 'balance', 'held']).where('account_id', '=', 'float-zmw').orderBy('shard').execute();
  return rows.map((row) => [row.shard, row.balance, row.held]);
}

/** Every shard at `balance`/`held` except those given. */
function expected(all: [string, string], except: Record<number, [string, string]> = {}): Array<[number, string, string]> {
  return Array.from({ length: FLOAT_SHARDS }, (_, shard) => [shard, ...(except[shard] ?? all)] as [number, string, string]);
}

async function expectConserved(ledger: SandboxLedger, total: string, held: string): Promise<void> {
  expect(await ledger.conservationCheck()).toEqual({
    ok: true,
    problems: [],
    currencies: [{ currency: 'ZMW', totalBalance: total, totalFunded: total, totalHeld: held, totalHolds: held }],
  });
}

/** A reference whose shard is not `shard`, found deterministically. */
function referenceOffShard(prefix: string, shard: number): string {
  for (let index = 0; ; index += 1) if (shardOf(`${prefix}-${index}`, ALL_FLOAT_SHARDS) !== shard) return `${prefix}-${index}`;
}

describe('shardOf', () => {
  it('is FNV-1a of the reference modulo the shard count', () => {
    expect(FLOAT_SHARDS).toBe(8);
    // FNV-1a 32-bit: "" is 0x811c9dc5, "a" is 0xe40c292c.
    expect(shardOf('', ALL_FLOAT_SHARDS)).toBe(0x811c9dc5 % 8);
    expect(shardOf('a', ALL_FLOAT_SHARDS)).toBe(0xe40c292c % 8);
    expect(shardOf('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', ALL_FLOAT_SHARDS)).toBe(3);
    expect(shardOf('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', ALL_FLOAT_SHARDS)).toBe(6);
  });

  it('within a lane: its first shard plus FNV-1a modulo its size', () => {
    expect(FLOAT_LANES).toBe(4);
    expect([0, 1, 2, 3].map(floatLaneOf)).toEqual([
      { first: 0, size: 2 },
      { first: 2, size: 2 },
      { first: 4, size: 2 },
      { first: 6, size: 2 },
    ]);
    // 0x811c9dc5 is odd, 0xe40c292c even.
    expect(shardOf('', floatLaneOf(1))).toBe(3);
    expect(shardOf('a', floatLaneOf(1))).toBe(2);
    expect(shardOf('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', floatLaneOf(2))).toBe(5);
    expect(shardOf('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', floatLaneOf(2))).toBe(4);
    expect(() => floatLaneOf(4)).toThrow('float lane 4 is not between 0 and 3');
    expect(() => floatLaneOf(-1)).toThrow('float lane -1 is not between 0 and 3');
    expect(() => floatLaneOf(0.5)).toThrow('float lane 0.5 is not between 0 and 3');
  });
});

describe.each(BOOK_STORES)('the float in shards on %s', (_name, openBooks) => {
  it('opens the float as eight equal shards whose sum is its balance, its own row at zero', async () => {
    open = await openBooks();
    expect(await shards(open.database)).toEqual(expected(['12500', '0']));
    const row = await open.database.reader<SandboxSchema>().selectFrom('sandbox_accounts').select(['balance', 'held']).where('account_id', '=', 'float-zmw').executeTakeFirstOrThrow();
    expect(row).toEqual({ balance: '0', held: '0' });
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
    await expectConserved(open.ledger, '1335', '0');
  });

  it('holds on the shard of the reference when that shard can, and gives it back there', async () => {
    open = await openBooks();
    // 01JDV6M3AZ6XK1B0SPZ8Q4W2RA is on shard 3.
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 3: ['12500', '10000'] }));
    await open.ledger.commit('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 3: ['2500', '0'] }));
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '900', held: '0' });
    expect(await figuresOf(open.ledger, 'acc-payee')).toEqual({ balance: '150', held: '0' });
    await expectConserved(open.ledger, '1335', '0');
  });

  it('spreads the float again when one shard cannot hold the amount, and holds it there', async () => {
    open = await openBooks();
    // 600 of 1000 available: shard 6 takes 600 and 400 stays available, 50 on each shard.
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', zmw('600'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['5000', '0'], { 6: ['65000', '60000'] }));
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '600' });
    await expectConserved(open.ledger, '1335', '600');
    await open.ledger.release('01JDV6M3AZ6XK1B0SPZ8Q4W2RB');
    expect(await shards(open.database)).toEqual(expected(['5000', '0'], { 6: ['65000', '0'] }));
    await expectConserved(open.ledger, '1335', '0');
  });

  it('keeps the remainder of an uneven spread on the shard that needed it', async () => {
    open = await openBooks();
    // 1000 - 999.99 = 0.01 left: 1 minor unit, shared 0 each, the remainder on shard 3.
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('999.99'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['0', '0'], { 3: ['100000', '99999'] }));
    await expectConserved(open.ledger, '1335', '999.99');
  });

  it('refuses a hold when the shards together are short, and changes nothing', async () => {
    open = await openBooks();
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    const error = await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', zmw('900.01'), 'acc-payee').catch((caught: unknown) => caught);
    expect(error instanceof ConnectorError ? error.errorName : error).toBe('PayeeInsufficientLiquidity');
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 3: ['12500', '10000'] }));
    expect(await open.ledger.transactionStatus('01JDV6M3AZ6XK1B0SPZ8Q4W2RB')).toBe('not-found');
    // Exactly what is available still fits.
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', zmw('900'), 'acc-payee');
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '1000' });
    await expectConserved(open.ledger, '1335', '1000');
  });

  it('credits a collection to its shard and pays a refund from another by spreading the float again', async () => {
    open = await openBooks();
    const collection = 'collect-a';
    const refund = referenceOffShard('refund', shardOf(collection, ALL_FLOAT_SHARDS));
    // Everything but 80 held on shard 3, so each shard keeps 10 available.
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('920'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['1000', '0'], { 3: ['93000', '92000'] }));
    await open.ledger.collect(collection, 'acc-payer', zmw('50'));
    const collected = shardOf(collection, ALL_FLOAT_SHARDS);
    expect((await shards(open.database))[collected]).toEqual([collected, String((collected === 3 ? 93000 : 1000) + 5000), collected === 3 ? '92000' : '0']);
    // The refund's own shard has 10 available; the float as a whole has 130: 80 stays, 10 each.
    await open.ledger.refund(refund, collection, zmw('50'), 'acc-payer');
    const after = await shards(open.database);
    expect(after.map(([shard, balance, held]) => [shard, BigInt(balance) - BigInt(held)])).toEqual(expected(['1000', '0']).map(([shard]) => [shard, 1000n]));
    expect(after[3]).toEqual([3, '93000', '92000']);
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '920' });
    expect(await figuresOf(open.ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
    // A refund the float cannot pay as a whole is refused and recorded nowhere.
    await open.ledger.collect('collect-b', 'acc-payer', zmw('100'));
    await open.ledger.reserve('hold-rest', zmw('180'), 'acc-payee');
    const short = await open.ledger.refund('refund-b', 'collect-b', zmw('0.01'), 'acc-payer').catch((caught: unknown) => caught);
    expect(short instanceof ConnectorError ? short.errorName : short).toBe('PayeeInsufficientLiquidity');
    expect(await open.ledger.transactionStatus('refund-b')).toBe('not-found');
    await expectConserved(open.ledger, '1335', '1100');
  });

  it('spreads a funding of the float over its shards', async () => {
    open = await openBooks();
    await open.ledger.fund('float-zmw', zmw('0.1'), 'top-up');
    // 10 minor units: 1 on each shard, the remaining 2 on shard 0.
    expect(await shards(open.database)).toEqual(expected(['12501', '0'], { 0: ['12503', '0'] }));
    await expectConserved(open.ledger, '1335.1', '0');
  });

  it('takes from and credits to the shards of its lane; a hold is committed on its shard by a ledger of another lane', async () => {
    open = await openBooks();
    // Two processes on the same books, as two replicas with lanes 2 and 0.
    const laneTwo = new SandboxLedger(open.database, undefined, { floatLane: floatLaneOf(2) });
    const laneZero = new SandboxLedger(open.database, undefined, { floatLane: floatLaneOf(0) });
    expect(laneTwo.floatLane).toEqual({ first: 4, size: 2 });
    expect(open.ledger.floatLane).toEqual(ALL_FLOAT_SHARDS);
    // 01JDV6M3AZ6XK1B0SPZ8Q4W2RA is on shard 5 in lane 2 (3 of all eight).
    await laneTwo.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 5: ['12500', '10000'] }));
    await laneZero.commit('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 5: ['2500', '0'] }));
    // A collection is credited to the collecting process's lane: "collect-a" is on shard 1 of lane 0.
    expect(shardOf('collect-a', floatLaneOf(0))).toBe(1);
    await laneZero.collect('collect-a', 'acc-payer', zmw('50'));
    expect(await shards(open.database)).toEqual(expected(['12500', '0'], { 1: ['17500', '0'], 5: ['2500', '0'] }));
    // More than shard 4 has (RB is on 4 in lane 2): the whole float is spread, the lane's shard takes it.
    await laneTwo.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', zmw('200'), 'acc-payee');
    // 950 available before: 750 left, 93.75 to each shard, the remainder of 0 on shard 4.
    expect(await shards(open.database)).toEqual(expected(['9375', '0'], { 4: ['29375', '20000'] }));
    expect(await figuresOf(open.ledger, 'float-zmw')).toEqual({ balance: '950', held: '200' });
    await expectConserved(open.ledger, '1335', '200');
  });

  it('names the shard whose held amount its holds do not explain', async () => {
    open = await openBooks();
    await open.ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    await open.database.transaction<SandboxSchema, void>(async (trx) => {
      await trx.updateTable('sandbox_float_shards').set({ held: '10001' }).where('account_id', '=', 'float-zmw').where('shard', '=', 3).execute();
    });
    const report = await open.ledger.conservationCheck();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      'float-zmw shard 3: held 10001 but its holds sum to 10000',
      'float-zmw: held 10001 but its holds sum to 10000',
      'ZMW: accounts hold 100.01, holds sum to 100',
    ]);
  });
});

describe('opening the shards of books kept before them (migration sandbox-003)', () => {
  it('moves the float row into shards, keeps open holds on shard 0, and still commits them', async () => {
    const dir = (await import('node:fs')).mkdtempSync(`${(await import('node:os')).tmpdir()}/sandbox-shards-`);
    const database = new SqliteDatabase(`${dir}/books.sqlite`);
    try {
      await database.migrate(sandboxMigrations.filter((migration) => migration.id !== 'sandbox-003-float-shards'));
      // Books as the version before the shards kept them: 1000 on the float, 300 of it held.
      await database.transaction<Record<string, Record<string, unknown>>, void>(async (trx) => {
        const at = '2026-11-01T00:00:00.000Z';
        await trx
          .insertInto('sandbox_accounts')
          .values([
            { account_id: 'float-zmw', kind: 'float', currency: 'ZMW', balance: '100000', held: '30000', status: 'active', created_at: at, updated_at: at },
            { account_id: 'acc-payee', kind: 'customer', currency: 'ZMW', balance: '5000', held: '0', status: 'active', created_at: at, updated_at: at },
          ])
          .execute();
        await trx
          .insertInto('sandbox_postings')
          .values([
            { movement_id: 'open:float-zmw', leg: 0, kind: 'FUNDING', account_id: 'float-zmw', currency: 'ZMW', amount: '100000', created_at: at },
            { movement_id: 'open:acc-payee', leg: 0, kind: 'FUNDING', account_id: 'acc-payee', currency: 'ZMW', amount: '5000', created_at: at },
          ])
          .execute();
        await trx
          .insertInto('sandbox_holds')
          .values({ reference: 'old-hold', state: 'HELD', float_account_id: 'float-zmw', payee_account_id: 'acc-payee', currency: 'ZMW', amount: '30000', created_at: at, updated_at: at })
          .execute();
      });
      await database.migrate(sandboxMigrations);
      // 700 available: 87.5 on each shard; shard 0 also keeps the 300 held.
      expect(await shards(database)).toEqual(expected(['8750', '0'], { 0: ['38750', '30000'] }));
      const ledger = new SandboxLedger(database);
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '300' });
      await expectConserved(ledger, '1050', '300');
      await ledger.commit('old-hold', zmw('300'), 'acc-payee');
      expect(await shards(database)).toEqual(expected(['8750', '0']));
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '350', held: '0' });
      await expectConserved(ledger, '1050', '0');
    } finally {
      await database.close();
      (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the float in shards on PostgreSQL, under load', () => {
  it('reserves and commits in one statement each, and spreads a short shard in a transaction', async () => {
    open = await openPostgresTestBooks();
    const { database, ledger } = open;
    // The first operation reads the float's id once; later ones remember it.
    await ledger.reserve('warm-up', zmw('1'), 'acc-payee');
    const work = () => database.work();
    const spent = (before: ReturnType<typeof work>) => {
      const after = work();
      return { statements: after.statements - before.statements, transactions: after.transactions - before.transactions, commits: after.commits - before.commits };
    };
    let before = work();
    await ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(spent(before)).toEqual({ statements: 1, transactions: 1, commits: 1 });
    before = work();
    await ledger.commit('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', zmw('100'), 'acc-payee');
    expect(spent(before)).toEqual({ statements: 1, transactions: 1, commits: 1 });
    // 600 does not fit in shard 6 (125 - its share of the warm-up): the statement fails on
    // purpose, then one transaction locks the 8 shards and rewrites them (BEGIN, the turn and
    // payee, the hold, the shards read, 8 writes, COMMIT).
    before = work();
    await ledger.reserve('01JDV6M3AZ6XK1B0SPZ8Q4W2RB', zmw('600'), 'acc-payee');
    expect(spent(before)).toEqual({ statements: 14, transactions: 2, commits: 1 });
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '900', held: '601' });
    await expectConserved(ledger, '1335', '601');
  });

  it('lets holds that spread the float race single-shard commits, releases and refunds: none deadlocks, no cent is lost', async () => {
    open = await openPostgresTestBooks();
    const { ledger } = open;
    // Forty holds of 30 against 1000: shards of 125 run short after four each, so most of
    // these spread the float while others commit or release on single shards.
    const references = Array.from({ length: 40 }, (_, index) => `load-${index}`);
    const reserved = await Promise.allSettled(references.map((reference) => ledger.reserve(reference, zmw('30'), 'acc-payee')));
    const held = references.filter((_, index) => reserved[index]?.status === 'fulfilled');
    for (const outcome of reserved) if (outcome.status === 'rejected') expect(outcome.reason instanceof ConnectorError ? outcome.reason.errorName : outcome.reason).toBe('PayeeInsufficientLiquidity');
    // 33 x 30 = 990 fit in 1000; a 34th does not.
    expect(held).toHaveLength(33);
    await ledger.collect('load-collect', 'acc-payer', zmw('100'));
    // Enough for the refunds and the late holds whatever order they run in: 10 + 100 + 400.
    await ledger.fund('float-zmw', zmw('400'), 'load-top-up');
    await Promise.all([
      ...held.slice(0, 20).map((reference) => ledger.commit(reference, zmw('30'), 'acc-payee')),
      ...held.slice(20).map((reference) => ledger.release(reference)),
      ...Array.from({ length: 4 }, (_, index) => ledger.refund(`load-refund-${index}`, 'load-collect', zmw('25'), 'acc-payer')),
      ...Array.from({ length: 6 }, (_, index) => ledger.reserve(`load-late-${index}`, zmw('50'), 'acc-shop')),
    ]);
    // 1000 + 400 funded - 600 committed + 100 collected - 100 refunded; 300 held by the six late holds.
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '800', held: '300' });
    expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '650', held: '0' });
    expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
    expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '55', held: '0' });
    await expectConserved(ledger, '1735', '300');
  });
});
