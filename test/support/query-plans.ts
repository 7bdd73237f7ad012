import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { AnySchema, SqlDatabase } from '../../src/adapters/store/sql-database.js';

/**
 * SQLite's plan (EXPLAIN QUERY PLAN, one list of details per statement) for each statement that
 * `run` sends through the database it is given: a stand-in whose reader is a connection of the
 * test's own to the file at `path`, so that the code under test builds its queries as it always
 * does and the test sees them as sent.
 */
export async function sqlitePlans(path: string, run: (database: SqlDatabase) => Promise<void>): Promise<string[][]> {
  const connection = new BetterSqlite3(path);
  const sent: Array<{ sql: string; parameters: readonly unknown[] }> = [];
  const db = new Kysely<AnySchema>({
    dialect: new SqliteDialect({ database: connection }),
    log: (event) => {
      if (event.level === 'query') sent.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  try {
    await run({ dialect: 'sqlite', reader: () => db } as unknown as SqlDatabase);
    return sent.map((query) =>
      connection
        .prepare(`explain query plan ${query.sql}`)
        .all(...query.parameters)
        .map((row) => (row as { detail: string }).detail),
    );
  } finally {
    await db.destroy();
  }
}
