import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { sqlitePlans } from '../../../test/support/query-plans.js';
import { fxStoreMigrations } from '../../fxp/store/fx-store.js';
import { identifierMigrations } from '../../identifiers/identifier-store.js';
import { createConnectorMetrics } from '../../metrics/connector-metrics.js';
import type { NewTransfer } from '../../ports/store.js';
import { auditMigrations } from './audit-trail.js';
import { connectorMigrations } from './connector-migrations.js';
import { SqlInboundStore } from './inbound-store.js';
import { outgoingMigrations } from './outgoing-migrations.js';
import { PostgresDatabase } from './postgres-database.js';
import type { AnySchema, SqlDatabase } from './sql-database.js';
import { SqliteDatabase } from './sqlite-database.js';
import { INCOMING_TRANSFERS, stateCounts } from './state-counts.js';

/**
 * The metrics' figures by state: on SQLite kept by triggers in `state_counts` (a scrape reads a
 * few rows, not the table), on PostgreSQL counted. Either way the same, exact figures.
 */

let directory: string | undefined;
let postgres: TestDatabase | undefined;
const open: SqlDatabase[] = [];
afterEach(async () => {
  for (const database of open.splice(0)) await database.close();
  if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  directory = undefined;
  await postgres?.drop();
  postgres = undefined;
});

function sqlitePath(): string {
  directory = mkdtempSync(join(tmpdir(), 'cc-counts-'));
  return join(directory, 'connector.db');
}

function transfer(transferId: string): NewTransfer {
  return {
    transferId,
    quoteId: `q-${transferId}`,
    requestHash: 'c3'.repeat(32),
    state: 'RECEIVED',
    amountType: 'SEND',
    transactionType: 'TRANSFER',
    amount: '10.00',
    currency: 'ZMW',
    transferAmount: '10.00',
    payeeReceiveAmount: '10.00',
    payerIdType: 'MSISDN',
    payerIdValue: '260977000001',
    payeeIdType: 'MSISDN',
    payeeIdValue: '260971000001',
    payeeIdSubValue: null,
    payeeAccountId: 'acc-1',
    createdAt: '2026-11-27T06:00:00.000Z',
  };
}

/** Three transfers received, the second of them reserved since. */
async function storeThree(store: SqlInboundStore): Promise<void> {
  for (const id of ['t-1', 't-2', 't-3']) await store.insertTransfer(transfer(id));
  await store.transitionTransfer('t-2', ['RECEIVED'], 'RESERVED');
}

/** The table counted the slow way, for comparison. */
async function grouped(database: SqlDatabase): Promise<Array<{ state: string; count: number }>> {
  const rows = await sql<{ state: string; count: string | number }>`select state, count(*) as count from inbound_transfers group by state order by state`.execute(database.reader<AnySchema>());
  return rows.rows.map((row) => ({ state: row.state, count: Number(row.count) }));
}

const ALL = [...connectorMigrations, ...auditMigrations];
const BEFORE_COUNTS = ALL.filter((migration) => migration.id !== 'connector-006-state-counts');

/** The same changes through the store on either database: what the figures must follow. */
async function changeTransfers(database: SqlDatabase): Promise<void> {
  const store = new SqlInboundStore(database);
  expect((await store.insertTransfer(transfer('t-4'))).created).toBe(true);
  // A known id: nothing inserted, nothing counted.
  expect((await store.insertTransfer(transfer('t-1'))).created).toBe(false);
  expect(await store.transitionTransfer('t-2', ['RESERVED'], 'COMMITTED')).toMatchObject({ transferId: 't-2', state: 'COMMITTED' });
  expect(await store.transitionTransfer('t-3', ['RECEIVED'], 'ABORTED')).toMatchObject({ transferId: 't-3', state: 'ABORTED' });
  // Not in a listed state: no change.
  expect(await store.transitionTransfer('t-1', ['RESERVED'], 'COMMITTED')).toBeUndefined();
  // Bookkeeping without a change of state.
  expect(await store.recordTransferAttempt('t-4', 'RECEIVED', { attempts: 1, lastError: 'institution unavailable' })).toBe(true);
}

const AFTER_CHANGES = [
  { state: 'ABORTED', count: 1 },
  { state: 'COMMITTED', count: 1 },
  { state: 'RECEIVED', count: 2 },
];

describe('the figures by state on SQLite', () => {
  it('start from the records the store held before the upgrade and follow every insert and change of state', async () => {
    const path = sqlitePath();
    const before = new SqliteDatabase(path);
    await before.migrate(BEFORE_COUNTS);
    await storeThree(new SqlInboundStore(before));
    await before.close();

    const database = new SqliteDatabase(path);
    open.push(database);
    await database.migrate(ALL);
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'RECEIVED', count: 2 },
      { state: 'RESERVED', count: 1 },
    ]);
    await changeTransfers(database);
    // RESERVED went to 0 and is left out, as a state with no records is by the count.
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual(AFTER_CHANGES);
    expect(await grouped(database)).toEqual(AFTER_CHANGES);
    const kept = await sql<{ kind: string; state: string; count: number }>`select kind, state, count from state_counts order by kind, state`.execute(database.reader<AnySchema>());
    expect(kept.rows).toEqual([
      { kind: 'incoming_transfer', state: 'ABORTED', count: 1 },
      { kind: 'incoming_transfer', state: 'COMMITTED', count: 1 },
      { kind: 'incoming_transfer', state: 'RECEIVED', count: 2 },
      { kind: 'incoming_transfer', state: 'RESERVED', count: 0 },
    ]);
  });

  it('follow a row deleted by hand, and are counted afresh when their migration runs again', async () => {
    const path = sqlitePath();
    let database = new SqliteDatabase(path);
    await database.migrate(ALL);
    let store = new SqlInboundStore(database);
    await storeThree(store);
    await database.transaction<AnySchema, void>(async (trx) => {
      await sql`delete from inbound_transfers where transfer_id = 't-1'`.execute(trx);
    });
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'RECEIVED', count: 1 },
      { state: 'RESERVED', count: 1 },
    ]);
    // Figures drifted from the table (as by a table restored on its own): the migration, run
    // again, counts them afresh and replaces the triggers, which go on counting each change once.
    await database.transaction<AnySchema, void>(async (trx) => {
      await sql`update state_counts set count = 40 where kind = 'incoming_transfer'`.execute(trx);
      await sql`delete from schema_migrations where id = 'connector-006-state-counts'`.execute(trx);
    });
    await database.close();
    database = new SqliteDatabase(path);
    open.push(database);
    await database.migrate(ALL);
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'RECEIVED', count: 1 },
      { state: 'RESERVED', count: 1 },
    ]);
    store = new SqlInboundStore(database);
    await store.insertTransfer(transfer('t-4'));
    await store.transitionTransfer('t-2', ['RESERVED'], 'COMMITTED');
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'COMMITTED', count: 1 },
      { state: 'RECEIVED', count: 2 },
    ]);
    expect(await grouped(database)).toEqual(await stateCounts(database, INCOMING_TRANSFERS));
  });

  it('are undone with a change that is undone: a unit of a commit group failing after its change', async () => {
    const database = new SqliteDatabase(sqlitePath());
    open.push(database);
    await database.migrate(ALL);
    const store = new SqlInboundStore(database);
    for (const id of ['t-1', 't-2']) await store.insertTransfer(transfer(id));
    const commits = database.work().commits;
    // Both asked for in the same turn: one group, each unit in its savepoint.
    const failing = database.transaction(async (trx: Kysely<AnySchema>) => {
      await sql`update inbound_transfers set state = 'RESERVED' where transfer_id = 't-1'`.execute(trx);
      await sql`insert into inbound_transfers select * from inbound_transfers where transfer_id = 't-1'`.execute(trx);
    });
    const passing = store.transitionTransfer('t-2', ['RECEIVED'], 'RESERVED');
    await expect(failing).rejects.toThrow(/UNIQUE constraint failed: inbound_transfers\.(transfer_id|quote_id)/);
    expect((await passing)?.state).toBe('RESERVED');
    expect((await store.findTransfer('t-1'))?.state).toBe('RECEIVED');
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'RECEIVED', count: 1 },
      { state: 'RESERVED', count: 1 },
    ]);
    // One group, committed once: the failing unit undone to its savepoint, the other kept.
    expect(database.work().commits).toBe(commits + 1);
  });

  it('are read by a whole scrape from state_counts and the attention indexes, never by reading a record table', async () => {
    const dfsp = sqlitePath();
    const migrating = new SqliteDatabase(dfsp);
    await migrating.migrate([...connectorMigrations, ...outgoingMigrations, ...identifierMigrations, ...auditMigrations]);
    await migrating.close();
    const scrape = (mode: 'dfsp' | 'fxp') => async (reader: SqlDatabase) => {
      const standIn = { ...reader, work: () => ({ statements: 0, roundTrips: 0, transactions: 0, commits: 0 }) } as SqlDatabase;
      await createConnectorMetrics(standIn, mode).registry.metrics();
    };
    const byKind = 'SEARCH state_counts USING INDEX sqlite_autoindex_state_counts_1 (kind=?)';
    expect(await sqlitePlans(dfsp, scrape('dfsp'))).toEqual([
      [byKind],
      [byKind],
      [byKind],
      ['SEARCH inbound_transfers USING COVERING INDEX inbound_transfers_attention (needs_attention=?)'],
      ['SEARCH outgoing_payments USING COVERING INDEX outgoing_payments_attention_created (needs_attention=?)'],
    ]);

    const fxp = join(directory ?? '', 'fxp.db');
    const fxMigrating = new SqliteDatabase(fxp);
    await fxMigrating.migrate([...fxStoreMigrations, ...auditMigrations]);
    await fxMigrating.close();
    expect(await sqlitePlans(fxp, scrape('fxp'))).toEqual([[byKind], [byKind]]);
  });
});

describe('the figures by state on PostgreSQL', () => {
  it('are counted from the table, with no shared rows and no triggers for replicas to wait on', async () => {
    postgres = await createTestDatabase();
    const before = new PostgresDatabase({ url: postgres.url, poolMax: 2 });
    await before.migrate(BEFORE_COUNTS);
    await storeThree(new SqlInboundStore(before));
    await before.close();

    const database = new PostgresDatabase({ url: postgres.url, poolMax: 2 });
    open.push(database);
    await database.migrate(ALL);
    const extra = await sql<{ name: string }>`
      select tgname as name from pg_trigger where not tgisinternal
      union all select tablename from pg_tables where tablename = 'state_counts'`.execute(database.reader<AnySchema>());
    expect(extra.rows).toEqual([]);
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual([
      { state: 'RECEIVED', count: 2 },
      { state: 'RESERVED', count: 1 },
    ]);
    await changeTransfers(database);
    expect(await stateCounts(database, INCOMING_TRANSFERS)).toEqual(AFTER_CHANGES);
  });
});
