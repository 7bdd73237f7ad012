import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { startTcpRelay, type TcpRelay } from '../../../test/support/tcp-relay.js';
import { PostgresDatabase, type PostgresDatabaseOptions } from './postgres-database.js';
import type { AnySchema, DatabaseWork } from './sql-database.js';

/**
 * Commit groups and read groups on a real PostgreSQL server. A group forms only while a
 * statement is in flight, so each test first sends one that waits (on a row locked by a session
 * of the test's own, or in pg_sleep), queues the statements of the group behind it, then lets
 * the first one go.
 */
describe('statement groups on PostgreSQL', () => {
  let shared: TestDatabase | undefined;
  const opened: PostgresDatabase[] = [];
  const sessions: pg.Client[] = [];
  const relays: TcpRelay[] = [];

  const open = (options: Partial<PostgresDatabaseOptions> = {}): PostgresDatabase => {
    if (shared === undefined) throw new Error('the test database was not created');
    const database = new PostgresDatabase({ url: shared.url, poolMax: 4, ...options });
    opened.push(database);
    return database;
  };

  /** A session of the test's own, as another process would hold one. */
  const session = async (): Promise<pg.Client> => {
    if (shared === undefined) throw new Error('the test database was not created');
    const client = new pg.Client({ connectionString: shared.url });
    await client.connect();
    sessions.push(client);
    return client;
  };

  /**
   * Waits until one backend of this database runs a statement starting with `prefix`: waiting
   * on a lock, or active at all.
   */
  const backend = async (prefix: string, doing: 'waiting on a lock' | 'running'): Promise<void> => {
    const observer = await session();
    const condition = doing === 'waiting on a lock' ? `wait_event_type = 'Lock'` : `state = 'active'`;
    for (let attempt = 0; attempt < 500; attempt += 1) {
      const result = await observer.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and ${condition} and query like $1`,
        [`${prefix}%`],
      );
      if (result.rows[0]?.n === 1) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    throw new Error(`no statement "${prefix}..." came to be ${doing}`);
  };
  const waitingOnLock = (prefix: string) => backend(prefix, 'waiting on a lock');
  const waitingFor = (prefix: string) => backend(prefix, 'running');

  /** Gives queued statements time to reach the groups (no I/O happens on their way there). */
  const queued = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

  /**
   * Locks row `id` from a session of its own, sends the first statement (which waits on it), and
   * answers a function that releases the lock and the first statement's answer.
   */
  const firstInFlight = async (database: PostgresDatabase, id: number) => {
    const holder = await session();
    await holder.query('begin');
    await holder.query('select id from t where id = $1 for update', [id]);
    const first = database.autocommit<AnySchema, unknown>(async (db) => (await sql`update t set v = 'first' where id = ${id} returning id, v`.execute(db)).rows);
    await waitingOnLock(`update t set v = 'first'`);
    return { first, release: async () => void (await holder.query('commit')) };
  };

  /** Appends '+g' to row `id`'s text, as one autocommitted statement. */
  const append = (database: PostgresDatabase, id: number) =>
    database.autocommit<AnySchema, unknown>(async (db) => (await sql`update t set v = v || '+g' where id = ${id} returning id, v`.execute(db)).rows);

  const insert = (database: PostgresDatabase, id: number, v: string) =>
    database.autocommit<AnySchema, unknown>(async (db) => (await sql`insert into t (id, v) values (${id}, ${v}) returning id, v`.execute(db)).rows);

  /** The transaction id that wrote each row: rows committed by one transaction share it. */
  const writers = async (database: PostgresDatabase, ids: number[]): Promise<string[]> => {
    const result = await sql<{ xmin: string }>`select xmin::text as xmin from t where id in (${sql.join(ids)}) order by id`.execute(database.reader<AnySchema>());
    return result.rows.map((row) => row.xmin);
  };

  const delta = (before: DatabaseWork, after: DatabaseWork) => ({
    statements: after.statements - before.statements,
    roundTrips: after.roundTrips - before.roundTrips,
    transactions: after.transactions - before.transactions,
    commits: after.commits - before.commits,
  });

  beforeAll(async () => {
    shared = await createTestDatabase();
    const setup = await session();
    await setup.query('create table t (id integer primary key, v text not null)');
    await setup.query(`insert into t (id, v) values (0, 'zero'), (21, 'a'), (22, 'b')`);
  });

  afterAll(async () => {
    for (const client of sessions) await client.end().catch(() => undefined);
    for (const database of opened) await database.close();
    for (const relay of relays) await relay.close();
    await shared?.drop();
  });

  it('commits the statements that arrived while one was in flight as one transaction: one round trip, one commit', async () => {
    const database = open();
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    const group = [1, 2, 3, 4, 5].map((id) => insert(database, id, `row ${id}`));
    await queued();
    await release();
    expect(await first).toEqual([{ id: 0, v: 'first' }]);
    expect(await Promise.all(group)).toEqual([1, 2, 3, 4, 5].map((id) => [{ id, v: `row ${id}` }]));
    // The first alone; then BEGIN, five inserts and COMMIT written together.
    expect(delta(before, database.work())).toEqual({ statements: 8, roundTrips: 2, transactions: 6, commits: 2 });
    const [zero, ...five] = await writers(database, [0, 1, 2, 3, 4, 5]);
    expect(new Set(five).size).toBe(1);
    expect(five[0]).not.toBe(zero);
  });

  it('sends the statements that arrive in one turn of the event loop, with nothing in flight, as one group; a statement alone goes alone', async () => {
    const database = open();
    const before = database.work();
    // Three requests read in the same turn each bring a statement: one transaction.
    const turn = [6, 7, 8].map((id) => insert(database, id, `row ${id}`));
    expect(await Promise.all(turn)).toEqual([6, 7, 8].map((id) => [{ id, v: `row ${id}` }]));
    expect(delta(before, database.work())).toEqual({ statements: 5, roundTrips: 1, transactions: 3, commits: 1 });
    expect(new Set(await writers(database, [6, 7, 8])).size).toBe(1);
    // One statement in a turn of its own goes alone, without BEGIN and COMMIT around it.
    const middle = database.work();
    expect(await insert(database, 9, 'row 9')).toEqual([{ id: 9, v: 'row 9' }]);
    expect(delta(middle, database.work())).toEqual({ statements: 1, roundTrips: 1, transactions: 1, commits: 1 });
    const [eight, nine] = await writers(database, [8, 9]);
    expect(nine).not.toBe(eight);
  });

  it('rolls the whole group back when one statement fails, then runs each alone: each caller gets its own outcome', async () => {
    const database = open();
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    // Settled from the start, so that a rejection is never left unhandled for a moment.
    const group = Promise.allSettled([insert(database, 11, 'eleven'), insert(database, 1, 'taken'), insert(database, 12, 'twelve')]);
    await queued();
    await release();
    await first;
    const [eleven, taken, twelve] = await group;
    expect(eleven).toEqual({ status: 'fulfilled', value: [{ id: 11, v: 'eleven' }] });
    expect(twelve).toEqual({ status: 'fulfilled', value: [{ id: 12, v: 'twelve' }] });
    expect(taken?.status).toBe('rejected');
    expect((taken as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    // The group (BEGIN, three, COMMIT answered as ROLLBACK) left nothing; the three ran again alone.
    expect(delta(before, database.work())).toEqual({ statements: 1 + 5 + 3, roundTrips: 1 + 1 + 3, transactions: 4, commits: 1 + 2 });
    const [elevenWriter, twelveWriter] = await writers(database, [11, 12]);
    expect(elevenWriter).not.toBe(twelveWriter);
    const one = await sql<{ v: string }>`select v from t where id = 1`.execute(database.reader<AnySchema>());
    expect(one.rows).toEqual([{ v: 'row 1' }]);
  });

  it('gives up a lock wait before the deadlock check, so another transaction is never made its victim', async () => {
    const database = open();
    const other = await session();
    // The other transaction checks for deadlocks after 300 ms, well before the group's backend
    // would (1 s): without the group's lock_timeout it would be the victim here.
    await other.query(`set deadlock_timeout = '300ms'`);
    await other.query('begin');
    await other.query(`update t set v = 'T' where id = 22`);
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    const group = [append(database, 21), append(database, 22)];
    await queued();
    await release();
    await first;
    // The group holds row 21 and waits for row 22, held by the other transaction...
    await waitingOnLock(`update t set v = v || '+g'`);
    // ...which now waits for row 21: a cycle, broken by the group's lock_timeout.
    await other.query(`update t set v = v || '+T' where id = 21`);
    await other.query('commit');
    // Either the other transaction got row 21 once the group gave way and the group's statement,
    // run again alone, came after it; or, on a machine slow enough that the group had given way
    // before the other transaction asked, the statement alone came first. Each change once.
    const [row21, row22] = await Promise.all(group);
    const spent = delta(before, database.work());
    const final21 = await sql<{ v: string }>`select v from t where id = 21`.execute(database.reader<AnySchema>());
    const otherFirst = [[{ id: 21, v: 'a+T+g' }], [{ v: 'a+T+g' }]];
    const groupFirst = [[{ id: 21, v: 'a+g' }], [{ v: 'a+g+T' }]];
    expect([otherFirst, groupFirst]).toContainEqual([row21, final21.rows]);
    expect(row22).toEqual([{ id: 22, v: 'T+g' }]);
    expect(spent).toEqual({ statements: 1 + 4 + 2, roundTrips: 1 + 1 + 2, transactions: 3, commits: 1 + 2 });
  });

  it('cancels a group that runs past its time budget, so that a transaction waiting on its rows never reaches the deadlock check', async () => {
    const database = open();
    const setup = await session();
    await setup.query(`insert into t (id, v) values (61, 'a'), (62, 'b')`);
    // The other transaction keeps the server's deadlock_timeout (1 s): it holds row 62.
    const other = await session();
    await other.query('begin');
    await other.query(`update t set v = 'T' where id = 62`);
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    const group = [
      // Holds row 61 from here to the group's end...
      append(database, 61),
      // ...while another request's write takes 900 ms (no lock wait, within the statement timeout)...
      database.autocommit<AnySchema, unknown>(async (db) => (await sql`insert into t (id, v) select ${63}, 'slow' from pg_sleep(0.9) returning id, v`.execute(db)).rows),
      // ...before the group would wait on the other transaction's row.
      append(database, 62),
    ];
    await queued();
    await release();
    await first;
    await waitingFor(`insert into t (id, v) select`);
    // The other transaction waits on row 61. Had the group held it until it waited on row 62,
    // the other transaction's deadlock check, 1 s after it began to wait, would have come
    // before the group's lock timeout, and made it the victim.
    const otherWrite = await other.query(`update t set v = v || '+T' where id = 61 returning v`).then(
      (result) => result.rows,
      (error: { code?: string; message?: string }) => `${error.code}: ${error.message}`,
    );
    await other.query('commit');
    expect(otherWrite).toEqual([{ v: 'a+T' }]);
    // The group was cancelled at its budget and rolled back; its statements ran again alone.
    expect(await Promise.all(group)).toEqual([[{ id: 61, v: 'a+T+g' }], [{ id: 63, v: 'slow' }], [{ id: 62, v: 'T+g' }]]);
    // The first statement; the group (5) and its cancel; the three alone.
    expect(delta(before, database.work())).toEqual({ statements: 1 + 5 + 1 + 3, roundTrips: 1 + 1 + 1 + 3, transactions: 4, commits: 1 + 3 });
  });

  it('runs a group again alone when a statement meets a stale plan (another replica migrated), and drops its prepared statements before the next group', async () => {
    const database = open();
    const setup = await session();
    await setup.query('create table s (id integer primary key, a integer not null)');
    await setup.query('insert into s (id, a) values (1, 0), (2, 0)');
    const bump = (id: number) =>
      database.autocommit<AnySchema, unknown>(async (db) => (await sql`update s set a = a + 1 where id = ${id} returning *`.execute(db)).rows);
    const grouped = async (): Promise<{ rows: unknown[]; spent: ReturnType<typeof delta> }> => {
      const before = database.work();
      const { first, release } = await firstInFlight(database, 0);
      const group = [bump(1), bump(2)];
      await queued();
      await release();
      await first;
      const rows = await Promise.all(group);
      return { rows, spent: delta(before, database.work()) };
    };
    // Prepared on the group's connection under its first name.
    expect(await grouped()).toEqual({
      rows: [[{ id: 1, a: 1 }], [{ id: 2, a: 1 }]],
      spent: { statements: 1 + 4, roundTrips: 2, transactions: 3, commits: 2 },
    });
    // Another replica adds a column: the prepared plan of `returning *` no longer fits.
    await setup.query('alter table s add column b text');
    // The group fails on the stale plan and is rolled back; each statement runs again alone
    // through the ordinary pool, and each caller sees the new column.
    expect(await grouped()).toEqual({
      rows: [[{ id: 1, a: 2, b: null }], [{ id: 2, a: 2, b: null }]],
      spent: { statements: 1 + 4 + 2, roundTrips: 1 + 1 + 2, transactions: 3, commits: 1 + 2 },
    });
    // The next group first drops the connection's prepared statements (one more round trip),
    // then prepares afresh under new names.
    expect(await grouped()).toEqual({
      rows: [[{ id: 1, a: 3, b: null }], [{ id: 2, a: 3, b: null }]],
      spent: { statements: 1 + 1 + 4, roundTrips: 1 + 1 + 1, transactions: 3, commits: 2 },
    });
  });

  it('tells every caller of a group whose connection was lost that the outcome is unknown, and goes on with a new connection', async () => {
    const database = open();
    const killer = await session();
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    // Settled from the start: the callers' rejections may arrive before the kill is confirmed.
    const group = Promise.allSettled([
      insert(database, 31, 'thirty-one'),
      database.autocommit<AnySchema, unknown>(async (db) => (await sql`select pg_sleep(5) as slept`.execute(db)).rows),
    ]);
    await queued();
    await release();
    await first;
    for (let attempt = 0; ; attempt += 1) {
      const killed = await killer.query<{ n: number }>(
        `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = current_database() and query like 'select pg_sleep(%'`,
      );
      if (killed.rows[0]?.n === 1) break;
      if (attempt > 500) throw new Error('the group never started its sleep');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const outcomes = await group;
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect(String((outcome as PromiseRejectedResult).reason)).toMatch(/^Error: connection lost during a group commit; whether it was applied is unknown: /);
    }
    const gone = await sql<{ n: number }>`select count(*)::int as n from t where id = 31`.execute(database.reader<AnySchema>());
    expect(gone.rows).toEqual([{ n: 0 }]);
    expect(delta(before, database.work()).commits).toBe(1);
    expect(await insert(database, 32, 'thirty-two')).toEqual([{ id: 32, v: 'thirty-two' }]);
  });

  it('answers a group whose statements each finish within the statement timeout, however long the group takes in all', async () => {
    // Three reads of 400 ms each: 1.2 s for the group, more than the query timeout. (A commit
    // group that long is cancelled at its time budget first, and its statements run alone.)
    const database = open({ statementTimeoutMs: 1_000, queryTimeoutMs: 1_100 });
    const slowRead = (id: number) =>
      sql<{ id: number }>`select ${id}::integer as id from pg_sleep(0.4)`.execute(database.quickReader<AnySchema>()).then((result) => result.rows);
    const before = database.work();
    // Three in one turn of the event loop: one group.
    expect(await Promise.all([51, 52, 53].map(slowRead))).toEqual([[{ id: 51 }], [{ id: 52 }], [{ id: 53 }]]);
    expect(delta(before, database.work())).toEqual({ statements: 3, roundTrips: 1, transactions: 0, commits: 0 });
  });

  it('drops a connection that goes silent during a group, after the query timeout from its last answer: the outcome is unknown', async () => {
    if (shared === undefined) throw new Error('the test database was not created');
    // Through a relay on loopback that stands for the network: the group's connection is the
    // first one made through it, and it goes quiet (as a server that hangs or a network that
    // drops everything would) while the group's second statement runs.
    const relay = await startTcpRelay(shared.url);
    relays.push(relay);
    const database = new PostgresDatabase({ url: relay.url, poolMax: 4, statementTimeoutMs: 1_000, queryTimeoutMs: 1_200 });
    opened.push(database);
    const group = Promise.allSettled([
      insert(database, 54, 'fifty-four'),
      database.autocommit<AnySchema, unknown>(async (db) => (await sql`select pg_sleep(0.5) as slept`.execute(db)).rows),
    ]);
    await waitingFor('select pg_sleep(0.5)');
    expect(relay.connections()).toBe(1);
    relay.stall(0);
    const outcomes = await group;
    expect(outcomes.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason) : 'fulfilled'))).toEqual([
      'Error: connection lost during a group commit; whether it was applied is unknown: no answer from PostgreSQL for 1200 ms during a statement group',
      'Error: connection lost during a group commit; whether it was applied is unknown: no answer from PostgreSQL for 1200 ms during a statement group',
    ]);
    // A new connection for the next group.
    expect(await Promise.all([insert(database, 55, 'fifty-five'), insert(database, 56, 'fifty-six')])).toEqual([
      [{ id: 55, v: 'fifty-five' }],
      [{ id: 56, v: 'fifty-six' }],
    ]);
  });

  it('on close, lets the group in flight finish, its statements run again alone with the outcome each has alone', async () => {
    const database = open();
    const group = Promise.allSettled([
      insert(database, 57, 'fifty-seven'),
      database.autocommit<AnySchema, unknown>(async (db) => (await sql`select pg_sleep(0.3) as slept`.execute(db)).rows),
      insert(database, 0, 'duplicate'),
    ]);
    await waitingFor('select pg_sleep(0.3)');
    await database.close();
    // The duplicate rolled the group back; the others ran again alone through the ordinary pool,
    // which close kept open until they had.
    const [fiftySeven, slept, duplicate] = await group;
    expect(fiftySeven).toEqual({ status: 'fulfilled', value: [{ id: 57, v: 'fifty-seven' }] });
    expect(slept).toEqual({ status: 'fulfilled', value: [{ slept: '' }] });
    expect((duplicate as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    const check = await session();
    expect((await check.query('select v from t where id = 57')).rows).toEqual([{ v: 'fifty-seven' }]);
  });

  it('reads that arrive while one is in flight go together on one connection, each with its own answer or error', async () => {
    const database = open();
    const quick = database.quickReader<AnySchema>();
    const before = database.work();
    const first = sql<{ v: string; pid: number }>`select v, pg_backend_pid() as pid from t where id = ${0} and pg_sleep(1) is not null`.execute(quick);
    await waitingFor(`select v, pg_backend_pid() as pid from t where id = $1 and pg_sleep`);
    const byId = (id: number) => sql<{ v: string; pid: number }>`select v, pg_backend_pid() as pid from t where id = ${id}`.execute(quick);
    const group = Promise.allSettled([byId(11), sql`select 1 / ${0}::integer as never`.execute(quick), byId(12), byId(99)]);
    await queued();
    const answers = await group;
    const alone = (await first).rows;
    expect(alone.map((row) => row.v)).toEqual(['first']);
    const rows = answers.map((answer) => (answer.status === 'fulfilled' ? (answer.value.rows as Array<{ v: string; pid: number }>) : undefined));
    expect(rows[0]?.map((row) => row.v)).toEqual(['eleven']);
    expect(rows[2]?.map((row) => row.v)).toEqual(['twelve']);
    expect(rows[3]).toEqual([]);
    expect(answers[1]?.status).toBe('rejected');
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ code: '22012', message: 'division by zero' });
    // The group's reads ran on its own connection, one backend, not the first read's.
    const groupPid = rows[0]?.[0]?.pid;
    expect(rows[2]?.[0]?.pid).toBe(groupPid);
    expect(groupPid).not.toBe(alone[0]?.pid);
    expect(delta(before, database.work())).toEqual({ statements: 5, roundTrips: 2, transactions: 0, commits: 0 });
  });

  describe('under a server whose messages are not in English', () => {
    /** An ErrorResponse ('E') with its severity field ('S') as a French server sends it: 'ERREUR'. */
    const inFrench = (message: Buffer): Buffer => {
      if (message[0] !== 0x45) return message;
      const fields: Buffer[] = [];
      for (let at = 5; message[at] !== 0; ) {
        const end = message.indexOf(0, at + 1);
        const field = message.subarray(at, end + 1);
        fields.push(field.toString('utf8') === 'SERROR\0' ? Buffer.from('SERREUR\0', 'utf8') : field);
        at = end + 1;
      }
      const body = Buffer.concat([...fields, Buffer.from([0])]);
      const head = Buffer.alloc(5);
      head[0] = 0x45;
      head.writeInt32BE(4 + body.length, 1);
      return Buffer.concat([head, body]);
    };

    const openInFrench = async (): Promise<PostgresDatabase> => {
      if (shared === undefined) throw new Error('the test database was not created');
      const relay = await startTcpRelay(shared.url, inFrench);
      relays.push(relay);
      const database = new PostgresDatabase({ url: relay.url, poolMax: 2 });
      opened.push(database);
      return database;
    };

    it('runs a group whose COMMIT the server refused again alone, each caller getting its own outcome, not "unknown"', async () => {
      const owner = await session();
      await owner.query('create table deferred_keys (k text, n integer, constraint deferred_keys_k unique (k) deferrable initially deferred)');
      const database = await openInFrench();
      const insert = (n: number): Promise<unknown> =>
        database.autocommit<AnySchema, unknown>(async (db) => (await sql`insert into deferred_keys (k, n) values (${'same'}, ${n}) returning n`.execute(db)).rows);
      // One turn of the event loop: one group, whose COMMIT meets the deferred uniqueness (23505).
      // Alone, the two run at once on two connections: either may commit first, and the other fails.
      const before = database.work();
      const answers = await Promise.allSettled([insert(1), insert(2)]);
      // The group (BEGIN, two inserts, COMMIT: one round trip), then each insert alone.
      expect(delta(before, database.work())).toEqual({ statements: 4 + 2, roundTrips: 1 + 2, transactions: 2, commits: 1 });
      const won = answers.findIndex((answer) => answer.status === 'fulfilled');
      expect(won === 0 || won === 1).toBe(true);
      expect(answers[won]).toEqual({ status: 'fulfilled', value: [{ n: won + 1 }] });
      expect(answers[1 - won]?.status).toBe('rejected');
      expect((answers[1 - won] as PromiseRejectedResult).reason).toMatchObject({ code: '23505', severity: 'ERREUR' });
      expect((await owner.query('select k, n from deferred_keys')).rows).toEqual([{ k: 'same', n: won + 1 }]);
    });

    it('keeps the read groups\' connection when one read of a group fails', async () => {
      const database = await openInFrench();
      const read = (text: string): Promise<unknown> => sql.raw(text).execute(database.quickReader()).then((result) => result.rows);
      const before = database.work();
      const [first, failed] = await Promise.allSettled([read('select pg_backend_pid() as pid'), read('select 1 / 0 as n')]);
      expect((failed as PromiseRejectedResult).reason).toMatchObject({ code: '22012', severity: 'ERREUR' });
      const [again] = await Promise.all([read('select pg_backend_pid() as pid'), read('select 1 as n')]);
      expect(again).toEqual((first as PromiseFulfilledResult<unknown>).value);
      // Two read groups of two, one round trip each: the failed read was not run again alone.
      expect(delta(before, database.work())).toEqual({ statements: 2 + 2, roundTrips: 2, transactions: 0, commits: 0 });
    });
  });

  it('commits each statement on its own when statement groups are off', async () => {
    const database = open({ statementGroups: false });
    const before = database.work();
    const { first, release } = await firstInFlight(database, 0);
    const group = [41, 42, 43].map((id) => insert(database, id, `row ${id}`));
    await queued();
    await release();
    await first;
    expect(await Promise.all(group)).toEqual([41, 42, 43].map((id) => [{ id, v: `row ${id}` }]));
    expect(delta(before, database.work())).toEqual({ statements: 4, roundTrips: 4, transactions: 4, commits: 4 });
    expect(new Set(await writers(database, [41, 42, 43])).size).toBe(3);
  });
});
