import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Kysely, PostgresDialect, sql, type QueryResult } from 'kysely';
import type { Logger } from '../../ports/logger.js';
import { applyMigrations, ping } from './migrator.js';
import { StatementGroups } from './postgres-statement-groups.js';
import { shapedSending } from './postgres-rows.js';
import { preparingQuery, StatementNames, type StatementNamingOptions } from './postgres-statements.js';
import { runDirectly } from './query-template.js';
import { checkSlotRequest, type AnySchema, type DatabaseWork, type Migration, type SqlDatabase } from './sql-database.js';

export interface PostgresDatabaseOptions {
  /** postgres:// URL. It may carry a password, so it is never logged or put in an error. */
  readonly url: string;
  /** The most connections this process opens; each concurrent transaction holds one. */
  readonly poolMax: number;
  /** Longest wait for a new connection or, when the pool is full, for a free one. */
  readonly connectionTimeoutMs?: number | undefined;
  /** An unused connection is closed after this long. */
  readonly idleTimeoutMs?: number | undefined;
  /** The server cancels any statement running longer than this. */
  readonly statementTimeoutMs?: number | undefined;
  /**
   * The client gives up on an answer after this long, for a server or network that has gone
   * silent. Longer than `statementTimeoutMs`, so that a slow statement is normally cancelled by
   * the server first and the connection stays usable.
   */
  readonly queryTimeoutMs?: number | undefined;
  /** The server ends a session left inside a transaction without a statement for this long. */
  readonly idleInTransactionTimeoutMs?: number | undefined;
  /** Longest wait at start-up for another replica that is migrating the same database. */
  readonly migrationLockWaitMs?: number | undefined;
  /** Receives failures of idle pooled connections (server restart, terminated session). */
  readonly logger?: Logger | undefined;
  /**
   * Parameterised statements run as named prepared statements (default true): each connection
   * parses and plans them once. Off for a pooler that does not keep a session per client (for
   * example PgBouncer in transaction mode without prepared-statement support).
   */
  readonly preparedStatements?: boolean | undefined;
  /** Limits on which statements get a name (see postgres-statements.ts). */
  readonly statementNaming?: StatementNamingOptions | undefined;
  /**
   * Statements that arrive in one turn of the event loop, or while one is in flight, go
   * together, written at once on a pipelined connection (default true; see
   * postgres-statement-groups.ts): autocommitted statements as one transaction (commit groups),
   * quick reads each on its own (read groups). Off: each statement is its own round trip, and
   * each autocommitted one its own commit.
   */
  readonly statementGroups?: boolean | undefined;
}

export const POSTGRES_DEFAULTS = {
  connectionTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: 10_000,
  queryTimeoutMs: 15_000,
  idleInTransactionTimeoutMs: 60_000,
  migrationLockWaitMs: 120_000,
} as const;

/**
 * Key of the transaction-level advisory lock held while migrating: the ASCII bytes of
 * "ccmigrat" read as a 64-bit integer. Every replica of the connector uses the same key.
 */
const MIGRATION_LOCK_KEY = '7161688131923763572';
const MIGRATION_LOCK_FIRST_POLL_MS = 20;
const MIGRATION_LOCK_MAX_POLL_MS = 500;
/** Silence on the migrations' connection after which the operating system starts probing it. */
const MIGRATION_KEEPALIVE_MS = 30_000;
/**
 * How long a statement of a commit group waits for a lock before the group is rolled back and
 * its statements run alone: well below PostgreSQL's deadlock_timeout (1 s by default).
 */
const GROUP_LOCK_TIMEOUT_MS = 100;
/**
 * The longest a commit group may run before it is cancelled and its statements run alone. A
 * transaction that comes to wait on a row the group holds does so after the group began, and
 * PostgreSQL checks it for a deadlock only after deadlock_timeout (1 s by default): cancelled
 * by then, the group never holds it that long. Groups take milliseconds; only a server slowed
 * to a crawl makes one run this long.
 */
const GROUP_TIME_BUDGET_MS = 500;
/** Most statements in one group. */
const GROUP_MAX_STATEMENTS = 64;
/**
 * Sent with every session's start. Its transactions run at READ COMMITTED whatever the server's,
 * the database's or the role's default. The stores' compare-and-set statements rely on it: a
 * statement that waited for a row another transaction changed reads the row again and finds
 * its condition no longer holds (nothing changed), where REPEATABLE READ or SERIALIZABLE would
 * fail it with a serialization error (40001). Transactions that need a snapshot (the ledgers'
 * conservation checks) set their own level.
 *
 * And the server probes the connection after 30 s of silence, every 10 s, and ends the session
 * after 3 unanswered probes: a session whose client is gone without a word (a network cut, a
 * host lost; the connector closes its own silent connections, but the close may never arrive)
 * is ended in about a minute, with its locks and its connection slot, where the system's
 * default waits two hours. Every network drop would otherwise leave up to a replica's whole
 * pool behind on the server, until `max_connections` refuses everyone. Over a Unix socket these
 * settings do nothing.
 */
const SESSION_OPTIONS = '-c default_transaction_isolation=read\\ committed -c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3';

/**
 * PostgreSQL through a `pg` pool. Each `transaction` call is one READ COMMITTED transaction on
 * its own pooled connection; there is no grouping as on SQLite, because the server commits
 * concurrent transactions in parallel and several replicas may share the database.
 *
 * Types as `pg` returns them: `integer` columns as numbers, `bigint` and `numeric` as strings
 * (never narrowed to a JS number here), `boolean` as booleans.
 */
export class PostgresDatabase implements SqlDatabase {
  readonly dialect = 'postgres' as const;
  readonly #db: Kysely<AnySchema>;
  /** The same pool, its statements sent unnamed (listReader). */
  readonly #listDb: Kysely<AnySchema>;
  readonly #pool: pg.Pool;
  /** Commit groups (autocommitted statements) and read groups (quick reads), unless turned off. */
  readonly #grouping: { readonly commits: Grouping; readonly reads: Grouping } | undefined;
  readonly #migrationLockWaitMs: number;
  readonly #closeWaitMs: number;
  readonly #queryTimeoutMs: number;
  readonly #statementTimeoutMs: number;
  /** Connections whose socket is still open, so that `close` can wait for them. */
  readonly #connections = new Set<pg.PoolClient>();
  #closed = false;
  readonly #counts = { statements: 0, roundTrips: 0, transactions: 0, commits: 0 };
  /** The settings of every connection, for the slots' session. */
  readonly #connection: pg.PoolConfig;
  readonly #logger: Logger | undefined;
  /** Slots claimed by this process, by key space and count (claimSlot). */
  readonly #slots = new Map<string, Promise<number>>();
  /** The session that holds the slots' advisory locks, opened by a claim, forgotten once lost. */
  #slotSession: Promise<SlotSession> | undefined;

  constructor(options: PostgresDatabaseOptions) {
    const settings = checkedSettings(options);
    this.#migrationLockWaitMs = settings.migrationLockWaitMs;
    this.#closeWaitMs = settings.connectionTimeoutMs;
    this.#queryTimeoutMs = settings.queryTimeoutMs;
    this.#statementTimeoutMs = settings.statementTimeoutMs;
    // Every connection of this process, pooled or of a group, has the same limits.
    const connection: pg.PoolConfig = {
      ...sessionStart(options.url),
      connectionTimeoutMillis: settings.connectionTimeoutMs,
      idleTimeoutMillis: settings.idleTimeoutMs,
      statement_timeout: settings.statementTimeoutMs,
      query_timeout: settings.queryTimeoutMs,
      idle_in_transaction_session_timeout: settings.idleInTransactionTimeoutMs,
      application_name: 'core-connector',
      keepAlive: true,
    };
    this.#connection = connection;
    const pool = new pg.Pool({ ...connection, max: options.poolMax });
    this.#logger = options.logger;
    this.#watch(pool, 'pool');
    const names = options.preparedStatements === false ? undefined : new StatementNames(options.statementNaming);
    pool.on('connect', (client) => {
      // Every query of the client is one round trip (pg sends parse, bind and execute together),
      // counted below the naming so that a DEALLOCATE or a retry it sends is counted too.
      const sent = shapedSending(client.query.bind(client) as (...args: unknown[]) => unknown);
      const counts = this.#counts;
      const counted = (...args: unknown[]): unknown => {
        counts.statements += 1;
        counts.roundTrips += 1;
        const answer = sent(...args);
        if (answer instanceof Promise) answer.catch((error: unknown) => dropAfterReadTimeout(client, error));
        return answer;
      };
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = names === undefined ? counted : preparingQuery(counted, names);
    });
    this.#pool = pool;
    this.#db = new Kysely<AnySchema>({ dialect: new PostgresDialect({ pool }) });
    this.#listDb = new Kysely<AnySchema>({ dialect: new PostgresDialect({ pool: unnamedStatements(pool) as unknown as pg.Pool }) });

    this.#grouping =
      options.statementGroups === false
        ? undefined
        : {
            commits: this.#grouped('commit', names),
            reads: this.#grouped('read', names),
          };
  }

  /** One kind of statement groups: their connection's pool, the groups, and the Kysely view that feeds them. */
  #grouped(mode: 'commit' | 'read', names: StatementNames | undefined): Grouping {
    const pool = this.#pool;
    const groupPool = new pg.Pool({
      ...this.#connection,
      max: 1,
      // Groups watch for a silent server themselves (watchSilence in postgres-statement-groups.ts).
      query_timeout: 0,
      ...(mode === 'commit' ? { lock_timeout: GROUP_LOCK_TIMEOUT_MS } : {}),
      // Not in @types/pg yet: the client writes each query without waiting for the one before.
      ...({ pipeline: true } as object),
    });
    this.#watch(groupPool, mode === 'commit' ? 'commit groups' : 'read groups');
    const counts = this.#counts;
    const groups = new StatementGroups({
      mode,
      pool: groupPool,
      single: async (text, values) => {
        const client = await pool.connect();
        try {
          return await client.query(text, [...values]);
        } finally {
          client.release();
        }
      },
      names,
      maxGroup: GROUP_MAX_STATEMENTS,
      silenceMs: this.#queryTimeoutMs,
      ...(mode === 'commit'
        ? {
            budgetMs: GROUP_TIME_BUDGET_MS,
            cancel: async (processId: number) => {
              try {
                await pool.query('select pg_cancel_backend($1::integer)', [processId]);
              } catch (error) {
                // The group then runs to its end, as it would have without a budget.
                this.#report('warn', { store: 'postgres', connection: 'commit groups', reason: error instanceof Error ? error.message : String(error) }, 'a commit group over its time budget could not be cancelled');
              }
            },
          }
        : {}),
      count: (work) => {
        counts.statements += work.statements;
        counts.roundTrips += work.roundTrips;
        counts.commits += work.commits;
      },
    });
    // Kysely sees a pool of one client whose every query goes to the groups.
    const client = { query: (text: string, values: unknown[]) => groups.run(text, values), release: () => undefined };
    const groupingPool = { connect: async () => client, end: async () => undefined };
    const db = new Kysely<AnySchema>({ dialect: new PostgresDialect({ pool: groupingPool as unknown as pg.Pool }) });
    // Templates skip Kysely's executor here; answered as its PostgresDriver answers.
    runDirectly(db, async (text, parameters) => kyselyResult(await groups.run(text, parameters)));
    return { db, groups, pool: groupPool };
  }

  /**
   * Keeps track of a pool's connections for `close`, and listens for their failures. A connection
   * that fails while idle is dropped by the pool; one that fails while in use (the server
   * restarted, the session was terminated) fails the statements it was running, and the pool
   * drops it when it is given back. Either way the failure is logged; without a listener, Node
   * would treat it as an uncaught exception and stop the process.
   */
  #watch(pool: pg.Pool, connection: 'pool' | 'commit groups' | 'read groups' | 'migrations'): void {
    const inUse = new Set<pg.PoolClient>();
    const log = (error: Error, state: 'idle' | 'in use'): void => {
      const code = 'code' in error && typeof error.code === 'string' ? error.code : null;
      this.#report('warn', { store: 'postgres', connection, state, code, reason: error.message }, 'PostgreSQL connection failed; the pool replaces it');
    };
    pool.on('error', (error: Error) => log(error, 'idle'));
    pool.on('acquire', (client) => inUse.add(client));
    pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => inUse.delete(client));
    pool.on('connect', (client) => {
      this.#connections.add(client);
      client.once('end', () => {
        this.#connections.delete(client);
        inUse.delete(client);
      });
      // While idle, the pool's own listener reports the failure (above).
      client.on('error', (error: Error) => {
        if (inUse.has(client)) log(error, 'in use');
      });
    });
  }

  reader<S>(): Kysely<S> {
    return this.#db as unknown as Kysely<S>;
  }

  listReader<S>(): Kysely<S> {
    return this.#listDb as unknown as Kysely<S>;
  }

  snapshot<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T> {
    try {
      this.#assertOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#listDb
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute((trx) => work(trx as unknown as Kysely<S>));
  }

  quickReader<S>(): Kysely<S> {
    return (this.#grouping?.reads.db ?? this.#db) as unknown as Kysely<S>;
  }

  work(): DatabaseWork {
    return { ...this.#counts };
  }

  async transaction<S, T>(work: (trx: Kysely<S>) => Promise<T>): Promise<T> {
    this.#assertOpen();
    this.#counts.transactions += 1;
    const result = await this.#db
      .transaction()
      .setIsolationLevel('read committed')
      .execute((trx) => work(trx as unknown as Kysely<S>));
    this.#counts.commits += 1;
    return result;
  }

  async autocommit<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T> {
    this.#assertOpen();
    this.#counts.transactions += 1;
    if (this.#grouping !== undefined) return work(this.#grouping.commits.db as unknown as Kysely<S>);
    const result = await work(this.#db as unknown as Kysely<S>);
    this.#counts.commits += 1;
    return result;
  }

  claimSlot(space: number, slots: number): Promise<number> {
    try {
      checkSlotRequest(space, slots);
      this.#assertOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    const key = `${space}/${slots}`;
    let claim = this.#slots.get(key);
    if (claim === undefined) {
      claim = this.#claim(space, slots);
      this.#slots.set(key, claim);
    }
    return claim;
  }

  /** Tries the slots in order on the slots' session; never fails (see SqlDatabase.claimSlot). */
  async #claim(space: number, slots: number): Promise<number> {
    const shared = process.pid % slots;
    let session: SlotSession | undefined;
    try {
      session = await this.#openSlotSession();
      for (let slot = 0; slot < slots; slot += 1) {
        const result = await session.client.query<{ locked: boolean }>('select pg_try_advisory_lock($1::integer, $2::integer) as locked', [space, slot]);
        if (result.rows[0]?.locked === true) {
          session.held.push(`${space}/${slot}`);
          return slot;
        }
      }
      this.#report('info', { space, slots, slot: shared }, 'every slot is held by another process; this one shares a slot');
      // A session that holds nothing is not kept open for nothing; a later claim opens another.
      if (session.held.length === 0) this.#forgetSlotSession(session);
    } catch (error) {
      if (session !== undefined) {
        // A session that went silent is closed (its loss is then logged as any other); one that
        // holds nothing is not kept.
        dropAfterReadTimeout(session.client, error);
        if (session.held.length === 0) this.#forgetSlotSession(session);
      }
      this.#report('warn', { space, slots, slot: shared, reason: error instanceof Error ? error.message : String(error) }, 'no slot could be claimed; this process shares a slot');
    }
    return shared;
  }

  /**
   * One session of its own, kept open while it holds a slot: a session-level advisory lock lasts
   * as long as the session that took it. Should the session fail, the slots already given stay
   * in use (a hint only) and the failure is logged, naming them; the locks are gone, so a
   * process that starts later may take the same slots. The lost session is forgotten, so that a
   * later claim (another key space) opens a new one.
   */
  #openSlotSession(): Promise<SlotSession> {
    if (this.#slotSession === undefined) {
      const client = new pg.Client(this.#connection);
      const session: SlotSession = { client, held: [] };
      // A session ended by the server reports its last words, then the lost connection: once is enough.
      let lost = false;
      const onLost = (reason: string): void => {
        if (lost) return;
        lost = true;
        this.#forgetSlotSession(session);
        // Closing ends the session on purpose.
        if (session.held.length > 0 && !this.#closed) {
          this.#report('warn', { store: 'postgres', connection: 'slots', slots: [...session.held], reason }, 'PostgreSQL connection failed; the slots it held are free for other processes');
        }
      };
      client.on('error', (error: Error) => onLost(error.message));
      client.on('end', () => onLost('the session ended'));
      const opening = client.connect().then(() => session);
      // A session that did not open is not kept: a later claim tries again.
      opening.catch(() => {
        if (this.#slotSession === opening) this.#slotSession = undefined;
      });
      this.#slotSession = opening;
      session.opening = opening;
    }
    return this.#slotSession;
  }

  /** Ends a slots' session (if it is still open) and forgets it, unless a newer one replaced it. */
  #forgetSlotSession(session: SlotSession): void {
    if (this.#slotSession !== undefined && this.#slotSession === session.opening) this.#slotSession = undefined;
    session.client.end().catch(() => undefined);
  }

  #report(level: 'info' | 'warn', bindings: Record<string, unknown>, message: string): void {
    if (this.#logger === undefined) process.stderr.write(`${message}: ${JSON.stringify(bindings)}\n`);
    else this.#logger[level](bindings, message);
  }

  /**
   * Applies all pending migrations in one transaction that first takes an advisory lock, so
   * replicas starting together take turns: the first applies the migrations and commits, the
   * next finds them recorded and applies nothing. DDL is transactional in PostgreSQL, so a
   * failing migration leaves the schema as it was. A migration must therefore be able to run
   * inside a transaction (no CREATE INDEX CONCURRENTLY).
   *
   * They run on a connection of their own, without the limits meant for the payment path (the
   * server's statement timeout, the client's query timeout): an upgrade's migration may update
   * every row of a large table in one statement, and a limit would refuse it at every start.
   * A lock is waited for at most half the payment path's statement timeout: a migration whose DDL
   * waits on a table lock (a dump, an operator's open transaction) makes every statement on that
   * table queue behind it, so it gives way (the start fails, to be tried again) while those
   * statements can still finish within their own limit. The connection is probed by TCP
   * keepalive after 30 s of silence, so a lost server ends the start once the operating
   * system's probes fail (about 11 minutes more with Linux's defaults) instead of two hours.
   * The server's idle-in-transaction timeout stays: the migrations never wait between statements.
   */
  async migrate(migrations: readonly Migration[]): Promise<void> {
    this.#assertOpen();
    const pool = new pg.Pool({ ...this.#connection, max: 1, statement_timeout: 0, query_timeout: 0, keepAliveInitialDelayMillis: MIGRATION_KEEPALIVE_MS });
    this.#watch(pool, 'migrations');
    const db = new Kysely<AnySchema>({ dialect: new PostgresDialect({ pool }) });
    try {
      await db
        .transaction()
        .setIsolationLevel('read committed')
        .execute(async (trx) => {
          // A zero statement_timeout is not sent at connection; a role's or database's own applies then.
          await sql`set local statement_timeout = 0`.execute(trx);
          await sql.raw(`set local lock_timeout = ${Math.max(1, Math.floor(this.#statementTimeoutMs / 2))}`).execute(trx);
          await this.#takeMigrationLock(trx);
          await applyMigrations(trx, migrations, (work) => work(trx));
        });
    } finally {
      await db.destroy();
    }
  }

  /**
   * Polls for the lock rather than blocking on it, so that the wait has its own limit instead
   * of the statement timeout meant for ordinary queries.
   */
  async #takeMigrationLock(trx: Kysely<AnySchema>): Promise<void> {
    const deadline = Date.now() + this.#migrationLockWaitMs;
    let pollMs = MIGRATION_LOCK_FIRST_POLL_MS;
    for (;;) {
      const result = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint) as locked`.execute(trx);
      if (result.rows[0]?.locked === true) return;
      const leftMs = deadline - Date.now();
      if (leftMs <= 0) {
        throw new Error(`waited ${this.#migrationLockWaitMs} ms for another replica to finish migrating the database`);
      }
      await sleep(Math.min(pollMs, leftMs));
      pollMs = Math.min(pollMs * 2, MIGRATION_LOCK_MAX_POLL_MS);
    }
  }

  /** Healthy when a pooled connection answers and the server accepts writes (not a standby). */
  async health(): Promise<void> {
    this.#assertOpen();
    await ping(this.#db);
    const result = await sql<{ in_recovery: boolean }>`select pg_is_in_recovery() as in_recovery`.execute(this.#db);
    const inRecovery = result.rows[0]?.in_recovery;
    if (inRecovery !== false) throw new Error('PostgreSQL server is a read-only standby (in recovery)');
  }

  /**
   * Waits for the transactions under way, then closes every connection. The pool's own `end`
   * resolves before the sockets are closed; waiting for them means that, once this resolves,
   * the server no longer counts this process's sessions.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The groups in flight finish first: a statement of one that was rolled back runs again
    // alone through the ordinary pool, which must still be open for it.
    await Promise.all([this.#grouping?.commits.groups.close(), this.#grouping?.reads.groups.close()]);
    await this.#db.destroy();
    // Kysely ends the pool only if it used it itself; the groups' lone statements use it directly.
    if (!this.#pool.ending) await this.#pool.end();
    await this.#grouping?.commits.pool.end();
    await this.#grouping?.reads.pool.end();
    // Ending the slots' session frees its slots for other processes.
    await this.#slotSession?.then(
      (session) => session.client.end().catch(() => undefined),
      () => undefined,
    );
    // A connection still in the set has not ended yet (the set drops it on 'end'), and no event
    // can arrive between reading the set and listening, so none of these waits is missed.
    const ended = Promise.all(
      [...this.#connections].map((client) => new Promise<void>((resolve) => client.once('end', () => resolve()))),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timed out'>((resolve) => {
      timer = setTimeout(() => resolve('timed out'), this.#closeWaitMs);
    });
    try {
      const outcome = await Promise.race([ended.then(() => 'ended' as const), timedOut]);
      if (outcome === 'timed out') {
        throw new Error(`${this.#connections.size} PostgreSQL connections still open ${this.#closeWaitMs} ms after close`);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('database is closed');
  }
}

/** One kind of statement groups: their connection's pool, the groups, and the Kysely view that feeds them. */
interface Grouping {
  readonly db: Kysely<AnySchema>;
  readonly groups: StatementGroups;
  readonly pool: pg.Pool;
}

type Settings = { -readonly [Name in keyof typeof POSTGRES_DEFAULTS]: number };

/** The slots' session: its connection, the slots it holds ("space/slot"), and the promise that opened it. */
interface SlotSession {
  readonly client: pg.Client;
  readonly held: string[];
  opening?: Promise<SlotSession>;
}

/**
 * Ends a connection on which `pg` gave up waiting for an answer (`query_timeout`). `pg` answers
 * the caller but leaves the statement running on the connection, and drops what was queued
 * behind it (a ROLLBACK among them); Kysely then gives the connection back as healthy. Reused,
 * it would keep the failed transaction open, and the next transaction's COMMIT on it would
 * commit what its caller was told had failed. Ended, the pool drops it when it comes back, and
 * the server rolls the transaction back when it sees the session gone.
 */
function dropAfterReadTimeout(client: pg.ClientBase, error: unknown): void {
  if (!(error instanceof Error) || error.message !== 'Query read timeout') return;
  const connection = (client as unknown as { connection?: { stream?: { destroy?: (error: Error) => void } } }).connection;
  connection?.stream?.destroy?.(new Error('no answer from PostgreSQL within the query timeout; the connection is dropped'));
}

/**
 * The pool as Kysely sees it, each statement of its clients sent as a query without a name: not
 * prepared for later runs (see preparingQuery), so PostgreSQL plans it with its values. Closing
 * it leaves the pool open (the database closes the pool).
 */
function unnamedStatements(pool: pg.Pool): { connect(): Promise<unknown>; end(): Promise<void> } {
  return {
    async connect() {
      const client = await pool.connect();
      return {
        query: (text: string, values: unknown[]) => client.query({ text, values }),
        release: (error?: Error | boolean) => client.release(error),
      };
    },
    end: async () => undefined,
  };
}

/**
 * The URL and the session's start-up options. A URL's own `options` parameter (`-c` settings of
 * an operator's choosing) would replace the connector's, since `pg` lets the URL win: they are
 * taken from it and sent first, so that the connector's setting, sent last, holds.
 */
export function sessionStart(url: string): { readonly connectionString: string; readonly options: string } {
  const parsed = new URL(url);
  const own = parsed.searchParams.get('options');
  if (own === null) return { connectionString: url, options: SESSION_OPTIONS };
  parsed.searchParams.delete('options');
  return { connectionString: parsed.toString(), options: own.trim() === '' ? SESSION_OPTIONS : `${own} ${SESSION_OPTIONS}` };
}

/** Options come from configuration; a nonsensical limit is refused rather than passed to `pg`. */
function checkedSettings(options: PostgresDatabaseOptions): Settings {
  const settings: Settings = {
    connectionTimeoutMs: options.connectionTimeoutMs ?? POSTGRES_DEFAULTS.connectionTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs ?? POSTGRES_DEFAULTS.idleTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
    queryTimeoutMs: options.queryTimeoutMs ?? POSTGRES_DEFAULTS.queryTimeoutMs,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? POSTGRES_DEFAULTS.idleInTransactionTimeoutMs,
    migrationLockWaitMs: options.migrationLockWaitMs ?? POSTGRES_DEFAULTS.migrationLockWaitMs,
  };
  const problems: string[] = [];
  if (!Number.isSafeInteger(options.poolMax) || options.poolMax < 1) problems.push(`poolMax ${options.poolMax} is not a positive integer`);
  for (const [name, value] of Object.entries(settings)) {
    if (!Number.isSafeInteger(value) || value < 1) problems.push(`${name} ${value} is not a positive integer`);
  }
  if (settings.queryTimeoutMs <= settings.statementTimeoutMs) {
    problems.push(`queryTimeoutMs ${settings.queryTimeoutMs} must exceed statementTimeoutMs ${settings.statementTimeoutMs}`);
  }
  if (!/^postgres(ql)?:\/\//.test(options.url) || !URL.canParse(options.url)) {
    problems.push('url is not a postgres:// URL');
  }
  if (problems.length > 0) throw new Error(`invalid PostgreSQL options: ${problems.join('; ')}`);
  return settings;
}

const AFFECTING_COMMANDS: ReadonlySet<string> = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE']);

/** A pg result as Kysely's PostgresDriver gives it: rows affected only for a data-changing command. */
function kyselyResult(result: pg.QueryResult): QueryResult<unknown> {
  const rows = (result.rows as unknown[] | undefined) ?? [];
  return AFFECTING_COMMANDS.has(result.command) ? { numAffectedRows: BigInt(result.rowCount ?? 0), rows } : { rows };
}
