import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { AnySchema, SqlDatabase } from '../../src/adapters/store/sql-database.js';

/**
 * SQLite's plan (EXPLAIN QUERY PLAN, one list of details per statement) for each statement that
 * `run` sends through the database it is given: a stand-in whose reader (and snapshot) is a
 * connection of the test's own to the file at `path`, so that the code under test builds its queries as it always
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
    await run({ dialect: 'sqlite', reader: () => db, quickReader: () => db, listReader: () => db, snapshot: (work: (db: Kysely<AnySchema>) => Promise<unknown>) => work(db) } as unknown as SqlDatabase);
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

/**
 * How PostgreSQL's plan reads each statement that `run` sends through the database it is given (a
 * stand-in whose reader is a pool of the test's own on `url`): the indexes it searches, by name
 * (an index scan, forwards or backwards, or a bitmap's), and `<table> read whole` for a
 * sequential scan, in the plan's order. Whether the planner takes an index row by row or through
 * a bitmap varies with the statistics ANALYZE samples; which index it takes is what is asserted.
 */
export async function postgresAccessPaths(url: string, run: (database: SqlDatabase) => Promise<void>): Promise<string[][]> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const sent: Array<{ sql: string; parameters: readonly unknown[] }> = [];
  const db = new Kysely<AnySchema>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') sent.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  try {
    await run({ dialect: 'postgres', reader: () => db, listReader: () => db, snapshot: (work: (db: Kysely<AnySchema>) => Promise<unknown>) => work(db) } as unknown as SqlDatabase);
    const plans: string[][] = [];
    for (const query of sent) {
      const explained = await pool.query<{ 'QUERY PLAN': string }>(`explain (costs off) ${query.sql}`, [...query.parameters]);
      plans.push(explained.rows.flatMap((row) => accessPath(row['QUERY PLAN'])));
    }
    return plans;
  } finally {
    await db.destroy();
  }
}

function accessPath(line: string): string[] {
  const whole = /Seq Scan on (\w+)/.exec(line);
  if (whole !== null) return [`${whole[1]} read whole`];
  const index = /Index (?:Only )?Scan(?: Backward)? using (\w+)/.exec(line) ?? /Bitmap Index Scan on (\w+)/.exec(line);
  return index === null ? [] : [index[1] as string];
}
