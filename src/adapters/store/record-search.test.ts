import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { sqlitePlans } from '../../../test/support/query-plans.js';
import { connectorMigrations } from './connector-migrations.js';
import { SqlInboundStore } from './inbound-store.js';
import { outgoingMigrations } from './outgoing-migrations.js';
import { SqlOutgoingStore } from './outgoing-store.js';
import { PostgresDatabase } from './postgres-database.js';
import { SqliteDatabase } from './sqlite-database.js';

/** The operations console's list of records, newest first, with no filter: its first view. */
describe('the latest records, newest first', () => {
  let directory: string | undefined;
  let postgres: TestDatabase | undefined;
  afterEach(async () => {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    directory = undefined;
    await postgres?.drop();
    postgres = undefined;
  });

  it('are read backwards through a created_at index on SQLite, not by scanning and sorting the whole table', async () => {
    directory = mkdtempSync(join(tmpdir(), 'cc-search-'));
    const path = join(directory, 'connector.db');
    const database = new SqliteDatabase(path);
    await database.migrate([...connectorMigrations, ...outgoingMigrations]);
    await database.close();
    const plans = await sqlitePlans(path, async (reader) => {
      expect(await new SqlInboundStore(reader).searchTransfers({ limit: 200 })).toEqual([]);
      expect(await new SqlOutgoingStore(reader).search({ limit: 200 })).toEqual([]);
    });
    expect(plans).toEqual([['SCAN inbound_transfers USING INDEX inbound_transfers_created'], ['SCAN outgoing_payments USING INDEX outgoing_payments_created']]);
  });

  it('have the same indexes on PostgreSQL', async () => {
    postgres = await createTestDatabase();
    const database = new PostgresDatabase({ url: postgres.url, poolMax: 1 });
    try {
      await database.migrate([...connectorMigrations, ...outgoingMigrations]);
      const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where indexname in ('inbound_transfers_created', 'outgoing_payments_created') order by indexname`.execute(database.reader());
      expect(indexes.rows.map((row) => row.indexdef)).toEqual([
        'CREATE INDEX inbound_transfers_created ON public.inbound_transfers USING btree (created_at)',
        'CREATE INDEX outgoing_payments_created ON public.outgoing_payments USING btree (created_at)',
      ]);
    } finally {
      await database.close();
    }
  });
});
