import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { PostgresDatabase } from '../../src/adapters/store/postgres-database.js';
import type { AnySchema, Migration, SqlDatabase } from '../../src/adapters/store/sql-database.js';
import { SqliteDatabase } from '../../src/adapters/store/sqlite-database.js';
import { createTestDatabase } from './postgres.js';

/** A database for one test file, and what removes it afterwards. */
export interface StoreTarget {
  readonly database: SqlDatabase;
  cleanup(): Promise<void>;
}

/** A SQLite file in a directory of its own. */
export async function sqliteTarget(): Promise<StoreTarget> {
  const directory = mkdtempSync(join(tmpdir(), 'cc-store-'));
  return {
    database: new SqliteDatabase(join(directory, 'connector.db')),
    async cleanup() {
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the test server (test/support/postgres.ts). */
export async function postgresTarget(): Promise<StoreTarget> {
  const testDatabase = await createTestDatabase();
  return {
    database: new PostgresDatabase({ url: testDatabase.url, poolMax: 4 }),
    cleanup: () => testDatabase.drop(),
  };
}

/** Both stores, by name, for `describe` per store. */
export const STORE_TARGETS: ReadonlyArray<readonly [string, () => Promise<StoreTarget>]> = [
  ['SQLite', sqliteTarget],
  ['PostgreSQL', postgresTarget],
];

/**
 * Inside a `describe`: opens and migrates the target before its tests, empties `tables` before
 * each test, closes and removes it after. Answers the database of the test running.
 */
export function useStoreTarget(open: () => Promise<StoreTarget>, migrations: readonly Migration[], tables: readonly string[]): () => SqlDatabase {
  let target: StoreTarget | undefined;
  beforeAll(async () => {
    target = await open();
    await target.database.migrate(migrations);
  });
  afterAll(async () => {
    if (target === undefined) return;
    await target.database.close();
    await target.cleanup();
  });
  beforeEach(async () => {
    await target?.database.transaction<AnySchema, void>(async (trx) => {
      for (const table of tables) await trx.deleteFrom(table).execute();
    });
  });
  return () => {
    if (target === undefined) throw new Error('the database was not opened');
    return target.database;
  };
}
