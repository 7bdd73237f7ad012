import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { PostgresDatabase, type PostgresDatabaseOptions } from './postgres-database.js';
import { isStalePlan } from './postgres-statements.js';
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

  it("knows a stale plan by the server's function name, whatever the language of its message, and no other 0A000 for one", async () => {
    if (shared === undefined) throw new Error('the test database was not created');
    const client = new pg.Client({ connectionString: shared.url });
    await client.connect();
    const failure = async (run: () => Promise<unknown>): Promise<pg.DatabaseError> => {
      try {
        await run();
      } catch (error) {
        if (error instanceof pg.DatabaseError) return error;
        throw error;
      }
      throw new Error('the statement did not fail');
    };
    try {
      await client.query('create table plans (id integer)');
      const read = { name: 'read plans', text: 'select * from plans where id = $1', values: [1] };
      await client.query(read);
      await client.query('alter table plans add column note text');
      const stale = await failure(() => client.query(read));
      expect([stale.code, stale.routine, stale.message]).toStrictEqual(['0A000', 'RevalidateCachedQuery', 'cached plan must not change result type']);
      expect(isStalePlan(stale)).toBe(true);
      // The same error from a server whose lc_messages is French: only the message differs.
      const french = Object.assign(new pg.DatabaseError('le plan en cache ne doit pas modifier le type de résultat', 100, 'error'), {
        code: stale.code,
        routine: stale.routine,
        severity: stale.severity,
      });
      expect(isStalePlan(french)).toBe(true);
      // Another feature_not_supported, from the parser: not a stale plan.
      const other = await failure(() => client.query('select count(*) from plans for update'));
      expect([other.code, other.routine]).toStrictEqual(['0A000', 'CheckSelectLocking']);
      expect(isStalePlan(other)).toBe(false);
    } finally {
      await client.end();
    }
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
