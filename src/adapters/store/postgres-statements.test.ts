import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { PostgresDatabase, type PostgresDatabaseOptions } from './postgres-database.js';
import type { AnySchema } from './sql-database.js';

/** The prepared statements of the connection that runs this (pg_prepared_statements is per session). */
async function preparedHere(db: Kysely<AnySchema>): Promise<Array<{ name: string; statement: string }>> {
  const result = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements order by name`.execute(db);
  return result.rows;
}

describe('named prepared statements on PostgreSQL', () => {
  let shared: TestDatabase | undefined;
  const opened: PostgresDatabase[] = [];

  /** One connection, so that every statement of a test runs in the same session. */
  const open = (options: Partial<PostgresDatabaseOptions> = {}): PostgresDatabase => {
    if (shared === undefined) throw new Error('the test database was not created');
    const database = new PostgresDatabase({ url: shared.url, poolMax: 1, ...options });
    opened.push(database);
    return database;
  };

  /** DDL from a session of its own, as another replica migrating the schema would run it. */
  const elsewhere = async (text: string): Promise<void> => {
    if (shared === undefined) throw new Error('the test database was not created');
    const client = new pg.Client({ connectionString: shared.url });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    shared = await createTestDatabase();
  });

  afterAll(async () => {
    for (const database of opened) await database.close();
    await shared?.drop();
  });

  it('parses a repeated statement once per connection, under one name, one round trip each time', async () => {
    const database = open();
    const db = database.reader<AnySchema>();
    const before = database.work().statements;
    for (const value of [3, 4, 5]) {
      const result = await sql<{ n: number }>`select ${value}::int as n`.execute(db);
      expect(result.rows).toEqual([{ n: value }]);
    }
    expect(database.work().statements - before).toBe(3);
    expect(await preparedHere(db)).toEqual([{ name: 'cc0_0', statement: 'select $1::int as n' }]);
  });

  it('prepares nothing when prepared statements are turned off', async () => {
    const database = open({ preparedStatements: false });
    const db = database.reader<AnySchema>();
    for (const value of [3, 4]) await sql`select ${value}::int as n`.execute(db);
    expect(await preparedHere(db)).toEqual([]);
  });

  it('names at most maxNamed texts and none with more than maxParameters parameters', async () => {
    const database = open({ statementNaming: { maxNamed: 2, maxParameters: 3 } });
    const db = database.reader<AnySchema>();
    await sql`select ${1}::int + ${2}::int + ${3}::int + ${4}::int as n`.execute(db);
    await sql`select ${1}::int as a`.execute(db);
    await sql`select ${1}::int as b`.execute(db);
    await sql`select ${1}::int as c`.execute(db);
    await sql`select ${1}::int as a`.execute(db);
    expect(await preparedHere(db)).toEqual([
      { name: 'cc0_0', statement: 'select $1::int as a' },
      { name: 'cc0_1', statement: 'select $1::int as b' },
    ]);
  });

  it('drops its statements and retries once when a column added elsewhere changes a result outside a transaction', async () => {
    await elsewhere('create table outside_t (a integer not null); insert into outside_t values (1)');
    const database = open();
    const db = database.reader<AnySchema>();
    const read = () => sql<Record<string, number>>`select * from outside_t where a = ${1}`.execute(db);
    expect((await read()).rows).toEqual([{ a: 1 }]);
    await elsewhere('alter table outside_t add column b integer not null default 7');
    const before = database.work().statements;
    expect((await read()).rows).toEqual([{ a: 1, b: 7 }]);
    // The stale attempt, DEALLOCATE ALL, the retry under a fresh name.
    expect(database.work().statements - before).toBe(3);
    expect(await preparedHere(db)).toEqual([{ name: 'cc1_0', statement: 'select * from outside_t where a = $1' }]);
  });

  it('fails the transaction that meets a stale plan, and the next transaction runs on fresh statements', async () => {
    await elsewhere('create table inside_t (a integer not null); insert into inside_t values (1)');
    const database = open();
    const db = database.reader<AnySchema>();
    const read = (on: Kysely<AnySchema>) => sql<Record<string, number>>`select * from inside_t where a = ${1}`.execute(on);
    expect((await read(db)).rows).toEqual([{ a: 1 }]);
    await elsewhere('alter table inside_t add column b integer not null default 7');
    await expect(database.transaction<AnySchema, unknown>((trx) => read(trx))).rejects.toThrow('cached plan must not change result type');
    const rows = await database.transaction<AnySchema, unknown>(async (trx) => (await read(trx)).rows);
    expect(rows).toEqual([{ a: 1, b: 7 }]);
    expect(await preparedHere(db)).toEqual([{ name: 'cc1_0', statement: 'select * from inside_t where a = $1' }]);
  });
});
