import { sql } from 'kysely';
import { refundReference } from '../../domain/outgoing-references.js';
import { auditColumnsMigration, auditSeqFromTrailMigration } from './audit-trail.js';
import { backfillColumn } from './backfill.js';
import type { Migration } from './sql-database.js';
import { OUTGOING_PAYMENTS, stateCountsMigration } from './state-counts.js';

/**
 * The outgoing payments table. homeTransactionId is the key the channel gives; transferId is
 * unique once the switch has assigned it. Amounts are decimal strings, timestamps ISO 8601 UTC
 * with milliseconds (they sort as text), as in connector-migrations.ts.
 */
export const outgoingMigrations: readonly Migration[] = [
  {
    id: 'outgoing-001-payments',
    async up(db) {
      await db.schema
        .createTable('outgoing_payments')
        .addColumn('home_transaction_id', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('transfer_id', 'varchar(64)', (c) => c.unique())
        .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('kind', 'varchar(32)', (c) => c.notNull())
        .addColumn('amount_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('flow', 'varchar(32)', (c) => c.notNull())
        .addColumn('state', 'varchar(32)', (c) => c.notNull())
        .addColumn('payer_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('payee_id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('payee_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('send_amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('send_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('receive_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('debit_amount', 'varchar(40)')
        .addColumn('terms', 'text')
        .addColumn('quote_expiration', 'varchar(30)')
        .addColumn('switch_state', 'varchar(64)')
        .addColumn('institution_reference', 'varchar(128)')
        .addColumn('callback_code', 'varchar(32)')
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
      await db.schema.createIndex('outgoing_payments_due').on('outgoing_payments').columns(['state', 'next_attempt_at']).execute();
      await db.schema.createIndex('outgoing_payments_stale').on('outgoing_payments').columns(['state', 'updated_at']).execute();
      await db.schema.createIndex('outgoing_payments_attention').on('outgoing_payments').columns(['needs_attention', 'updated_at']).execute();
    },
  },
  auditColumnsMigration('outgoing-002-audit-columns', 'outgoing_payments'),
  {
    // The refund's own reference at the institution, kept once the transferId is known, so that
    // the audit trail and reconciliation can name it in SQL.
    id: 'outgoing-003-refund-reference',
    async up(db) {
      await db.schema.alterTable('outgoing_payments').addColumn('refund_reference', 'varchar(64)').execute();
    },
  },
  auditSeqFromTrailMigration('outgoing-004-audit-seq-from-trail', 'outgoing_payments', 'outgoing_payment', 'home_transaction_id'),
  {
    // A payment whose transferId was stored before outgoing-003 (or by a replica of the release
    // before it) gets its refund's reference too, so that a refund it comes to is audited under
    // that reference, as a payment stored since is.
    id: 'outgoing-005-refund-reference-from-transfer',
    async up(db) {
      await backfillColumn(db, {
        table: 'outgoing_payments',
        key: ['home_transaction_id'],
        read: ['transfer_id'],
        where: sql`transfer_id is not null and refund_reference is null`,
        column: 'refund_reference',
        type: 'text',
        valueOf: (row) => refundReference(String(row['transfer_id'])),
      });
    },
  },
  {
    // The operations console lists the latest payments first (search orders by created_at).
    id: 'outgoing-006-created-at',
    async up(db) {
      await db.schema.createIndex('outgoing_payments_created').ifNotExists().on('outgoing_payments').columns(['created_at']).execute();
    },
  },
  // The payments in each state, kept for the metrics on SQLite (state-counts.ts).
  stateCountsMigration('outgoing-007-state-counts', OUTGOING_PAYMENTS),
  {
    // The console's list filtered on a state, newest first (as connector-007-state-created: 2.4–2.9 s
    // for COMPLETED among 1.5 million payments on SQLite without it), or on attention, alone or
    // with a state (as connector-005-attention: with only (needs_attention, updated_at), SQLite
    // would take a state's rows through the state's index and check each for the flag).
    id: 'outgoing-008-state-created',
    async up(db) {
      await db.schema.createIndex('outgoing_payments_state_created').ifNotExists().on('outgoing_payments').columns(['state', 'created_at']).execute();
      await db.schema.createIndex('outgoing_payments_attention_created').ifNotExists().on('outgoing_payments').columns(['needs_attention', 'created_at']).execute();
    },
  },
  {
    // Reconciliation finds the payment a refund belongs to by the refund's reference, when the
    // refund was booked on another day than the one its payment last changed: without the index,
    // each such movement read every payment.
    id: 'outgoing-009-refund-reference-index',
    async up(db) {
      await db.schema.createIndex('outgoing_payments_refund_reference').ifNotExists().on('outgoing_payments').columns(['refund_reference']).execute();
    },
  },
];
