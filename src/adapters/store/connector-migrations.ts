import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';
import { auditColumnsMigration, auditSeqFromTrailMigration } from './audit-trail.js';
import type { AnySchema, Migration } from './sql-database.js';
import { INCOMING_TRANSFERS, stateCountsMigration } from './state-counts.js';

/**
 * The connector's tables. Amounts are decimal strings (they can exceed 64-bit integers in minor
 * units); timestamps are ISO 8601 UTC strings with milliseconds, which sort as text.
 */
export const connectorMigrations: readonly Migration[] = [
  {
    id: 'connector-001-inbound',
    async up(db) {
      await db.schema
        .createTable('quotes')
        .addColumn('quote_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('transaction_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('amount_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('transfer_amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('payee_receive_amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('fee', 'varchar(40)', (c) => c.notNull())
        .addColumn('payee_id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('payee_id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('payee_id_sub_value', 'varchar(128)')
        .addColumn('expiration', 'varchar(30)', (c) => c.notNull())
        .addColumn('payer_keys', 'text', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('inbound_transfers')
        .addColumn('transfer_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('quote_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('amount_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('transaction_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('transfer_amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('payee_receive_amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('payer_id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('payer_id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('payee_id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('payee_id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('payee_id_sub_value', 'varchar(128)')
        .addColumn('payee_account_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('completed_timestamp', 'varchar(30)')
        .addColumn('notified_state', 'varchar(32)')
        .addColumn('error_name', 'varchar(64)')
        .addColumn('error_message', 'varchar(256)')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'varchar(30)')
        .addColumn('last_error', 'varchar(256)')
        .addColumn('needs_attention', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lease_until', 'varchar(30)')
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('inbound_transfers_due').on('inbound_transfers').columns(['state', 'next_attempt_at']).execute();
      await db.schema.createIndex('inbound_transfers_stale').on('inbound_transfers').columns(['state', 'updated_at']).execute();
    },
  },
  // The audit trail's sequence number and previous state, kept on the row (audit-trail.ts).
  auditColumnsMigration('connector-002-audit-columns', 'inbound_transfers'),
  auditSeqFromTrailMigration('connector-003-audit-seq-from-trail', 'inbound_transfers', 'incoming_transfer', 'transfer_id'),
  {
    // The operations console lists the latest records first (searchTransfers orders by created_at):
    // without it SQLite scanned and sorted the whole table, 2.3 s on 1.5 million transfers with
    // the event loop blocked.
    id: 'connector-004-created-at',
    async up(db) {
      await db.schema.createIndex('inbound_transfers_created').ifNotExists().on('inbound_transfers').columns(['created_at']).execute();
    },
  },
  {
    // The transfers flagged for attention: the metrics' count of them, and the console's filter
    // on attention, alone or with a state (the flagged few read newest first, the state checked
    // on each). Without it both read the whole table (the count 230 ms on 1.5 million transfers
    // on SQLite with the file in the page cache, 690 ms without, the event loop blocked at every
    // scrape). Neither column changes when a transfer changes state, so its entries stay put.
    id: 'connector-005-attention',
    async up(db) {
      await db.schema.createIndex('inbound_transfers_attention').ifNotExists().on('inbound_transfers').columns(['needs_attention', 'created_at']).execute();
    },
  },
  // The transfers in each state, kept for the metrics on SQLite (state-counts.ts).
  stateCountsMigration('connector-006-state-counts', INCOMING_TRANSFERS),
  {
    // The console's list filtered on a state, newest first. Without it SQLite took the state's
    // rows through the recovery index (state, updated_at) and sorted them all: 2.2–2.8 s for
    // COMMITTED among 1.5 million transfers, the event loop blocked (a reviewer's measurement).
    id: 'connector-007-state-created',
    async up(db) {
      await db.schema.createIndex('inbound_transfers_state_created').ifNotExists().on('inbound_transfers').columns(['state', 'created_at']).execute();
    },
  },
  {
    // One quote, one transfer that holds or moved money: a second transferId for a quote whose
    // transfer is not ABORTED or REJECTED (the two ends where nothing moved or stays held; see
    // src/domain/inbound-transfer.ts, no state leaves them) breaks this index, and the insert
    // (ON CONFLICT DO NOTHING) does nothing. Before it, the switch connector with
    // ALLOW_DIFFERENT_TRANSFER_TRANSACTION_ID or ALLOW_TRANSFER_WITHOUT_QUOTE could have the payee
    // credited once per transferId for one quote.
    id: 'connector-008-quote-held-once',
    up: quoteHeldOnceIndex,
  },
];

/**
 * The index of migration 008. A database written before it may hold quotes already used by
 * more than one such transfer: the oldest of each (by created_at, then transfer_id) is indexed and
 * keeps the quote; the later ones are left out of the index by their transferIds, named in its
 * predicate, so that the index can be built and the quote stays taken. Those transfers are left
 * as they are (the connector changes no record behind the audit trail's back); the README tells
 * how to find them.
 */
async function quoteHeldOnceIndex(db: Kysely<AnySchema>): Promise<void> {
  const holds = (alias: string): RawBuilder<unknown> => sql`${sql.ref(`${alias}.state`)} not in ('ABORTED', 'REJECTED')`;
  // On PostgreSQL, replicas of the previous release may still be writing: the table is held
  // against writes from the read below to the index's end, so that no second transfer of a quote
  // can slip in between (the build would fail on it). SQLite's migration holds the write lock.
  if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`lock table inbound_transfers in share mode`.execute(db);
  // Grouped, not a correlated subquery: quote_id has no index of its own, and a self-join per
  // row would read the table once per transfer on SQLite (quadratic on a large store).
  const sharing = await sql<{ transfer_id: string; quote_id: string }>`
    select transfer_id, quote_id from inbound_transfers
    where ${holds('inbound_transfers')} and quote_id in (
      select quote_id from inbound_transfers where ${holds('inbound_transfers')} group by quote_id having count(*) > 1)
    order by quote_id, created_at, transfer_id`.execute(db);
  const ids = sharing.rows.filter((row, index) => index > 0 && sharing.rows[index - 1]?.quote_id === row.quote_id).map((row) => row.transfer_id);
  const leftOut = ids.length === 0 ? sql`` : sql` and transfer_id not in (${sql.join(ids.map((id) => sql.lit(id)))})`;
  await sql`create unique index inbound_transfers_quote_held on inbound_transfers (quote_id) where state not in ('ABORTED', 'REJECTED')${leftOut}`.execute(db);
}
