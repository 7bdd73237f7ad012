import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../ports/logger.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { connectorMigrations } from './connector-migrations.js';
import { PostgresDatabase } from './postgres-database.js';
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
          expect(await appliedMigrations(replica)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns', 'test-002-slow']);
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
        expect(await appliedMigrations(database)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns']);
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
        expect(await appliedMigrations(database)).toStrictEqual(['connector-001-inbound', 'connector-002-audit-columns']);
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
