import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../ports/logger.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { startTcpRelay, type TcpRelay } from '../../../test/support/tcp-relay.js';
import { connectorMigrations } from './connector-migrations.js';
import { PostgresDatabase, sessionStart } from './postgres-database.js';
import { queryTemplate } from './query-template.js';
import type { AnySchema, Migration } from './sql-database.js';

/** The advisory lock key of postgres-database.ts, as another replica would hold it. */
const MIGRATION_LOCK_KEY = '7161688131923763572';

interface Logged {
  readonly level: 'fatal' | 'error' | 'warn' | 'info' | 'debug';
  readonly bindings: object;
  readonly message: string;
}

function recordingLogger(): { logger: Logger; lines: Logged[] } {
  const lines: Logged[] = [];
  const record =
    (level: Logged['level']) =>
    (bindings: object, message: string): void => {
      lines.push({ level, bindings, message });
    };
  return {
    lines,
    logger: { fatal: record('fatal'), error: record('error'), warn: record('warn'), info: record('info'), debug: record('debug') },
  };
}

async function tableNames(database: PostgresDatabase): Promise<string[]> {
  const result = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = 'public' order by table_name`.execute(database.reader());
  return result.rows.map((row) => row.table_name);
}

async function appliedMigrations(database: PostgresDatabase): Promise<string[]> {
  const rows = await database.reader<AnySchema>().selectFrom('schema_migrations').select('id').orderBy('id').execute();
  return rows.map((row) => String(row['id']));
}

/** Waits until exactly one session whose statement is like `pattern` waits on a lock, as `observer` sees. */
async function untilWaitingOnLock(observer: pg.Client, pattern: string, timeout: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const waiting = await observer.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like $1`,
        [pattern],
      );
      expect(waiting.rows).toStrictEqual([{ n: 1 }]);
    },
    { timeout, interval: 10 },
  );
}

describe('PostgresDatabase', () => {
  let shared: TestDatabase | undefined;
  const sharedUrl = (): string => {
    if (shared === undefined) throw new Error('the test database was not created');
    return shared.url;
  };

  beforeAll(async () => {
    shared = await createTestDatabase();
  });

  afterAll(async () => {
    await shared?.drop();
  });

  describe('migrate', () => {
    it('lets two instances migrate a fresh database at the same time, each migration running once', async () => {
      const fresh = await createTestDatabase();
      const replicas = [new PostgresDatabase({ url: fresh.url, poolMax: 2 }), new PostgresDatabase({ url: fresh.url, poolMax: 2 })];
      let slowRuns = 0;
      // Long enough that the second replica arrives while the first is still migrating.
      const slow: Migration = {
        id: 'test-002-slow',
        async up(db) {
          slowRuns += 1;
          await sql`select pg_sleep(0.3)`.execute(db);
          await db.schema.createTable('slow_marker').addColumn('id', 'integer').execute();
        },
      };
      try {
        await Promise.all(replicas.map((replica) => replica.migrate([...connectorMigrations, slow])));
        expect(slowRuns).toBe(1);
        for (const replica of replicas) {
          expect(await appliedMigrations(replica)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'connector-003-audit-seq-from-trail', 'connector-004-created-at', 'connector-005-attention', 'connector-006-state-counts', 'connector-007-state-created', 'connector-008-quote-held-once', 'test-002-slow']);
          expect(await tableNames(replica)).toStrictEqual(['inbound_transfers', 'quotes', 'schema_migrations', 'slow_marker']);
        }

        const [first] = replicas;
        await first?.migrate([...connectorMigrations, slow]);
        expect(slowRuns).toBe(1);
      } finally {
        await Promise.all(replicas.map((replica) => replica.close()));
        await fresh.drop();
      }
    });

    it('runs migrations without the payment path\'s statement and query timeouts, nor a database\'s own, which still apply to everything else', async () => {
      const fresh = await createTestDatabase();
      const admin = new PostgresDatabase({ url: fresh.url, poolMax: 1 });
      await sql`alter database ${sql.id(fresh.name)} set statement_timeout to '300ms'`.execute(admin.reader());
      await admin.close();
      const database = new PostgresDatabase({ url: fresh.url, poolMax: 2, statementTimeoutMs: 200, queryTimeoutMs: 400 });
      // An upgrade's migration rewriting a large table in one statement, longer than each limit.
      const long: Migration = {
        id: 'test-002-long',
        async up(db) {
          await sql`select pg_sleep(0.8)`.execute(db);
          await db.schema.createTable('long_marker').addColumn('id', 'integer').execute();
        },
      };
      try {
        await database.migrate([...connectorMigrations, long]);
        expect(await appliedMigrations(database)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'connector-003-audit-seq-from-trail', 'connector-004-created-at', 'connector-005-attention', 'connector-006-state-counts', 'connector-007-state-created', 'connector-008-quote-held-once', 'test-002-long']);
        expect(await tableNames(database)).toStrictEqual(['inbound_transfers', 'long_marker', 'quotes', 'schema_migrations']);
        await expect(sql`select pg_sleep(0.8)`.execute(database.reader())).rejects.toThrow('canceling statement due to statement timeout');
        await expect(database.transaction(async (trx) => sql`select pg_sleep(0.8)`.execute(trx))).rejects.toThrow('canceling statement due to statement timeout');
      } finally {
        await database.close();
        await fresh.drop();
      }
    });

    it('gives way when its DDL waits on a table lock past half the statement timeout, so the statements queued behind it still finish', async () => {
      const fresh = await createTestDatabase();
      // Statements limited to 2 s, so the migration's lock wait is at most 1 s.
      const running = new PostgresDatabase({ url: fresh.url, poolMax: 2, statementTimeoutMs: 2_000, queryTimeoutMs: 3_000 });
      const upgrading = new PostgresDatabase({ url: fresh.url, poolMax: 2, statementTimeoutMs: 2_000, queryTimeoutMs: 3_000 });
      const holder = new pg.Client({ connectionString: fresh.url });
      const observer = new pg.Client({ connectionString: fresh.url });
      const addColumn: Migration = {
        id: 'test-002-add-column',
        async up(db) {
          await db.schema.alterTable('inbound_transfers').addColumn('note', 'text').execute();
        },
      };
      try {
        await running.migrate(connectorMigrations);
        // A long reader (a dump, an operator's open transaction) holds the table.
        await holder.connect();
        await observer.connect();
        await holder.query('begin');
        await holder.query('select count(*) from inbound_transfers');
        const migrated = upgrading.migrate([...connectorMigrations, addColumn]).then(
          () => 'migrated',
          (error: unknown) => String(error),
        );
        // Asked of an observer, not of the holder: inside its transaction pg_stat_activity keeps its first snapshot.
        await untilWaitingOnLock(observer, 'alter table "inbound_transfers"%', 5_000);
        // The running replica's read queues behind the DDL's lock request, and is answered once it gives way.
        const read = await sql<{ n: number }>`select count(*)::int as n from inbound_transfers`.execute(running.reader());
        expect(read.rows).toStrictEqual([{ n: 0 }]);
        expect(await migrated).toBe('error: canceling statement due to lock timeout');
        await holder.query('rollback');
        await upgrading.migrate([...connectorMigrations, addColumn]);
        expect(await appliedMigrations(upgrading)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'connector-003-audit-seq-from-trail', 'connector-004-created-at', 'connector-005-attention', 'connector-006-state-counts', 'connector-007-state-created', 'connector-008-quote-held-once', 'test-002-add-column']);
      } finally {
        await holder.end();
        await observer.end();
        await upgrading.close();
        await running.close();
        await fresh.drop();
      }
    });

    it('applies nothing of a failing batch: the schema stays as it was', async () => {
      const fresh = await createTestDatabase();
      const database = new PostgresDatabase({ url: fresh.url, poolMax: 2 });
      const failing: Migration = {
        id: 'test-002-failing',
        async up(db) {
          await db.schema.createTable('half_done').addColumn('id', 'integer').execute();
          throw new Error('migration 002 fails half way');
        },
      };
      try {
        await expect(database.migrate([...connectorMigrations, failing])).rejects.toThrow('migration 002 fails half way');
        expect(await tableNames(database)).toStrictEqual([]);

        await database.migrate(connectorMigrations);
        expect(await appliedMigrations(database)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'connector-003-audit-seq-from-trail', 'connector-004-created-at', 'connector-005-attention', 'connector-006-state-counts', 'connector-007-state-created', 'connector-008-quote-held-once']);
      } finally {
        await database.close();
        await fresh.drop();
      }
    });

    it('gives up after migrationLockWaitMs while another replica holds the migration lock', async () => {
      const fresh = await createTestDatabase();
      const holder = new pg.Client({ connectionString: fresh.url });
      const database = new PostgresDatabase({ url: fresh.url, poolMax: 2, migrationLockWaitMs: 300 });
      try {
        await holder.connect();
        await holder.query('begin');
        await holder.query('select pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
        const startedAt = performance.now();
        await expect(database.migrate(connectorMigrations)).rejects.toThrow(
          'waited 300 ms for another replica to finish migrating the database',
        );
        const waitedMs = performance.now() - startedAt;
        expect(waitedMs).toBeGreaterThanOrEqual(300);
        expect(waitedMs).toBeLessThan(10_000);
        expect(await tableNames(database)).toStrictEqual([]);

        await holder.query('commit');
        await database.migrate(connectorMigrations);
        expect(await appliedMigrations(database)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'connector-003-audit-seq-from-trail', 'connector-004-created-at', 'connector-005-attention', 'connector-006-state-counts', 'connector-007-state-created', 'connector-008-quote-held-once']);
      } finally {
        await holder.end();
        await database.close();
        await fresh.drop();
      }
    });
  });

  describe('transaction', () => {
    interface NotesSchema {
      notes: { id: number; body: string };
    }

    it('commits when the work returns and rolls back when it throws', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 2 });
      try {
        await database.transaction<AnySchema, void>(async (trx) => {
          await trx.schema.createTable('notes').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('body', 'text').execute();
        });
        const answer = await database.transaction<NotesSchema, string>(async (trx) => {
          await trx.insertInto('notes').values({ id: 1, body: 'kept' }).execute();
          const isolation = await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(trx);
          return isolation.rows[0]?.level ?? 'unknown';
        });
        expect(answer).toBe('read committed');
        await expect(
          database.transaction<NotesSchema, void>(async (trx) => {
            await trx.insertInto('notes').values({ id: 2, body: 'undone' }).execute();
            throw new Error('work fails after its insert');
          }),
        ).rejects.toThrow('work fails after its insert');
        expect(await database.reader<NotesSchema>().selectFrom('notes').selectAll().orderBy('id').execute()).toStrictEqual([
          { id: 1, body: 'kept' },
        ]);
      } finally {
        await database.close();
      }
    });

    it('runs transactions in parallel on at most poolMax connections', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 3 });
      try {
        let inFlight = 0;
        let maxInFlight = 0;
        const startedAt = performance.now();
        const pids = await Promise.all(
          Array.from({ length: 12 }, () =>
            database.transaction<AnySchema, number>(async (trx) => {
              inFlight += 1;
              maxInFlight = Math.max(maxInFlight, inFlight);
              try {
                const result = await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.1)`.execute(trx);
                const pid = result.rows[0]?.pid;
                if (typeof pid !== 'number') throw new Error('no backend pid');
                return pid;
              } finally {
                inFlight -= 1;
              }
            }),
          ),
        );
        const elapsedMs = performance.now() - startedAt;
        expect(new Set(pids).size).toBe(3);
        // Twelve transactions, exactly three of them in flight at the peak: neither serial nor
        // unbounded. Twelve 100 ms sleeps three at a time take at least four rounds.
        expect(maxInFlight).toBe(3);
        expect(inFlight).toBe(0);
        expect(elapsedMs).toBeGreaterThanOrEqual(400);
      } finally {
        await database.close();
      }
    });
  });

  describe('snapshot', () => {
    it('reads the database as it was at its first read, across commits of other sessions, read only, its connection given back', async () => {
      const fresh = await createTestDatabase();
      const database = new PostgresDatabase({ url: fresh.url, poolMax: 2 });
      interface ItemsSchema {
        items: { id: number; label: string };
      }
      try {
        await database.migrate([{ id: 'test-001-items', up: async (db) => void (await sql`create table items (id integer primary key, label text not null)`.execute(db)) }]);
        const write = (id: number, label: string) =>
          database.autocommit<ItemsSchema, unknown>((db) => db.insertInto('items').values({ id, label }).onConflict((c) => c.column('id').doUpdateSet({ label })).execute());
        await write(1, 'first');
        const labels = async (db: Kysely<ItemsSchema>) => (await db.selectFrom('items').select('label').orderBy('id').execute()).map((row) => row.label);
        const seen = await database.snapshot<ItemsSchema, string[][]>(async (db) => {
          const atStart = await labels(db);
          await write(2, 'second');
          await write(1, 'changed');
          const outside = await labels(database.reader<ItemsSchema>());
          const isolation = await sql<{ level: string; readOnly: string }>`select current_setting('transaction_isolation') as level, current_setting('transaction_read_only') as "readOnly"`.execute(db);
          return [atStart, await labels(db), outside, [isolation.rows[0]?.level ?? '', isolation.rows[0]?.readOnly ?? '']];
        });
        expect(seen).toStrictEqual([['first'], ['first'], ['changed', 'second'], ['repeatable read', 'on']]);
        await expect(database.snapshot<ItemsSchema, unknown>((db) => db.insertInto('items').values({ id: 3, label: 'third' }).execute())).rejects.toThrow(
          'cannot execute INSERT in a read-only transaction',
        );
        // Both pooled connections free again: two transactions at once still run.
        expect(await Promise.all([1, 2].map(() => database.transaction<ItemsSchema, string[]>((trx) => labels(trx))))).toStrictEqual([
          ['changed', 'second'],
          ['changed', 'second'],
        ]);
      } finally {
        await database.close();
        await fresh.drop();
      }
    });

    it('refuses to start once the database is closed', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 1 });
      await database.close();
      await expect(database.snapshot(async () => 'never')).rejects.toThrow('database is closed');
    });
  });

  describe('templates', () => {
    it('answer the same through the statement groups (not through Kysely\'s executor) as through Kysely', async () => {
      const fresh = await createTestDatabase();
      const grouped = new PostgresDatabase({ url: fresh.url, poolMax: 2 });
      const plain = new PostgresDatabase({ url: fresh.url, poolMax: 2, statementGroups: false });
      try {
        await grouped.migrate([{ id: 'test-001-notes', up: async (db) => void (await sql`create table notes (id text primary key, amount numeric not null, n integer)`.execute(db)) }]);
        const insert = queryTemplate<AnySchema, { id: string; amount: string }, unknown>('insert note', (db, p) =>
          db.insertInto('notes').values({ id: p.id, amount: p.amount, n: sql.lit(7) }).onConflict((oc) => oc.doNothing()),
        );
        const bump = queryTemplate<AnySchema, { id: string }, unknown>('bump note', (db, p) => db.updateTable('notes').set({ n: sql`n + 1` }).where('id', '=', p.id).returningAll());
        const find = queryTemplate<AnySchema, { id: string }, unknown>('find note', (db, p) => db.selectFrom('notes').selectAll().where('id', '=', p.id));
        const answers = async (database: PostgresDatabase, id: string): Promise<unknown[]> => [
          await database.autocommit<AnySchema, unknown>((db) => insert.execute(db, { id, amount: '10.50' })),
          await database.autocommit<AnySchema, unknown>((db) => insert.execute(db, { id, amount: '99' })),
          await database.autocommit<AnySchema, unknown>((db) => bump.execute(db, { id })),
          await find.execute(database.quickReader<AnySchema>(), { id }),
          await find.execute(database.quickReader<AnySchema>(), { id: 'none' }),
        ];
        const executors = [grouped.quickReader().getExecutor(), await grouped.autocommit(async (db) => db.getExecutor())];
        const spies = executors.map((executor) => vi.spyOn(executor, 'executeQuery'));
        const viaGroups = await answers(grouped, 'g-1');
        for (const spy of spies) expect(spy).not.toHaveBeenCalled();
        const viaKysely = await answers(plain, 'k-1');
        expect(viaGroups).toEqual([
          { numAffectedRows: 1n, rows: [] },
          { numAffectedRows: 0n, rows: [] },
          { numAffectedRows: 1n, rows: [{ id: 'g-1', amount: '10.50', n: 8 }] },
          { rows: [{ id: 'g-1', amount: '10.50', n: 8 }] },
          { rows: [] },
        ]);
        // Kysely's driver also says numAffectedRows: undefined for a read; the values are the same.
        expect(JSON.stringify(viaKysely, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))).toBe(
          JSON.stringify(viaGroups, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)).replaceAll('g-1', 'k-1'),
        );
      } finally {
        await grouped.close();
        await plain.close();
        await fresh.drop();
      }
    });
  });

  describe('limits and types', () => {
    it('sets its limits on every session', async () => {
      const database = new PostgresDatabase({
        url: sharedUrl(),
        poolMax: 1,
        statementTimeoutMs: 1_500,
        queryTimeoutMs: 3_000,
        idleInTransactionTimeoutMs: 45_000,
      });
      try {
        const result = await sql<Record<string, string>>`
          select current_setting('statement_timeout') as statement_timeout,
                 current_setting('idle_in_transaction_session_timeout') as idle_in_transaction,
                 current_setting('application_name') as application_name`.execute(database.reader());
        expect(result.rows).toStrictEqual([{ statement_timeout: '1500ms', idle_in_transaction: '45s', application_name: 'core-connector' }]);
      } finally {
        await database.close();
      }
    });

    it('runs every session at READ COMMITTED when the database defaults to SERIALIZABLE, with the server probing a silent client, keeping a URL\'s own options', async () => {
      const fresh = await createTestDatabase();
      const admin = new PostgresDatabase({ url: fresh.url, poolMax: 1 });
      await sql`alter database ${sql.id(fresh.name)} set default_transaction_isolation to 'serializable'`.execute(admin.reader());
      await admin.close();
      const url = new URL(fresh.url);
      url.searchParams.set('options', '-c work_mem=5MB');
      const database = new PostgresDatabase({ url: url.toString(), poolMax: 2 });
      const outsider = new pg.Client({ connectionString: fresh.url });
      await outsider.connect();
      try {
        const setting = sql<{ level: string; memory: string; idle: string; interval: string; count: string }>`
          select current_setting('transaction_isolation') as level, current_setting('work_mem') as memory,
                 current_setting('tcp_keepalives_idle') as idle, current_setting('tcp_keepalives_interval') as interval,
                 current_setting('tcp_keepalives_count') as count`;
        const expected = [{ level: 'read committed', memory: '5MB', idle: '30', interval: '10', count: '3' }];
        expect((await outsider.query('select current_setting(\'transaction_isolation\') as level')).rows).toStrictEqual([{ level: 'serializable' }]);
        expect((await setting.execute(database.reader())).rows).toStrictEqual(expected);
        expect((await database.transaction(async (trx) => setting.execute(trx))).rows).toStrictEqual(expected);
        expect((await database.autocommit(async (db) => setting.execute(db))).rows).toStrictEqual(expected);
        expect((await setting.execute(database.quickReader())).rows).toStrictEqual(expected);

        // What the level changes: a compare-and-set that waited for a row another transaction
        // changed finds its condition false (no row), instead of failing with 40001.
        await outsider.query('create table counters (id integer primary key, n integer not null)');
        await outsider.query('insert into counters values (1, 0)');
        // The first holds its change open until the second's update is seen waiting on its lock.
        let changedFirst!: () => void;
        const firstChanged = new Promise<void>((resolve) => (changedFirst = resolve));
        let letFirstCommit!: () => void;
        const firstMayCommit = new Promise<void>((resolve) => (letFirstCommit = resolve));
        const first = database.transaction(async (trx) => {
          const changed = await sql`update counters set n = n + 1 where id = 1 and n = 0`.execute(trx);
          changedFirst();
          await firstMayCommit;
          return changed.numAffectedRows;
        });
        await firstChanged;
        const second = database.transaction(async (trx) => (await sql`update counters set n = n + 2 where id = 1 and n = 0`.execute(trx)).numAffectedRows);
        await untilWaitingOnLock(outsider, 'update counters set n = n + 2%', 10_000);
        letFirstCommit();
        expect(await Promise.all([first, second])).toStrictEqual([1n, 0n]);
        expect((await outsider.query('select n from counters')).rows).toStrictEqual([{ n: 1 }]);
      } finally {
        await outsider.end();
        await database.close();
        await fresh.drop();
      }
    });

    it('sends its session settings last, after the URL\'s own options, and leaves a URL without options as it is', () => {
      const SESSION = '-c default_transaction_isolation=read\\ committed -c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3';
      expect(sessionStart('postgres://cc:s3cret@db.example:5432/cc?sslmode=require')).toStrictEqual({
        connectionString: 'postgres://cc:s3cret@db.example:5432/cc?sslmode=require',
        options: SESSION,
      });
      expect(sessionStart('postgres://cc@db.example/cc?options=-c%20search_path%3Dledger&sslmode=require')).toStrictEqual({
        connectionString: 'postgres://cc@db.example/cc?sslmode=require',
        options: `-c search_path=ledger ${SESSION}`,
      });
      expect(sessionStart('postgres://cc@db.example/cc?options=')).toStrictEqual({
        connectionString: 'postgres://cc@db.example/cc',
        options: SESSION,
      });
    });

    it('has the server cancel a statement that runs past statementTimeoutMs, and keeps the connection usable', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 1, statementTimeoutMs: 200, queryTimeoutMs: 2_000 });
      try {
        await expect(sql`select pg_sleep(2)`.execute(database.reader())).rejects.toMatchObject({
          code: '57014',
          message: 'canceling statement due to statement timeout',
        });
        const result = await sql<{ answer: number }>`select 42 as answer`.execute(database.reader());
        expect(result.rows).toStrictEqual([{ answer: 42 }]);
      } finally {
        await database.close();
      }
    });

    it('returns integer columns as numbers and bigint and numeric as exact strings', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 1 });
      try {
        const result = await sql`
          select 7::integer as small, 9007199254740993::bigint as big, 12345678901234567890.125::numeric as amount,
                 count(*) as counted from (values (1), (2)) as two(n)`.execute(database.reader());
        expect(result.rows).toStrictEqual([{ small: 7, big: '9007199254740993', amount: '12345678901234567890.125', counted: '2' }]);
      } finally {
        await database.close();
      }
    });

    it('refuses options without a sensible limit, naming every problem and never the URL', () => {
      expect(
        () =>
          new PostgresDatabase({
            url: 'postgres://cc:s3cret@db.example:5432/cc',
            poolMax: 0,
            statementTimeoutMs: 5_000,
            queryTimeoutMs: 5_000,
            idleTimeoutMs: 1.5,
          }),
      ).toThrow(
        'invalid PostgreSQL options: poolMax 0 is not a positive integer; idleTimeoutMs 1.5 is not a positive integer; ' +
          'queryTimeoutMs 5000 must exceed statementTimeoutMs 5000',
      );
      expect(() => new PostgresDatabase({ url: 'mysql://cc:s3cret@db.example/cc', poolMax: 1 })).toThrow(
        'invalid PostgreSQL options: url is not a postgres:// URL',
      );
    });
  });

  describe('a connection that goes silent', () => {
    /** One pooled connection, through a relay that can stall it; no statement groups, so every statement uses the pool. */
    const throughRelay = async (): Promise<{ relay: TcpRelay; database: PostgresDatabase; owner: pg.Client; drop: () => Promise<void> }> => {
      const fresh = await createTestDatabase();
      const owner = new pg.Client({ connectionString: fresh.url });
      await owner.connect();
      await owner.query('create table writes (id text primary key)');
      const relay = await startTcpRelay(fresh.url);
      const database = new PostgresDatabase({ url: relay.url, poolMax: 1, statementTimeoutMs: 500, queryTimeoutMs: 1_000, statementGroups: false });
      const drop = async (): Promise<void> => {
        await database.close();
        await relay.close();
        await owner.end();
        await fresh.drop();
      };
      return { relay, database, owner, drop };
    };
    const committed = async (owner: pg.Client): Promise<string[]> => (await owner.query<{ id: string }>('select id from writes order by id')).rows.map((row) => row.id);

    it('is dropped after the query timeout, so the next statement gets a new connection instead of waiting on it', async () => {
      const { relay, database, drop } = await throughRelay();
      try {
        const db = database.reader<AnySchema>();
        expect((await sql<{ n: number }>`select ${1}::int as n`.execute(db)).rows).toStrictEqual([{ n: 1 }]);
        relay.stall(0);
        await expect(sql`select ${2}::int as n`.execute(db)).rejects.toThrow('Query read timeout');
        expect((await sql<{ n: number }>`select ${3}::int as n`.execute(db)).rows).toStrictEqual([{ n: 3 }]);
        expect(relay.connections()).toBe(2);
      } finally {
        await drop();
      }
    });

    it('never leaves a transaction its caller was told failed open for a later COMMIT, nor an autocommitted write inside it', async () => {
      const { relay, database, owner, drop } = await throughRelay();
      try {
        const failed = database.transaction<AnySchema, void>(async (trx) => {
          await sql`insert into writes (id) values (${'told-failed-1'})`.execute(trx);
          relay.stall(0);
          await sql`insert into writes (id) values (${'told-failed-2'})`.execute(trx);
        });
        await expect(failed).rejects.toThrow('no answer from PostgreSQL within the query timeout; the connection is dropped');
        // The network comes back well before the server's idle-in-transaction timeout.
        relay.resume(0);
        await sleep(200);
        await database.transaction<AnySchema, void>(async (trx) => {
          await sql`insert into writes (id) values (${'later'})`.execute(trx);
        });
        await database.autocommit<AnySchema, void>(async (db) => {
          await sql`insert into writes (id) values (${'autocommitted'})`.execute(db);
        });
        expect(await committed(owner)).toStrictEqual(['autocommitted', 'later']);
      } finally {
        await drop();
      }
    });
  });

  describe('health and close', () => {
    it('is healthy on a live database and unhealthy once the database is gone, reporting the lost idle connection', async () => {
      const fresh = await createTestDatabase();
      const { logger, lines } = recordingLogger();
      const database = new PostgresDatabase({ url: fresh.url, poolMax: 2, logger });
      try {
        await expect(database.health()).resolves.toBeUndefined();
        await fresh.drop();
        await vi.waitFor(() => {
          expect(lines).toStrictEqual([
            {
              level: 'warn',
              bindings: { store: 'postgres', connection: 'pool', state: 'idle', code: '57P01', reason: 'terminating connection due to administrator command' },
              message: 'PostgreSQL connection failed; the pool replaces it',
            },
          ]);
        });
        await expect(database.health()).rejects.toMatchObject({ code: '3D000', message: `database "${fresh.name}" does not exist` });
      } finally {
        await database.close();
      }
    });

    it('fails a transaction whose session the server ended, without stopping the process, logs it, and goes on', async () => {
      const { logger, lines } = recordingLogger();
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 1, logger });
      const killer = new pg.Client({ connectionString: sharedUrl() });
      await killer.connect();
      try {
        const running = database.transaction(async (trx) => {
          await sql`select pg_sleep(5) as ended_here`.execute(trx);
        });
        // The outcome is taken from the start: the transaction can fail while the killer's own
        // query is still being answered, before the test looks, and must not count as unhandled.
        const outcome = running.then(
          () => new Error('the transaction committed although its session was ended'),
          (error: unknown) => error,
        );
        await vi.waitFor(async () => {
          const killed = await killer.query<{ n: number }>(
            `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where query like 'select pg_sleep(5) as ended_here%'`,
          );
          expect(killed.rows).toStrictEqual([{ n: 1 }]);
        });
        // Which of the session's last words reaches the transaction first depends on timing.
        const failure = await outcome;
        expect(failure).toBeInstanceOf(Error);
        expect((failure as Error).message).toMatch(
          /^(terminating connection due to administrator command|Connection terminated unexpectedly|Client has encountered a connection error and is not queryable)$/,
        );
        // Without a listener on the connection in use, its failure would have stopped the process.
        await vi.waitFor(() => {
          expect(lines).toStrictEqual([
            {
              level: 'warn',
              bindings: { store: 'postgres', connection: 'pool', state: 'in use', code: null, reason: 'Connection terminated unexpectedly' },
              message: 'PostgreSQL connection failed; the pool replaces it',
            },
          ]);
        });
        const after = await database.transaction(async (trx) => (await sql<{ answer: number }>`select 42 as answer`.execute(trx)).rows);
        expect(after).toStrictEqual([{ answer: 42 }]);
      } finally {
        await killer.end();
        await database.close();
      }
    });

    it('closes every connection and refuses work afterwards', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 4, logger: recordingLogger().logger });
      const sessions = async (): Promise<number> => {
        const client = new pg.Client({ connectionString: sharedUrl(), application_name: 'session-counter' });
        await client.connect();
        try {
          const result = await client.query<{ sessions: string }>(
            "select count(*) as sessions from pg_stat_activity where datname = current_database() and application_name = 'core-connector'",
          );
          return Number(result.rows[0]?.sessions);
        } finally {
          await client.end();
        }
      };
      await Promise.all(
        Array.from({ length: 4 }, () =>
          database.transaction<AnySchema, void>(async (trx) => {
            await sql`select pg_sleep(0.05)`.execute(trx);
          }),
        ),
      );
      expect(await sessions()).toBe(4);

      await database.close();
      expect(await sessions()).toBe(0);
      await expect(database.transaction(async () => 'never')).rejects.toThrow('database is closed');
      await expect(database.migrate(connectorMigrations)).rejects.toThrow('database is closed');
      await expect(database.health()).rejects.toThrow('database is closed');
      await expect(database.close()).resolves.toBeUndefined();
    });
  });

  describe('claimSlot', () => {
    /** Any 32-bit key space; the sandbox's float lanes use "lane". */
    const SPACE = 0x74657374;

    /** The slots held in `space` on the server, by any session, in slot order. */
    async function heldSlots(url: string, space: number): Promise<number[]> {
      const client = new pg.Client({ connectionString: url, application_name: 'slot-reader' });
      await client.connect();
      try {
        const result = await client.query<{ slot: number }>(
          `select objid::integer as slot from pg_locks where locktype = 'advisory' and objsubid = 2 and classid = $1::oid and database = (select oid from pg_database where datname = current_database()) and granted order by 1`,
          [space],
        );
        return result.rows.map((row) => row.slot);
      } finally {
        await client.end();
      }
    }

    it('gives each process a slot of its own while it lives, the same one when it asks again, and frees it on close', async () => {
      const fresh = await createTestDatabase();
      const { logger, lines } = recordingLogger();
      const open = (): PostgresDatabase => new PostgresDatabase({ url: fresh.url, poolMax: 1, logger });
      const [a, b, c] = [open(), open(), open()];
      let d: PostgresDatabase | undefined;
      try {
        expect(await a.claimSlot(SPACE, 4)).toBe(0);
        expect(await b.claimSlot(SPACE, 4)).toBe(1);
        expect(await c.claimSlot(SPACE, 4)).toBe(2);
        expect(await Promise.all([a.claimSlot(SPACE, 4), b.claimSlot(SPACE, 4), c.claimSlot(SPACE, 4)])).toEqual([0, 1, 2]);
        // Another key space is claimed apart, on the same session.
        expect(await b.claimSlot(SPACE + 1, 4)).toBe(0);
        expect(await heldSlots(fresh.url, SPACE)).toEqual([0, 1, 2]);
        expect(await heldSlots(fresh.url, SPACE + 1)).toEqual([0]);
        await b.close();
        expect(await heldSlots(fresh.url, SPACE)).toEqual([0, 2]);
        d = open();
        expect(await d.claimSlot(SPACE, 4)).toBe(1);
        expect(lines).toEqual([]);
      } finally {
        await Promise.all([a.close(), b.close(), c.close(), d?.close()]);
        await fresh.drop();
      }
    });

    it('shares a slot, and says so, when every slot is held', async () => {
      const fresh = await createTestDatabase();
      const { logger, lines } = recordingLogger();
      const databases = [0, 1, 2].map(() => new PostgresDatabase({ url: fresh.url, poolMax: 1, logger }));
      try {
        expect(await databases[0]!.claimSlot(SPACE, 2)).toBe(0);
        expect(await databases[1]!.claimSlot(SPACE, 2)).toBe(1);
        expect(await databases[2]!.claimSlot(SPACE, 2)).toBe(process.pid % 2);
        expect(lines).toEqual([
          { level: 'info', bindings: { space: SPACE, slots: 2, slot: process.pid % 2 }, message: 'every slot is held by another process; this one shares a slot' },
        ]);
        expect(await heldSlots(fresh.url, SPACE)).toEqual([0, 1]);
        // The third holds nothing, so it keeps no session open for it: two sessions, not three.
        const sessions = new pg.Client({ connectionString: fresh.url, application_name: 'session-counter' });
        await sessions.connect();
        try {
          const open = await sessions.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'core-connector'`);
          expect(open.rows).toEqual([{ n: 2 }]);
        } finally {
          await sessions.end();
        }
      } finally {
        await Promise.all(databases.map((database) => database.close()));
        await fresh.drop();
      }
    });

    it('keeps its slot when the session holding it ends, logs it, and the slot is free for a process that starts later', async () => {
      const fresh = await createTestDatabase();
      const { logger, lines } = recordingLogger();
      const first = new PostgresDatabase({ url: fresh.url, poolMax: 1, logger });
      let later: PostgresDatabase | undefined;
      const killer = new pg.Client({ connectionString: fresh.url });
      await killer.connect();
      try {
        expect(await first.claimSlot(SPACE, 4)).toBe(0);
        const killed = await killer.query<{ n: number }>(
          `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = current_database() and query like 'select pg_try_advisory_lock%'`,
        );
        expect(killed.rows).toEqual([{ n: 1 }]);
        await vi.waitFor(() => expect(lines).toHaveLength(1));
        expect(lines[0]).toMatchObject({
          level: 'warn',
          bindings: { store: 'postgres', connection: 'slots', slots: [`${SPACE}/0`] },
          message: 'PostgreSQL connection failed; the slots it held are free for other processes',
        });
        expect((lines[0]!.bindings as { reason: string }).reason).toMatch(/^(terminating connection due to administrator command|Connection terminated unexpectedly)$/);
        await vi.waitFor(async () => expect(await heldSlots(fresh.url, SPACE)).toEqual([]));
        // The process goes on with the slot it was given; a process that starts now may take it too.
        expect(await first.claimSlot(SPACE, 4)).toBe(0);
        later = new PostgresDatabase({ url: fresh.url, poolMax: 1, logger });
        expect(await later.claimSlot(SPACE, 4)).toBe(0);
        // The lost session is forgotten: a claim in another key space opens a new one and takes a free slot.
        expect(await first.claimSlot(SPACE + 1, 4)).toBe(0);
        expect(await heldSlots(fresh.url, SPACE + 1)).toEqual([0]);
        expect(lines).toHaveLength(1);
      } finally {
        await killer.end();
        await Promise.all([first.close(), later?.close()]);
        await fresh.drop();
      }
    });

    it('closes a slots\' session that goes silent, and claims on a new one once the network is back', async () => {
      const fresh = await createTestDatabase();
      const relay = await startTcpRelay(fresh.url);
      const { logger, lines } = recordingLogger();
      const database = new PostgresDatabase({ url: relay.url, poolMax: 1, statementTimeoutMs: 500, queryTimeoutMs: 1_000, logger });
      try {
        expect(await database.claimSlot(SPACE, 4)).toBe(0);
        relay.stall(0);
        expect(await database.claimSlot(SPACE + 1, 4)).toBe(process.pid % 4);
        await vi.waitFor(() => expect(lines).toHaveLength(2));
        expect(lines).toEqual([
          { level: 'warn', bindings: { space: SPACE + 1, slots: 4, slot: process.pid % 4, reason: 'Query read timeout' }, message: 'no slot could be claimed; this process shares a slot' },
          {
            level: 'warn',
            bindings: { store: 'postgres', connection: 'slots', slots: [`${SPACE}/0`], reason: 'no answer from PostgreSQL within the query timeout; the connection is dropped' },
            message: 'PostgreSQL connection failed; the slots it held are free for other processes',
          },
        ]);
        relay.resume(0);
        expect(await database.claimSlot(SPACE + 2, 4)).toBe(0);
        expect(relay.connections()).toBe(2);
        expect(await heldSlots(fresh.url, SPACE + 2)).toEqual([0]);
      } finally {
        await database.close();
        await relay.close();
        await fresh.drop();
      }
    });

    it('answers a shared slot, and says why, when no session can be opened', async () => {
      const { logger, lines } = recordingLogger();
      const database = new PostgresDatabase({ url: 'postgres://cc:open-sesame@127.0.0.1:1/cc', poolMax: 1, logger, connectionTimeoutMs: 1_000 });
      try {
        expect(await database.claimSlot(SPACE, 4)).toBe(process.pid % 4);
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatchObject({ level: 'warn', bindings: { space: SPACE, slots: 4, slot: process.pid % 4 }, message: 'no slot could be claimed; this process shares a slot' });
        expect((lines[0]!.bindings as { reason: string }).reason).toMatch(/ECONNREFUSED/);
        expect(JSON.stringify(lines)).not.toContain('open-sesame');
      } finally {
        await database.close();
      }
    });

    it('refuses a key space or count it cannot take, and claims nothing once closed', async () => {
      const database = new PostgresDatabase({ url: sharedUrl(), poolMax: 1, logger: recordingLogger().logger });
      await expect(database.claimSlot(2 ** 31, 4)).rejects.toThrow('slot key space 2147483648 is not a 32-bit integer');
      await expect(database.claimSlot(1.5, 4)).rejects.toThrow('slot key space 1.5 is not a 32-bit integer');
      await expect(database.claimSlot(SPACE, 0)).rejects.toThrow('slot count 0 is not between 1 and 1024');
      await expect(database.claimSlot(SPACE, 1025)).rejects.toThrow('slot count 1025 is not between 1 and 1024');
      await database.close();
      await expect(database.claimSlot(SPACE, 4)).rejects.toThrow('database is closed');
    });
  });

  describe('test database helper', () => {
    it('fails loudly, without the password, when the server cannot be reached', async () => {
      const unreachable = 'postgres://postgres:hunter2@127.0.0.1:1/postgres';
      const attempt = createTestDatabase(unreachable);
      await expect(attempt).rejects.toThrow(
        /^PostgreSQL is required by these tests and is not reachable at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/postgres \(.+\)\. Start it, or set TEST_DATABASE_URL/,
      );
      await expect(attempt).rejects.not.toThrow(/hunter2/);
    });
  });
});
