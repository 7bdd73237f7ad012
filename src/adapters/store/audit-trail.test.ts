import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { sqlitePlans } from '../../../test/support/query-plans.js';
import { AuditTrail, auditMigrations } from './audit-trail.js';
import { PostgresDatabase } from './postgres-database.js';
import { SqliteDatabase } from './sqlite-database.js';

describe('the audit trail\'s recent entries of one subject', () => {
  let directory: string | undefined;
  let postgres: TestDatabase | undefined;
  afterEach(async () => {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    directory = undefined;
    await postgres?.drop();
    postgres = undefined;
  });

  it('are found through the (subject, at) index on SQLite, not by walking the subject through the key and sorting it', async () => {
    directory = mkdtempSync(join(tmpdir(), 'cc-audit-'));
    const path = join(directory, 'connector.db');
    const database = new SqliteDatabase(path);
    await database.migrate(auditMigrations);
    await database.close();
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new AuditTrail(reader).recent({ subject: 'incoming_transfer', since: '2026-11-20T00:00:00.000Z', limit: 200 })).toEqual([]);
    });
    expect(plans).toEqual([['SEARCH audit_events USING INDEX audit_events_subject_at (subject=? AND at>?)', 'USE TEMP B-TREE FOR LAST TERM OF ORDER BY']]);
  });

  it('have the same index on PostgreSQL', async () => {
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate(auditMigrations);
      const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where tablename = 'audit_events' order by indexname`.execute(database.reader());
      expect(indexes.rows.map((row) => row.indexdef)).toEqual([
        'CREATE INDEX audit_events_at ON public.audit_events USING btree (at)',
        'CREATE UNIQUE INDEX audit_events_pk ON public.audit_events USING btree (subject, subject_id, seq)',
        'CREATE INDEX audit_events_subject_at ON public.audit_events USING btree (subject, at)',
      ]);
    } finally {
      await database.close();
    }
  });
});
