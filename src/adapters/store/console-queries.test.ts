import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { sqlitePlans } from '../../../test/support/query-plans.js';
import { AuditTrail, auditMigrations } from './audit-trail.js';
import { connectorMigrations } from './connector-migrations.js';
import { SqlInboundStore } from './inbound-store.js';
import { outgoingMigrations } from './outgoing-migrations.js';
import { SqlOutgoingStore } from './outgoing-store.js';
import { PostgresDatabase } from './postgres-database.js';
import type { Migration } from './sql-database.js';
import { SqliteDatabase } from './sqlite-database.js';

/**
 * The operations console's views are read on the event loop (on SQLite, synchronously): each of
 * its queries goes through an index that stops it after its page, not through the whole table.
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

describe('the records flagged for attention (the console\'s filter and the metrics\' count)', () => {
  it('are found through the attention indexes on SQLite, not by scanning the whole table', async () => {
    const path = await migratedSqlite([...connectorMigrations, ...outgoingMigrations]);
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new SqlInboundStore(reader).searchTransfers({ needsAttention: true, limit: 200 })).toEqual([]);
      expect(await new SqlOutgoingStore(reader).search({ needsAttention: true, limit: 200 })).toEqual([]);
    });
    expect(plans).toEqual([
      ['SEARCH inbound_transfers USING INDEX inbound_transfers_attention (needs_attention=?)'],
      ['SEARCH outgoing_payments USING INDEX outgoing_payments_attention (needs_attention=?)', 'USE TEMP B-TREE FOR ORDER BY'],
    ]);
  });

  it('have the same indexes on PostgreSQL', async () => {
    expect(await postgresIndexes([...connectorMigrations, ...outgoingMigrations], ['inbound_transfers_attention', 'outgoing_payments_attention'])).toEqual([
      'CREATE INDEX inbound_transfers_attention ON public.inbound_transfers USING btree (needs_attention, created_at)',
      'CREATE INDEX outgoing_payments_attention ON public.outgoing_payments USING btree (needs_attention, updated_at)',
    ]);
  });
});
