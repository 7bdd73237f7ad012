import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { ConnectorError } from '../../../domain/errors.js';
import { PostgresDatabase } from '../../store/postgres-database.js';
import { SandboxLedger } from './ledger.js';
import { sandboxMigrations } from './sandbox-migrations.js';
import { TEST_ACCOUNTS, figuresOf } from '../../../../test/institutions/sandbox/sandbox-test-books.js';
import { seedSandbox } from './seed.js';

/**
 * The same ledger on PostgreSQL, where transactions do run in parallel (READ COMMITTED) and
 * row locks, not an exclusive writer, keep the books right. Each case races operations that
 * would double-spend or deadlock without them, then audits the books.
 */

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });

let testDatabase: TestDatabase;
let database: PostgresDatabase;
let ledger: SandboxLedger;
/** References the first case managed to reserve; the second commits or releases them. */
const reserved: string[] = [];

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  database = new PostgresDatabase({ url: testDatabase.url, poolMax: 12 });
  await database.migrate(sandboxMigrations);
  ledger = new SandboxLedger(database);
  expect(await seedSandbox(ledger, TEST_ACCOUNTS)).toBe(true);
  expect(await seedSandbox(ledger, TEST_ACCOUNTS)).toBe(false);
});
afterAll(async () => {
  await database.close();
  await testDatabase.drop();
});

async function expectConserved(total: string, held: string): Promise<void> {
  expect(await ledger.conservationCheck()).toEqual({
    ok: true,
    problems: [],
    currencies: [{ currency: 'ZMW', totalBalance: total, totalFunded: total, totalHeld: held, totalHolds: held }],
  });
}

describe('sandbox ledger on PostgreSQL', () => {
  it('holds once for ten identical reserves at once, and lets only what fits through', async () => {
    await Promise.all(Array.from({ length: 10 }, () => ledger.reserve('pg-same', zmw('100'), 'acc-payee')));
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '100' });
    const references = Array.from({ length: 12 }, (_, index) => `pg-fit-${index}`);
    const outcomes = await Promise.allSettled(references.map((reference) => ledger.reserve(reference, zmw('100'), 'acc-payee')));
    reserved.push('pg-same', ...references.filter((_, index) => outcomes[index]?.status === 'fulfilled'));
    expect(reserved).toHaveLength(10);
    for (const reference of references) expect(await ledger.transactionStatus(reference)).toBe(reserved.includes(reference) ? 'pending' : 'not-found');
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '1000' });
    await expectConserved('1335', '1000');
  });

  it('settles commits and releases racing on the same references exactly once each', async () => {
    const commits = reserved.slice(0, 5);
    const releases = reserved.slice(5);
    await Promise.all([
      ...commits.flatMap((reference) => [ledger.commit(reference, zmw('100'), 'acc-payee'), ledger.commit(reference, zmw('100'), 'acc-payee')]),
      ...releases.flatMap((reference) => [ledger.release(reference), ledger.release(reference)]),
    ]);
    for (const reference of commits) expect(await ledger.transactionStatus(reference)).toBe('succeeded');
    for (const reference of releases) expect(await ledger.transactionStatus(reference)).toBe('failed');
    expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '550', held: '0' });
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '500', held: '0' });
    await expectConserved('1335', '0');
  });

  it('debits and refunds once under racing duplicates, without deadlocking against commits', async () => {
    await ledger.reserve('pg-mixed', zmw('10'), 'acc-payer');
    await Promise.all([
      ...Array.from({ length: 5 }, () => ledger.collect('pg-c-1', '260971000102', zmw('50'))),
      ...Array.from({ length: 5 }, () => ledger.commit('pg-mixed', zmw('10'), 'acc-payer')),
      ...Array.from({ length: 5 }, () => ledger.collect('pg-c-2', 'acc-shop', zmw('5'))),
    ]);
    // Refunds (float -> customer) racing commits (float -> customer) and collections (customer ->
    // float) on the same accounts: each locks the customer, then the float, so none deadlocks.
    await ledger.reserve('pg-mixed-2', zmw('7'), 'acc-shop');
    await Promise.all([
      ...Array.from({ length: 5 }, () => ledger.refund('pg-r-1', 'pg-c-1', zmw('20'), '260971000102')),
      ...Array.from({ length: 5 }, () => ledger.refund('pg-r-2', 'pg-c-1', zmw('30'), 'acc-payer')),
      ...Array.from({ length: 5 }, () => ledger.commit('pg-mixed-2', zmw('7'), 'acc-shop')),
      ...Array.from({ length: 5 }, () => ledger.collect('pg-c-3', 'acc-shop', zmw('7'))),
    ]);
    // Two refunds of one debit, at once, never together exceed it: 20 + 30 = 50 passes, 1 more does not.
    await expect(ledger.refund('pg-r-3', 'pg-c-1', zmw('0.01'), 'acc-payer')).rejects.toThrow(/refunds would exceed the original debit/);
    // 200 + 10 (the commit of pg-mixed) - 50 (collection) + 50 (refunds).
    expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '210', held: '0' });
    expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '50', held: '0' });
    // One account model: 500 - 10 (commit) + 50 + 5 (collections) - 50 (refunds) - 7 (commit) + 7 (collection).
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '495', held: '0' });
    await expectConserved('1335', '0');
  });

  it('never leaves float held when a release races its own reserve', async () => {
    const references = Array.from({ length: 8 }, (_, index) => `pg-race-${index}`);
    const outcomes = await Promise.all(
      references.map(async (reference) => {
        const [reserve, release] = await Promise.allSettled([ledger.reserve(reference, zmw('10'), 'acc-payee'), ledger.release(reference)]);
        const refused = reserve.status === 'rejected' && reserve.reason instanceof ConnectorError ? reserve.reason.errorName : reserve.status;
        return [refused, release.status, await ledger.transactionStatus(reference)];
      }),
    );
    for (const outcome of outcomes) expect([['fulfilled', 'fulfilled', 'failed'], ['TransferStateConflict', 'fulfilled', 'failed']]).toContainEqual(outcome);
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '495', held: '0' });
    await expectConserved('1335', '0');
  });

  it('reserves, commits and releases for different payees at once: all land, none deadlocks', async () => {
    // Different payees do not take turns on a payee lock; they meet only at the float, which each
    // locks last, after its postings took key-share locks on it.
    const payees = ['acc-payee', 'acc-payer', 'acc-shop'];
    const rounds = Array.from({ length: 6 }, (_, index) => ({ reference: `pg-spread-${index}`, payee: payees[index % payees.length] ?? 'acc-payee' }));
    await Promise.all(rounds.map(({ reference, payee }) => ledger.reserve(reference, zmw('5'), payee)));
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '495', held: '30' });
    await Promise.all(
      rounds.flatMap(({ reference, payee }, index) =>
        index < 4 ? [ledger.commit(reference, zmw('5'), payee), ledger.commit(reference, zmw('5'), payee)] : [ledger.release(reference), ledger.release(reference)],
      ),
    );
    expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '475', held: '0' });
    expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '560', held: '0' });
    expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '215', held: '0' });
    expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '55', held: '0' });
    await expectConserved('1335', '0');
  });

  it('refuses a commit as PayeeClosed when the payee is closed while the commit waits for its row', async () => {
    await ledger.reserve('pg-closing', zmw('5'), 'acc-payee');
    const figures = await figuresOf(ledger, 'acc-payee');
    // Another transaction closes the account and holds its row while the commit comes.
    const closer = new pg.Client({ connectionString: testDatabase.url });
    await closer.connect();
    try {
      await closer.query('begin');
      await closer.query(`update sandbox_accounts set status = 'closed' where account_id = 'acc-payee'`);
      const committing = ledger.commit('pg-closing', zmw('5'), 'acc-payee').then(
        () => 'committed',
        (error: unknown) => (error instanceof ConnectorError ? error.errorName : String(error)),
      );
      // Until a session waits for the closing transaction's lock on the account.
      for (let attempt = 0; ; attempt += 1) {
        const waiting = await closer.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))`);
        if (waiting.rows[0]?.n === 1) break;
        if (attempt > 1000) throw new Error(`the commit never waited for the account: ${await Promise.race([committing, Promise.resolve('still running')])}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await closer.query('commit');
      // The statement's snapshot still showed the account active; the answer is the refusal.
      expect(await committing).toBe('PayeeClosed');
      expect(await figuresOf(ledger, 'acc-payee')).toEqual(figures);
    } finally {
      await closer.query(`update sandbox_accounts set status = 'active' where account_id = 'acc-payee'`);
      await closer.end();
      await ledger.release('pg-closing');
    }
  });

  it('finds the books whole when checked while transfers settle: the check reads one snapshot', async () => {
    const references = Array.from({ length: 48 }, (_, index) => `pg-checked-${index}`);
    await Promise.all(references.map((reference) => ledger.reserve(reference, zmw('1'), 'acc-payee')));
    expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '560', held: '0' });
    // Half committed, half released, with a check begun beside every fourth.
    const checks: Array<Promise<{ ok: boolean; problems: readonly string[] }>> = [];
    const settled = references.map((reference, index) => {
      if (index % 4 === 0) checks.push(ledger.conservationCheck());
      return index % 2 === 0 ? ledger.commit(reference, zmw('1'), 'acc-payee') : ledger.release(reference);
    });
    await Promise.all(settled);
    const reports = await Promise.all(checks);
    expect(reports.filter((report) => !report.ok).map((report) => report.problems)).toEqual([]);
    expect(reports).toHaveLength(12);
    expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '584', held: '0' });
  });

  it('moves 18-digit amounts exactly', async () => {
    await ledger.fund('float-zmw', zmw('999999999999999999'), 'pg-top-up');
    await ledger.reserve('pg-big', zmw('999999999999999999.99'), 'acc-shop');
    await ledger.commit('pg-big', zmw('999999999999999999.99'), 'acc-shop');
    expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '1000000000000000054.99', held: '0' });
    await expectConserved('1000000000000001334', '0');
  });
});
