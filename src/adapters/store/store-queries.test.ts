import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { INBOUND_TRANSFER_STATES } from '../../domain/inbound-transfer.js';
import { OUTGOING_STATES } from '../../domain/outgoing-payment.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { countTurns } from '../../../test/support/event-loop-turns.js';
import { postgresAccessPaths, sqlitePlans } from '../../../test/support/query-plans.js';
import { AuditTrail, auditMigrations } from './audit-trail.js';
import { connectorMigrations } from './connector-migrations.js';
import { CHANGED_PAGE_SIZE, visitChanged } from './changed-pages.js';
import { claimDueKeys } from './lease-claim.js';
import { SqlInboundStore } from './inbound-store.js';
import { outgoingMigrations } from './outgoing-migrations.js';
import { SqlOutgoingStore } from './outgoing-store.js';
import { PostgresDatabase } from './postgres-database.js';
import type { Logger } from '../../ports/logger.js';
import type { RecordSearch } from '../../ports/store.js';
import { IdentifierJobs, identifierJobMigrations } from '../../identifiers/identifier-jobs.js';
import { IdentifierStore, identifierMigrations, type IdentifierKey } from '../../identifiers/identifier-store.js';
import type { IdentifierRegistration } from '../../identifiers/registration.js';
import type { AnySchema, Migration, SqlDatabase } from './sql-database.js';
import { SqliteDatabase } from './sqlite-database.js';

/**
 * The queries run beside the payments, on an operator's request or every few seconds: the
 * operations console's views, the recovery workers' claims, a bulk identifier job's pages. On
 * SQLite they are read on the event loop (synchronously), so each goes through an index that
 * stops it after its page, or after the few rows it needs, not through the whole table.
 */

let directory: string | undefined;
let postgres: TestDatabase | undefined;
afterEach(async () => {
  if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  directory = undefined;
  await postgres?.drop();
  postgres = undefined;
});

/** A SQLite file with these migrations applied, closed again; its path. */
async function migratedSqlite(migrations: readonly Migration[]): Promise<string> {
  directory = mkdtempSync(join(tmpdir(), 'cc-console-'));
  const path = join(directory, 'connector.db');
  const database = new SqliteDatabase(path);
  await database.migrate(migrations);
  await database.close();
  return path;
}

/** The definitions of the named indexes on a fresh PostgreSQL database with these migrations applied. */
async function postgresIndexes(migrations: readonly Migration[], names: readonly string[]): Promise<string[]> {
  postgres = await createTestDatabase();
  const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
  try {
    await database.migrate(migrations);
    const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where indexname in (${sql.join(names)}) order by indexname`.execute(database.reader());
    return indexes.rows.map((row) => row.indexdef);
  } finally {
    await database.close();
  }
}

describe('the audit trail\'s recent entries of one subject', () => {
  it('are found through the (subject, at) index on SQLite, not by walking the subject through the key and sorting it', async () => {
    const path = await migratedSqlite(auditMigrations);
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new AuditTrail(reader).recent({ subject: 'incoming_transfer', since: '2026-11-20T00:00:00.000Z', limit: 200 })).toEqual([]);
    });
    expect(plans).toEqual([['SEARCH audit_events USING INDEX audit_events_subject_at (subject=? AND at>?)', 'USE TEMP B-TREE FOR LAST TERM OF ORDER BY']]);
  });

  it('have the same index on PostgreSQL', async () => {
    expect(await postgresIndexes(auditMigrations, ['audit_events_at', 'audit_events_pk', 'audit_events_subject_at'])).toEqual([
      'CREATE INDEX audit_events_at ON public.audit_events USING btree (at)',
      'CREATE UNIQUE INDEX audit_events_pk ON public.audit_events USING btree (subject, subject_id, seq)',
      'CREATE INDEX audit_events_subject_at ON public.audit_events USING btree (subject, at)',
    ]);
  });
});

describe('the latest records, newest first (the console\'s first view)', () => {
  it('are read backwards through a created_at index on SQLite, not by scanning and sorting the whole table', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new SqlInboundStore(reader).searchTransfers({ limit: 200 })).toEqual([]);
      expect(await new SqlOutgoingStore(reader).search({ limit: 200 })).toEqual([]);
    });
    expect(plans).toEqual([['SCAN inbound_transfers USING INDEX inbound_transfers_created'], ['SCAN outgoing_payments USING INDEX outgoing_payments_created']]);
  });

  it('have the same indexes on PostgreSQL', async () => {
    expect(await postgresIndexes([...connectorMigrations, ...outgoingMigrations], ['inbound_transfers_created', 'outgoing_payments_created'])).toEqual([
      'CREATE INDEX inbound_transfers_created ON public.inbound_transfers USING btree (created_at)',
      'CREATE INDEX outgoing_payments_created ON public.outgoing_payments USING btree (created_at)',
    ]);
  });
});

describe('the records flagged for attention, or in one state (the console\'s filters, the metrics\' count)', () => {
  it('are found through indexes that stop after the page on SQLite, not by scanning or sorting the whole table', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const plans = await sqlitePlans(path, async (reader) => {
      const inbound = new SqlInboundStore(reader);
      const outgoing = new SqlOutgoingStore(reader);
      for (const search of [{ needsAttention: true }, { states: ['COMMITTED' as const] }, { states: ['ABORTED' as const], needsAttention: true }]) {
        expect(await inbound.searchTransfers({ ...search, limit: 200 })).toEqual([]);
      }
      for (const search of [{ needsAttention: true }, { states: ['COMPLETED' as const] }, { states: ['FAILED' as const], needsAttention: true }]) {
        expect(await outgoing.search({ ...search, limit: 200 })).toEqual([]);
      }
    });
    expect(plans).toEqual([
      // The flagged few, newest first, each checked for the state where one is asked for.
      ['SEARCH inbound_transfers USING INDEX inbound_transfers_attention (needs_attention=?)'],
      ['SEARCH inbound_transfers USING INDEX inbound_transfers_state_created (state=?)'],
      ['SEARCH inbound_transfers USING INDEX inbound_transfers_attention (needs_attention=?)'],
      ['SEARCH outgoing_payments USING INDEX outgoing_payments_attention_created (needs_attention=?)'],
      ['SEARCH outgoing_payments USING INDEX outgoing_payments_state_created (state=?)'],
      ['SEARCH outgoing_payments USING INDEX outgoing_payments_attention_created (needs_attention=?)'],
    ]);
  });

  it('have the same indexes on PostgreSQL', async () => {
    const names = ['inbound_transfers_attention', 'inbound_transfers_state_created', 'outgoing_payments_attention_created', 'outgoing_payments_state_created'];
    expect(await postgresIndexes([...connectorMigrations, ...outgoingMigrations], names)).toEqual([
      'CREATE INDEX inbound_transfers_attention ON public.inbound_transfers USING btree (needs_attention, created_at)',
      'CREATE INDEX inbound_transfers_state_created ON public.inbound_transfers USING btree (state, created_at)',
      'CREATE INDEX outgoing_payments_attention_created ON public.outgoing_payments USING btree (needs_attention, created_at)',
      'CREATE INDEX outgoing_payments_state_created ON public.outgoing_payments USING btree (state, created_at)',
    ]);
  });
});

describe('a console search by id, with other filters', () => {
  it('finds the payment through its two unique keys on SQLite, whatever else is asked, not through the state\'s or attention\'s index', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const plans = await sqlitePlans(path, async (reader) => {
      const outgoing = new SqlOutgoingStore(reader);
      for (const search of [{}, { states: ['COMPLETED' as const] }, { needsAttention: true }, { states: ['FAILED' as const], needsAttention: true, createdFrom: '2026-11-01T00:00:00.000Z', createdTo: '2026-11-28T00:00:00.000Z' }]) {
        expect(await outgoing.search({ id: 'pay-1', ...search, limit: 200 })).toEqual([]);
      }
    });
    const byKeys = ['MULTI-INDEX OR', 'INDEX 1', 'SEARCH outgoing_payments USING INDEX sqlite_autoindex_outgoing_payments_1 (home_transaction_id=?)', 'INDEX 2', 'SEARCH outgoing_payments USING INDEX sqlite_autoindex_outgoing_payments_2 (transfer_id=?)', 'USE TEMP B-TREE FOR ORDER BY'];
    expect(plans).toEqual([byKeys, byKeys, byKeys, byKeys]);
  });

  it('applies the other filters to the payment an id names, by either of its ids, on SQLite', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const db = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) });
    await db.insertInto('outgoing_payments').values({
      home_transaction_id: 'home-1', transfer_id: 'tr-1', request_hash: 'h', kind: 'SEND_MONEY', amount_type: 'SEND', flow: 'bank', state: 'FAILED', payer_id: '1',
      payee_id_type: 'MSISDN', payee_id: '2', send_amount: '10', send_currency: 'XOF', receive_currency: 'XOF', needs_attention: 1,
      created_at: '2026-11-20T10:00:00.000Z', updated_at: '2026-11-20T10:05:00.000Z', audit_seq: 1,
    }).execute();
    await db.destroy();
    const database = new SqliteDatabase(path);
    try {
      const outgoing = new SqlOutgoingStore(database);
      const found = async (search: Omit<RecordSearch, 'limit'>) => (await outgoing.search({ ...search, limit: 200 })).map((payment) => payment.homeTransactionId);
      for (const id of ['home-1', 'tr-1']) {
        expect(await found({ id })).toEqual(['home-1']);
        expect(await found({ id, states: ['FAILED', 'COMPLETED'], needsAttention: true })).toEqual(['home-1']);
        expect(await found({ id, states: ['COMPLETED'] })).toEqual([]);
        expect(await found({ id, needsAttention: false })).toEqual([]);
        expect(await found({ id, createdFrom: '2026-11-20T10:00:00.000Z', createdTo: '2026-11-20T10:00:00.001Z' })).toEqual(['home-1']);
        expect(await found({ id, createdTo: '2026-11-20T10:00:00.000Z' })).toEqual([]);
        expect(await found({ id, createdFrom: '2026-11-20T10:00:00.001Z' })).toEqual([]);
      }
      expect(await found({ id: 'home-2' })).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

describe('the payment a refund belongs to, found by the refund\'s reference (reconciliation)', () => {
  it('is found through its index on SQLite, not by reading every payment', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new SqlOutgoingStore(reader).findByRefundReference('0b9a7c52-5d4e-5c3b-9e1a-2f6d8c4b7a10')).toBeUndefined();
    });
    expect(plans).toEqual([['SEARCH outgoing_payments USING INDEX outgoing_payments_refund_reference (refund_reference=?)']]);
  });

  it('has the same index on PostgreSQL', async () => {
    expect(await postgresIndexes([...connectorMigrations, ...outgoingMigrations], ['outgoing_payments_refund_reference'])).toEqual([
      'CREATE INDEX outgoing_payments_refund_reference ON public.outgoing_payments USING btree (refund_reference)',
    ]);
  });
});

describe('the recovery workers\' claims, with the console\'s indexes beside them', () => {
  it('still take the due and the stale rows through the recovery indexes on SQLite', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const claim = { states: ['RESERVED', 'COMMITTING'], now: '2026-11-27T06:00:00.000Z', staleBefore: '2026-11-27T05:59:00.000Z', leaseUntil: '2026-11-27T06:02:00.000Z', limit: 50 };
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await claimDueKeys(reader.reader(), 'sqlite', 'inbound_transfers', 'transfer_id', claim)).toEqual([]);
      expect(await claimDueKeys(reader.reader(), 'sqlite', 'outgoing_payments', 'home_transaction_id', claim)).toEqual([]);
    });
    const recovery = (table: string) => [
      'MULTI-INDEX OR',
      'INDEX 1',
      `SEARCH ${table} USING INDEX ${table}_due (state=? AND next_attempt_at<?)`,
      'INDEX 2',
      `SEARCH ${table} USING INDEX ${table}_stale (state=? AND updated_at<?)`,
      'USE TEMP B-TREE FOR ORDER BY',
    ];
    expect(plans).toEqual([recovery('inbound_transfers'), recovery('outgoing_payments')]);
  });
});

describe('a reconciliation\'s records: those last changed in its period, read in pages', () => {
  const period = { from: '2026-11-20T00:00:00.000Z', to: '2026-11-21T00:00:00.000Z' };
  const migrations = [...connectorMigrations, ...outgoingMigrations];

  /** An incoming transfer and an outgoing payment as rows, with only what the tables require besides. */
  const transferRow = (id: string, state: string, createdAt: string, updatedAt: string) => ({
    transfer_id: id, quote_id: `q-${id}`, request_hash: 'h', state, amount_type: 'SEND', transaction_type: 'TRANSFER', amount: '10', currency: 'XOF',
    transfer_amount: '10', payee_receive_amount: '10', payer_id_type: 'MSISDN', payer_id_value: '1', payee_id_type: 'MSISDN', payee_id_value: '2',
    payee_account_id: 'a', created_at: createdAt, updated_at: updatedAt, audit_seq: 1,
  });
  const paymentRow = (id: string, state: string, createdAt: string, updatedAt: string) => ({
    home_transaction_id: id, transfer_id: `t-${id}`, request_hash: 'h', kind: 'SEND_MONEY', amount_type: 'SEND', flow: 'bank', state, payer_id: '1',
    payee_id_type: 'MSISDN', payee_id: '2', send_amount: '10', send_currency: 'XOF', receive_currency: 'XOF', created_at: createdAt, updated_at: updatedAt, audit_seq: 1,
  });

  /**
   * One record in each state last changed in the period, and in each state one changed just
   * before it and one at its end: the ids the period should give, in the order they are read
   * (state by state).
   */
  async function recordsInEveryState(db: Kysely<AnySchema>): Promise<{ transfers: string[]; payments: string[] }> {
    const at = (minute: number) => new Date(Date.parse('2026-11-19T12:00:00.000Z') + minute * 60_000).toISOString();
    const insert = async (table: string, states: readonly string[], row: (id: string, state: string, createdAt: string, updatedAt: string) => Record<string, string | number>) => {
      for (const [index, state] of states.entries()) {
        await db.insertInto(table).values(row(`${state}-in`, state, at(index), at(24 * 60 + index))).execute();
        await db.insertInto(table).values(row(`${state}-before`, state, at(index), '2026-11-19T23:59:59.999Z')).execute();
        await db.insertInto(table).values(row(`${state}-end`, state, at(index), period.to)).execute();
      }
      return states.map((state) => `${state}-in`);
    };
    return { transfers: await insert('inbound_transfers', INBOUND_TRANSFER_STATES, transferRow), payments: await insert('outgoing_payments', OUTGOING_STATES, paymentRow) };
  }

  /** Every id the stores give for the period, in order, and the size of each page. */
  async function visited(database: SqlDatabase): Promise<{ transfers: string[]; payments: string[]; pages: number[] }> {
    const found = { transfers: [] as string[], payments: [] as string[], pages: [] as number[] };
    await new SqlInboundStore(database).visitChangedTransfers(period, (page) => {
      found.pages.push(page.length);
      found.transfers.push(...page.map((record) => record.transferId));
    });
    await new SqlOutgoingStore(database).visitChangedPayments(period, (page) => {
      found.pages.push(page.length);
      found.payments.push(...page.map((record) => record.homeTransactionId));
    });
    return found;
  }

  /**
   * Seven COMMITTED transfers in the period, four of them changed at one instant, and one at the
   * period's end; read two at a time, each page starts after the last (updated_at, key) read.
   */
  async function pagedThroughTies(database: SqlDatabase, db: Kysely<AnySchema>): Promise<{ ids: string[]; pages: number[] }> {
    const tie = '2026-11-20T08:00:00.000Z';
    const rows = [
      transferRow('t-4', 'COMMITTED', tie, tie),
      transferRow('t-2', 'COMMITTED', tie, tie),
      transferRow('t-3', 'COMMITTED', tie, tie),
      transferRow('t-1', 'COMMITTED', tie, tie),
      transferRow('t-0', 'COMMITTED', tie, '2026-11-20T07:59:59.999Z'),
      transferRow('t-5', 'COMMITTED', tie, '2026-11-20T08:00:00.001Z'),
      transferRow('t-6', 'COMMITTED', tie, '2026-11-20T23:59:59.999Z'),
      transferRow('t-7', 'COMMITTED', tie, period.to),
      transferRow('t-8', 'COMMITTING', tie, tie),
    ];
    for (const row of rows) await db.insertInto('inbound_transfers').values(row).execute();
    const found = { ids: [] as string[], pages: [] as number[] };
    await visitChanged(database, { table: 'inbound_transfers', key: 'transfer_id', states: ['COMMITTED', 'COMMITTING'] }, period, (page) => {
      found.pages.push(page.length);
      found.ids.push(...page.map((row) => String(row['transfer_id'])));
    }, 2);
    return found;
  }

  it('are read a page at a time through the recovery index (state, updated_at), each page after the last, on SQLite, not by reading every record', async () => {
    const path = await migratedSqlite(migrations);
    const writer = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) });
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await pagedThroughTies(reader, writer)).toEqual({ ids: ['t-0', 't-1', 't-2', 't-3', 't-4', 't-5', 't-6', 't-8'], pages: [2, 2, 2, 1, 1] });
    }).finally(() => writer.destroy());
    const page = ['SEARCH inbound_transfers USING INDEX inbound_transfers_stale (state=? AND updated_at>? AND updated_at<?)', 'USE TEMP B-TREE FOR LAST TERM OF ORDER BY'];
    // COMMITTED: four pages, the last one short; COMMITTING: one.
    expect(plans).toEqual([page, page, page, page, page]);
  });

  it('are those of every state, each once, and no others, on SQLite, in one snapshot, the event loop turning between pages', async () => {
    const path = await migratedSqlite(migrations);
    const db = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) });
    const expected = await recordsInEveryState(db);
    const database = new SqliteDatabase(path);
    try {
      expect(await visited(database)).toEqual({ ...expected, pages: [...expected.transfers, ...expected.payments].map(() => 1) });
      // A page's worth and one more in one state: two pages, with a turn of the event loop between them.
      for (let index = 0; index < CHANGED_PAGE_SIZE; index += 1) {
        await db.insertInto('inbound_transfers').values(transferRow(`bulk-${String(index).padStart(4, '0')}`, 'ABORTED', '2026-11-20T09:00:00.000Z', '2026-11-20T09:00:00.000Z')).execute();
      }
      const turns = countTurns();
      const pages: number[][] = [];
      await new SqlInboundStore(database).visitChangedTransfers(period, (page) => {
        pages.push([page.length, turns.turns()]);
      });
      turns.stop();
      const aborted = INBOUND_TRANSFER_STATES.indexOf('ABORTED');
      expect(pages.map(([size]) => size)).toEqual([...INBOUND_TRANSFER_STATES.map(() => 1).slice(0, aborted), CHANGED_PAGE_SIZE, 1, ...INBOUND_TRANSFER_STATES.slice(aborted + 1).map(() => 1)]);
      expect((pages[aborted + 1]?.[1] ?? 0) > (pages[aborted]?.[1] ?? 0)).toBe(true);
      await sql`delete from inbound_transfers`.execute(db);
      expect(await pagedThroughTies(database, db)).toEqual({ ids: ['t-0', 't-1', 't-2', 't-3', 't-4', 't-5', 't-6', 't-8'], pages: [2, 2, 2, 1, 1] });
    } finally {
      await db.destroy();
      await database.close();
    }
  });

  it('are those of every state on PostgreSQL, read through the same index once the tables are analysed, each statement unnamed', async () => {
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate(migrations);
      const db = database.reader<AnySchema>() as Kysely<AnySchema>;
      const expected = await recordsInEveryState(db);
      expect(await visited(database)).toEqual({ ...expected, pages: [...expected.transfers, ...expected.payments].map(() => 1) });
      // 100,000 of each, one every 86.4 s from 2026-09-01 (1,000 a day), each last changed 2 s after it was made.
      const instant = (offset: string) => sql`to_char(timestamp '2026-09-01' + g * interval '86.4 seconds' + interval ${sql.lit(offset)}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
      await sql`insert into inbound_transfers (transfer_id, quote_id, request_hash, state, amount_type, transaction_type, amount, currency, transfer_amount,
          payee_receive_amount, payer_id_type, payer_id_value, payee_id_type, payee_id_value, payee_account_id, created_at, updated_at, audit_seq)
        select 'bulk-' || g, 'q-bulk-' || g, 'h', 'COMMITTED', 'SEND', 'TRANSFER', '10', 'XOF', '10', '10', 'MSISDN', '1', 'MSISDN', '2', 'a',
          ${instant('0 seconds')}, ${instant('2 seconds')}, 4 from generate_series(1, 100000) g`.execute(db);
      await sql`insert into outgoing_payments (home_transaction_id, transfer_id, request_hash, kind, amount_type, flow, state, payer_id, payee_id_type, payee_id,
          send_amount, send_currency, receive_currency, created_at, updated_at, audit_seq)
        select 'bulk-' || g, 't-bulk-' || g, 'h', 'SEND_MONEY', 'SEND', 'bank', 'COMPLETED', '1', 'MSISDN', '2', '10', 'XOF', 'XOF',
          ${instant('0 seconds')}, ${instant('2 seconds')}, 4 from generate_series(1, 100000) g`.execute(db);
      await sql`analyze inbound_transfers`.execute(db);
      await sql`analyze outgoing_payments`.execute(db);
      const plans = await postgresAccessPaths(postgres.url, async (reader) => {
        const found = await visited(reader);
        expect([found.transfers.length, found.payments.length]).toEqual([1_000 + expected.transfers.length, 1_000 + expected.payments.length]);
      });
      // A statement per state, and a second page for the state with 1,001 records (COMMITTED,
      // COMPLETED), which goes through (state, updated_at). A state of one record may be read
      // through any index that starts with the state (the planner's choice varies with ANALYZE's
      // sample); none reads the table whole.
      const pagesOf = (table: string, states: readonly string[], large: string) =>
        states.flatMap((state) => (state === large ? [{ table, large: true }, { table, large: true }] : [{ table, large: false }]));
      const statements = [...pagesOf('inbound_transfers', INBOUND_TRANSFER_STATES, 'COMMITTED'), ...pagesOf('outgoing_payments', OUTGOING_STATES, 'COMPLETED')];
      const stateIndexes = (table: string) => [`${table}_stale`, `${table}_due`, `${table}_state_created`];
      expect(plans.map((plan, index) => {
        const statement = statements[index];
        if (statement === undefined) return `unexpected: ${plan.join(', ')}`;
        if (statement.large) return plan.join(', ');
        return plan.length === 1 && stateIndexes(statement.table).includes(plan[0] ?? '') ? `${statement.table}: an index on its state` : plan.join(', ');
      })).toEqual(statements.map(({ table, large }) => (large ? `${table}_stale` : `${table}: an index on its state`)));
      // Run again and again on one connection of the store's own pool, none is a prepared
      // statement there: each is planned with its values. Prepared, PostgreSQL gave the period's
      // read after five runs one plan for any values (4 of 9 here), which walked the created_at
      // index backwards.
      for (let run = 0; run < 8; run += 1) {
        const found = await visited(database);
        expect([found.transfers.length, found.payments.length]).toEqual([1_000 + expected.transfers.length, 1_000 + expected.payments.length]);
      }
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements where statement like '%"updated_at" >= $%'`.execute(db);
      expect(prepared.rows).toEqual([]);
      await sql`delete from inbound_transfers`.execute(db);
      expect(await pagedThroughTies(database, db)).toEqual({ ids: ['t-0', 't-1', 't-2', 't-3', 't-4', 't-5', 't-6', 't-8'], pages: [2, 2, 2, 1, 1] });
    } finally {
      await database.close();
    }
  });
});

describe('a bulk identifier job\'s queries', () => {
  const migrations = [...identifierMigrations, ...identifierJobMigrations, ...auditMigrations];

  it('go through the pending lines, or by job, state and key, on SQLite; the progress through the lines\' key', async () => {
    const path = await migratedSqlite(migrations);
    const job = new BetterSqlite3(path);
    job.prepare(`insert into identifier_jobs (job_id, action, total, state, created_at, updated_at) values ('job-1', 'register', 2, 'RUNNING', '2026-11-27T06:00:00.000Z', '2026-11-27T06:00:00.000Z')`).run();
    job.close();
    const now = () => new Date('2026-11-27T06:00:00.000Z');
    const plans = await sqlitePlans(path, async (reader) => {
      // claimJob takes its rows in a transaction; on the stand-in, one of its own connection.
      const database = { ...reader, transaction: (work: (trx: unknown) => Promise<unknown>) => reader.reader().transaction().execute(work) } as SqlDatabase;
      const store = new IdentifierStore(database, now);
      const jobs = new IdentifierJobs(database, {} as IdentifierRegistration, store, now, {} as Logger, 60_000);
      expect(await jobs.pendingLines('job-1', 500)).toEqual([]);
      expect(await store.claimJob('job-1', 100, 60_000)).toEqual([]);
      expect(await store.waitingInJob('job-1')).toBe(0);
      expect(await jobs.view('job-1')).toEqual({ jobId: 'job-1', action: 'register', state: 'RUNNING', total: 2, processed: 0, outcomes: {} });
    });
    // (The claim's begin and commit have no plan.)
    expect(plans.filter((plan) => plan.length > 0)).toEqual([
      // A pass's pages each start after the last one's line: through the index, not past the lines done.
      ['SEARCH identifier_job_lines USING INDEX identifier_job_lines_pending (job_id=? AND line>?)'],
      // A claim of a job's identifiers, one statement per state: the first of them in key order
      // straight from the index (no sort), each then found by the whole index key and leased.
      ...['REQUESTED', 'OPTING_OUT'].map(() => [
        'SEARCH identifier_registry USING INDEX identifier_registry_job_state (job_id=? AND state=? AND id_type=? AND id_value=? AND id_sub_value=?)',
        'LIST SUBQUERY 2',
        'SEARCH identifier_registry USING INDEX identifier_registry_job_state (job_id=? AND state=?)',
      ]),
      ['SEARCH identifier_registry USING COVERING INDEX identifier_registry_job_state (job_id=? AND state=?)'],
      ['SEARCH identifier_jobs USING INDEX sqlite_autoindex_identifier_jobs_1 (job_id=?)'],
      // The progress: every line, through the key, with its identifier (an index of all the lines
      // by outcome made SQLite take this one through it instead, a third slower).
      [
        'SEARCH l USING INDEX sqlite_autoindex_identifier_job_lines_1 (job_id=?)',
        'SEARCH r USING INDEX sqlite_autoindex_identifier_registry_1 (id_type=? AND id_value=? AND id_sub_value=?) LEFT-JOIN',
        'USE TEMP B-TREE FOR GROUP BY',
      ],
    ]);
  });

  it('have the same indexes on PostgreSQL, the index on job_id alone gone', async () => {
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate(migrations);
      const indexes = await sql<{ indexdef: string }>`
        select indexdef from pg_indexes where tablename in ('identifier_registry', 'identifier_job_lines') order by indexname`.execute(database.reader<AnySchema>());
      expect(indexes.rows.map((row) => row.indexdef)).toEqual([
        "CREATE INDEX identifier_job_lines_pending ON public.identifier_job_lines USING btree (job_id, line) WHERE ((outcome)::text = 'PENDING'::text)",
        'CREATE UNIQUE INDEX identifier_job_lines_pk ON public.identifier_job_lines USING btree (job_id, line)',
        'CREATE INDEX identifier_registry_due ON public.identifier_registry USING btree (state, next_attempt_at)',
        'CREATE INDEX identifier_registry_job_state ON public.identifier_registry USING btree (job_id, state, id_type, id_value, id_sub_value)',
        'CREATE UNIQUE INDEX identifier_registry_pk ON public.identifier_registry USING btree (id_type, id_value, id_sub_value)',
      ]);
    } finally {
      await database.close();
    }
  });
});

describe('the identifier recovery pass\'s claim', () => {
  it('takes each state\'s oldest due through (state, next_attempt_at), stopping at the batch, then leases each state\'s share by key, on SQLite', async () => {
    const path = await migratedSqlite([...identifierMigrations, ...auditMigrations]);
    const db = new BetterSqlite3(path);
    const now = '2026-11-27T06:00:00.000Z';
    for (const [index, state] of ['REQUESTED', 'OPTING_OUT', 'REQUESTED'].entries()) {
      db.prepare(`insert into identifier_registry (id_type, id_value, id_sub_value, currency, state, attempts, next_attempt_at, lease_until, created_at, updated_at, audit_seq)
        values ('MSISDN', ?, '', 'ZMW', ?, 1, ?, ?, ?, ?, 1)`).run(`26097100000${index}`, state, now, now, now, now);
    }
    db.close();
    const plans = await sqlitePlans(path, async (reader) => {
      const database = { ...reader, transaction: (work: (trx: unknown) => Promise<unknown>) => reader.reader().transaction().execute(work) } as SqlDatabase;
      const store = new IdentifierStore(database, () => new Date(now));
      expect((await store.claimDue(10_000, 60_000)).map((claimed) => claimed.idValue)).toEqual(['260971000000', '260971000001', '260971000002']);
    });
    // Sorted, each, only among those due at the same instant (the key's three terms), so the search
    // stops after the batch, where before every due identifier of both states was sorted.
    const oldest = ['SEARCH identifier_registry USING INDEX identifier_registry_due (state=? AND next_attempt_at<?)', 'USE TEMP B-TREE FOR LAST 3 TERMS OF ORDER BY'];
    const lease = ['SEARCH identifier_registry USING INDEX sqlite_autoindex_identifier_registry_1 (id_type=? AND id_value=? AND id_sub_value=?)', 'LIST SUBQUERY 2', ...oldest];
    expect(plans.filter((plan) => plan.length > 0)).toEqual([oldest, oldest, lease, lease]);
  });
});

describe('the identifier reconciliation\'s pages of the registry', () => {
  const keys = [
    ['ACCOUNT_ID', '0001', ''],
    ['MSISDN', '260971000001', ''],
    ['MSISDN', '260971000001', 'savings'],
    ['MSISDN', '260971000002', ''],
    ['MSISDN', '26097100001', ''],
  ] as const;
  const states = ['REQUESTED', 'REGISTERED', 'FAILED', 'OPTING_OUT', 'DEREGISTERED'];
  const now = '2026-11-27T06:00:00.000Z';
  const row = ([idType, idValue, idSubValue]: readonly [string, string, string], index: number) => ({
    id_type: idType, id_value: idValue, id_sub_value: idSubValue, currency: 'ZMW', state: states[index % states.length] as string, attempts: 0,
    next_attempt_at: now, lease_until: now, created_at: now, updated_at: now, audit_seq: 1,
  });
  /** Every page of two, as [type, value, sub-value] lists. */
  async function pages(store: IdentifierStore): Promise<string[][][]> {
    const all: string[][][] = [];
    for (let after: IdentifierKey | undefined; ; ) {
      const page = await store.inKeyOrder(2, after);
      if (page.length === 0) return all;
      all.push(page.map((record) => [record.idType, record.idValue, record.idSubValue ?? '']));
      after = page[page.length - 1];
    }
  }
  const expected = [
    [['ACCOUNT_ID', '0001', ''], ['MSISDN', '260971000001', '']],
    [['MSISDN', '260971000001', 'savings'], ['MSISDN', '260971000002', '']],
    [['MSISDN', '26097100001', '']],
  ];

  it('go through the key, each page starting after the last one\'s key and stopping after its own, every identifier once, on SQLite', async () => {
    const path = await migratedSqlite([...identifierMigrations, ...auditMigrations]);
    const db = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) });
    for (const [index, key] of [...keys].reverse().entries()) await db.insertInto('identifier_registry').values(row(key, index)).execute();
    await db.destroy();
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await pages(new IdentifierStore(reader, () => new Date(now)))).toEqual(expected);
    });
    const after = 'SEARCH identifier_registry USING INDEX sqlite_autoindex_identifier_registry_1 ((id_type,id_value,id_sub_value)>(?,?,?))';
    expect(plans).toEqual([['SCAN identifier_registry USING INDEX sqlite_autoindex_identifier_registry_1'], [after], [after], [after]]);
  });

  it('go through the key on PostgreSQL too, every identifier once', async () => {
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate([...identifierMigrations, ...auditMigrations]);
      const db = database.reader<AnySchema>() as Kysely<AnySchema>;
      for (const [index, key] of [...keys].reverse().entries()) await db.insertInto('identifier_registry').values(row(key, index)).execute();
      expect(await pages(new IdentifierStore(database, () => new Date(now)))).toEqual(expected);
      await sql`insert into identifier_registry (id_type, id_value, id_sub_value, currency, state, attempts, next_attempt_at, lease_until, created_at, updated_at, audit_seq)
        select 'MSISDN', '2609' || lpad(g::text, 8, '0'), '', 'ZMW', 'REGISTERED', 1, ${now}, ${now}, ${now}, ${now}, 1 from generate_series(1, 50000) g`.execute(db);
      await sql`analyze identifier_registry`.execute(db);
      const plans = await postgresAccessPaths(postgres.url, async (reader) => {
        expect(await new IdentifierStore(reader, () => new Date(now)).inKeyOrder(500, { idType: 'MSISDN', idValue: '260900025000' })).toHaveLength(500);
      });
      expect(plans).toEqual([['identifier_registry_pk']]);
    } finally {
      await database.close();
    }
  });
});

describe('indexes built by hand before an upgrade (docs/deployment.md, Upgrading)', () => {
  it('are kept by the migrations that would build them, on PostgreSQL', async () => {
    const all = [...connectorMigrations, ...outgoingMigrations, ...identifierMigrations, ...identifierJobMigrations, ...auditMigrations];
    const building = ['audit-002-subject-at', 'connector-004-created-at', 'connector-005-attention', 'connector-007-state-created', 'outgoing-006-created-at', 'outgoing-008-state-created', 'outgoing-009-refund-reference-index', 'identifiers-006-registry-job-state', 'identifiers-007-job-lines-pending'];
    expect(all.filter((migration) => building.includes(migration.id)).map((migration) => migration.id).sort()).toEqual([...building].sort());
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate(all.filter((migration) => !building.includes(migration.id)));
      // Built beforehand, outside a transaction, as the guide advises for a large table.
      for (const statement of [
        'create index concurrently audit_events_subject_at on audit_events (subject, at)',
        'create index concurrently inbound_transfers_created on inbound_transfers (created_at)',
        'create index concurrently inbound_transfers_attention on inbound_transfers (needs_attention, created_at)',
        'create index concurrently inbound_transfers_state_created on inbound_transfers (state, created_at)',
        'create index concurrently outgoing_payments_created on outgoing_payments (created_at)',
        'create index concurrently outgoing_payments_state_created on outgoing_payments (state, created_at)',
        'create index concurrently outgoing_payments_attention_created on outgoing_payments (needs_attention, created_at)',
        'create index concurrently outgoing_payments_refund_reference on outgoing_payments (refund_reference)',
        'create index concurrently identifier_registry_job_state on identifier_registry (job_id, state, id_type, id_value, id_sub_value)',
        "create index concurrently identifier_job_lines_pending on identifier_job_lines (job_id, line) where outcome = 'PENDING'",
        'drop index concurrently identifier_registry_job',
      ]) {
        await sql.raw(statement).execute(database.reader());
      }
      await database.migrate(all);
      const applied = await sql<{ id: string }>`select id from schema_migrations where id in (${sql.join(building)}) order by id`.execute(database.reader<AnySchema>());
      expect(applied.rows.map((row) => row.id)).toEqual([...building].sort());
    } finally {
      await database.close();
    }
  });
});
