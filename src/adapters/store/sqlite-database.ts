import { existsSync, mkdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type KyselyPlugin, type PluginTransformResultArgs, type QueryResult, type SqliteDatabase as KyselySqliteDatabase, type SqliteStatement, type UnknownRow } from 'kysely';
import { DurabilityGate, fileSync, type FileSync } from './durability-gate.js';
import { applyMigrations, ping } from './migrator.js';
import { runDirectly } from './query-template.js';
import { readingStatement } from './sqlite-rows.js';
import { checkSlotRequest, type AnySchema, type DatabaseWork, type Migration, type SqlDatabase } from './sql-database.js';

/** The most transactions committed by one fsync; bounds the latency of the last in a group. */
const MAX_GROUP_SIZE = 256;
const STATEMENT_CACHE_SIZE = 512;
/**
 * Pages in the log before a commit copies them into the database file (SQLite's default is
 * 1,000). The copy runs inside that commit, on the event loop, with two fsyncs; at 8,000 (about
 * 32 MiB of 4 KiB pages) it runs an eighth as often and copies a page written many times since
 * (a float shard, an index's upper pages) once: 38% less time in commits in the benchmark.
 */
const LOG_PAGES_BEFORE_CHECKPOINT = 8000;
/**
 * fsyncs of the log that may run at once: a group committed while one runs starts its own
 * instead of waiting for it to end. Two gave more lifecycles per second than one in 7 of 8
 * alternating benchmark pairs (median +21% in five of them), three about the same as two.
 */
const SYNCS_IN_FLIGHT = 2;
/**
 * Each connection's page cache, in KiB: SQLite's own default. better-sqlite3 builds SQLite with
 * 16,000 KiB instead, and under load the two connections filled much of it: the process's malloc
 * heap grew from 7 to 27-28 MiB in a whole benchmark run, against 9-11 MiB with this, and the
 * benchmark could not tell their throughput apart. A page not held here is read from the
 * operating system's cache; a group that dirties more pages than fit writes the rest to the log
 * before its commit, as SQLite does whenever its cache is full.
 */
export const PAGE_CACHE_KIB = 2000;
/**
 * At most this often a sync of the log also checks that the database's file and its log are
 * still the ones the connections opened (see #checkFiles).
 */
const FILE_CHECK_INTERVAL_MS = 1000;

interface PendingWork {
  readonly work: (trx: Kysely<AnySchema>) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Health's own empty transaction, which writes nothing and so proves nothing about the disk. */
  readonly probe: boolean;
}

/** SQLite's answers that come from the storage under the file rather than from the statement. */
const STORAGE_FAILURE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB)/;

export interface SqliteDatabaseOptions {
  /** How the write-ahead log at `path` is made durable; the default is an fsync on libuv's thread pool. */
  readonly logSync?: (path: string) => FileSync;
  /** Called once close() has closed every connection (the connector's store: the file lock's release, `holdFileLock`). */
  readonly onClose?: () => void;
}

/** The file is held by another process: the connector does not start beside it. */
export class SqliteFileInUse extends Error {}

/**
 * Keeps `path` for this process alone: SQLite serves one connector process (its recovery workers
 * do not share work, and an upgrade's migrations would change tables under the other process's
 * statements), but nothing in SQLite stops a second one from opening the same file. The lock is
 * an exclusive transaction held open on a small database of its own beside the file
 * (`<path>.lock`), which a second opener cannot begin; the operating system drops it when the
 * process ends, however it ends, so a killed connector never leaves it behind. The file system
 * must honour byte-range locks between processes (a local disk does; some network file systems
 * do not, and SQLite itself is not safe on them). Answers its release.
 */
export function holdFileLock(path: string): () => void {
  // The file's own name, links resolved, so that a path through a symbolic link finds the same lock.
  const real = existsSync(path) ? realpathSync(path) : join(realpathSync(dirname(path)), basename(path));
  const lockPath = `${real}.lock`;
  const connection = new BetterSqlite3(lockPath, { timeout: 0 });
  try {
    connection.exec('begin exclusive');
  } catch (error) {
    connection.close();
    if (error instanceof Error && 'code' in error && error.code === 'SQLITE_BUSY') {
      throw new SqliteFileInUse(`the SQLite file ${path} is in use by another connector process (it holds ${lockPath}): one process per SQLite file; stop the other, or run several replicas on PostgreSQL`, { cause: error });
    }
    throw error;
  }
  return () => {
    if (!connection.open) return;
    connection.exec('rollback');
    connection.close();
  };
}

/**
 * SQLite through better-sqlite3, in WAL mode: a transaction is on disk when its promise
 * resolves. Transactions that arrive while another group is being written are committed
 * together as the next group, each inside its own savepoint so that one failing does not undo
 * the others. Reads use a second connection, so they never wait for a group being written.
 *
 * The fsync that synchronous=FULL would run inside each commit, on the event loop's one thread,
 * runs instead on libuv's thread pool (DurabilityGate): SQLite runs with synchronous=NORMAL,
 * which is FULL without that one fsync of the log after each commit (the log's header and every
 * checkpoint are still synced by SQLite), and the connector runs it itself, after the commit
 * and before any answer. A group's promises resolve, and a read's rows are returned, only once
 * every commit the group or the read could see is on disk; meanwhile the next group is built.
 */
export class SqliteDatabase implements SqlDatabase {
  readonly dialect = 'sqlite' as const;
  readonly #writer: Kysely<AnySchema>;
  /** The writer's statements, for the templates a group runs without Kysely's executor. */
  readonly #writerStatements: CachingStatements;
  /** Every connection's kept statements, forgotten after a migration. */
  readonly #statementCaches: CachingStatements[];
  readonly #readerDb: Kysely<AnySchema>;
  readonly #connections: BetterSqlite3.Database[];
  /** The writer's connection itself, to tell whether SQLite undid a group's transaction on its own. */
  readonly #writerConnection: BetterSqlite3.Database;
  /** The savepoint around each unit of a group, run on the writer directly (no query building). */
  readonly #unit: { readonly begin: () => void; readonly release: () => void; readonly undo: () => void };
  /** Whether each commit is on disk yet; none for a database in memory, which has no disk. */
  readonly #gate: DurabilityGate | undefined;
  readonly #log: FileSync | undefined;
  /** The database's file and its log as the connections opened them (the log once it exists). */
  readonly #opened = new Map<string, Stats>();
  /**
   * The last error the storage gave a group (a full disk, an I/O error), reported by health until
   * a group commits the work of a transaction after it: meanwhile every write may be failing,
   * while health's own transaction, which writes nothing, would pass.
   */
  #storageFailure: Error | undefined;
  #queue: PendingWork[] = [];
  #flushing = false;
  #closed = false;
  readonly #onClose: (() => void) | undefined;
  readonly #counts = { statements: 0, transactions: 0, commits: 0 };
  /** The connections of the snapshots being read (snapshot), closed by `close` if still open. */
  readonly #snapshots = new Set<BetterSqlite3.Database>();

  constructor(
    readonly path: string,
    options: SqliteDatabaseOptions = {},
  ) {
    this.#onClose = options.onClose;
    if (path !== ':memory:') {
      mkdirSync(dirname(path), { recursive: true });
      const log = (options.logSync ?? fileSync)(`${path}-wal`);
      this.#log = log;
      let checkedAt = Number.NEGATIVE_INFINITY;
      this.#gate = new DurabilityGate(
        async () => {
          await log.sync();
          if (performance.now() - checkedAt < FILE_CHECK_INTERVAL_MS) return;
          checkedAt = performance.now();
          await this.#checkFiles();
        },
        { inFlight: SYNCS_IN_FLIGHT },
      );
    }
    const writer = openConnection(path);
    const reader = path === ':memory:' ? writer : openConnection(path);
    this.#connections = writer === reader ? [writer] : [writer, reader];
    if (path !== ':memory:') this.#opened.set(path, statSync(path));
    this.#writerConnection = writer;
    const counted = (): void => {
      this.#counts.statements += 1;
    };
    const direct = (text: string): (() => void) => {
      const statement = writer.prepare(text);
      return () => {
        counted();
        statement.run();
      };
    };
    this.#unit = { begin: direct('savepoint unit'), release: direct('release savepoint unit'), undo: direct('rollback to savepoint unit') };
    // A group takes the write lock when it begins (BEGIN IMMEDIATE; Kysely sends a plain BEGIN).
    // A deferred transaction that reads first and then writes is refused at once with
    // SQLITE_BUSY if another process holds the lock (busy_timeout does not apply to that
    // upgrade), and each unit of a group would meet the lock on its own; taken at BEGIN, the lock
    // is waited for once per group, up to busy_timeout, and a group that cannot have it fails whole.
    this.#writerStatements = cachingStatements(writer, counted, 'begin immediate');
    this.#statementCaches = [this.#writerStatements];
    this.#writer = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: this.#writerStatements }) });
    const gate = this.#gate;
    if (gate === undefined) {
      // In memory there is one connection and no disk to wait for. Its reads go through Kysely,
      // which makes them wait while a group holds the connection.
      this.#readerDb = this.#writer;
    } else {
      const readerStatements = cachingStatements(reader, counted);
      this.#statementCaches.push(readerStatements);
      this.#readerDb = new Kysely<AnySchema>({ dialect: new SqliteDialect({ database: readerStatements }), plugins: [durableReads(gate)] });
      // The same as durableReads: the rows wait until every commit they could show is on disk.
      runDirectly(this.#readerDb, async (text, parameters) => {
        const result = answer(readerStatements, text, parameters);
        const settled = gate.settled();
        if (settled !== undefined) await settled;
        return result;
      });
    }
  }

  work(): DatabaseWork {
    return { ...this.#counts, roundTrips: this.#counts.statements };
  }

  reader<S>(): Kysely<S> {
    return this.#readerDb as unknown as Kysely<S>;
  }

  quickReader<S>(): Kysely<S> {
    return this.reader<S>();
  }

  listReader<S>(): Kysely<S> {
    return this.reader<S>();
  }

  async snapshot<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error('database is closed');
    const gate = this.#gate;
    if (gate === undefined) return work(this.#readerDb as unknown as Kysely<S>);
    const connection = new BetterSqlite3(this.path, { readonly: true });
    this.#snapshots.add(connection);
    try {
      connection.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      connection.pragma('busy_timeout = 5000');
      const db = new Kysely<AnySchema>({
        dialect: new SqliteDialect({ database: cachingStatements(connection, () => (this.#counts.statements += 1)) }),
        plugins: [durableReads(gate)],
      });
      // A deferred BEGIN: the snapshot is taken by the first read, and held until the end.
      return await db.transaction().execute((trx) => work(trx as unknown as Kysely<S>));
    } catch (error) {
      // Closed under it by `close`: said as every other refusal after close is.
      if (this.#closed && !connection.open) throw new Error('database is closed', { cause: error });
      throw error;
    } finally {
      this.#snapshots.delete(connection);
      if (connection.open) connection.close();
    }
  }

  transaction<S, T>(work: (trx: Kysely<S>) => Promise<T>): Promise<T> {
    return this.#enqueue(work, false);
  }

  #enqueue<S, T>(work: (trx: Kysely<S>) => Promise<T>, probe: boolean): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('database is closed'));
    const failure = this.#gate?.failure;
    if (failure !== undefined) return Promise.reject(failure);
    this.#counts.transactions += 1;
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        work: work as unknown as (trx: Kysely<AnySchema>) => Promise<unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
        probe,
      });
      if (!this.#flushing) {
        this.#flushing = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  autocommit<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T> {
    return this.transaction(work);
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const group = this.#queue.splice(0, MAX_GROUP_SIZE);
      await this.#commitGroup(group);
    }
    this.#flushing = false;
  }

  async #commitGroup(group: readonly PendingWork[]): Promise<void> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const gate = this.#gate;
    let durable: Promise<void> | undefined;
    try {
      const trx = await this.#writer.startTransaction().execute();
      // Templates run on the group's transaction go to the writer directly, and only while the
      // group is open, as Kysely refuses a query on a transaction that has ended.
      let open = true;
      const statements = this.#writerStatements;
      runDirectly(trx, async (text, parameters) => {
        if (!open) throw new Error('Transaction has already ended');
        return answer(statements, text, parameters);
      });
      try {
        // The writer is used by this group alone (Kysely's transaction holds its connection and
        // the next group waits for this one), so the savepoints can go to it directly.
        const unit = this.#unit;
        const connection = this.#writerConnection;
        for (const [index, item] of group.entries()) {
          unit.begin();
          // Recorded once the unit's savepoint is released or undone, so that each member's
          // outcome stays at its own index whatever fails.
          let outcome: (typeof outcomes)[number];
          try {
            outcome = { ok: true, value: await item.work(trx) };
            unit.release();
          } catch (error) {
            // After some errors (a full disk, an I/O error) SQLite rolls the whole transaction
            // back itself: no savepoint is left to undo, and nothing of the group is written.
            if (!connection.inTransaction) throw new GroupUndone(index, error);
            unit.undo();
            unit.release();
            outcome = { ok: false, error };
          }
          outcomes.push(outcome);
        }
        open = false;
        // A sync that failed while the group was built refuses it: rolled back, not committed
        // and then reported as failed (after the restart the failure asks for, it would be there).
        const failure = gate?.failure;
        if (failure !== undefined) throw failure;
        const commit = gate?.beginCommit();
        try {
          await trx.commit().execute();
        } catch (error) {
          commit?.abandoned();
          throw error;
        }
        this.#counts.commits += 1;
        if (outcomes.some((outcome, index) => outcome.ok && group[index]?.probe === false)) this.#storageFailure = undefined;
        durable = commit?.made();
      } catch (error) {
        open = false;
        await trx.rollback().execute().catch(() => undefined);
        throw error;
      }
    } catch (error) {
      const cause: unknown = error instanceof GroupUndone ? error.cause : error;
      if (cause instanceof Error && 'code' in cause && typeof cause.code === 'string' && STORAGE_FAILURE.test(cause.code)) this.#storageFailure = cause;
      if (error instanceof GroupUndone) {
        // The unit that met the error fails with it; the others, undone with it through no fault
        // of their own and none of them written, run again at the head of the queue (as units of
        // the next group, each on its own: one unit's error no longer undoes the others).
        group[error.index]?.reject(error.cause);
        this.#queue.unshift(...group.filter((_, index) => index !== error.index));
        return;
      }
      // The group did not reach the disk: every member fails, none is reported as done.
      for (const item of group) item.reject(error);
      return;
    }
    const settle = (): void => {
      group.forEach((item, index) => {
        const outcome = outcomes[index];
        if (outcome === undefined) item.reject(new Error('missing outcome in group commit'));
        else if (outcome.ok) item.resolve(outcome.value);
        else item.reject(outcome.error);
      });
    };
    if (durable === undefined) {
      settle();
      return;
    }
    // Not awaited: the next group is built while this one's log is synced.
    durable.then(settle, (error: unknown) => {
      // Committed, but not known to be on disk: nothing is reported as done.
      for (const item of group) item.reject(error);
    });
  }

  /** One process writes a SQLite file: every slot is its own, and it takes the first. */
  async claimSlot(space: number, slots: number): Promise<number> {
    checkSlotRequest(space, slots);
    if (this.#closed) throw new Error('database is closed');
    return 0;
  }

  async migrate(migrations: readonly Migration[]): Promise<void> {
    try {
      await applyMigrations(this.#writer, migrations, (work) => this.transaction<AnySchema, void>(work));
    } finally {
      // A statement kept from before would still make its rows with the columns it had then.
      // And a connection prepares with the schema it last loaded, learning of a change only when
      // a statement runs, so each reads the schema once before it prepares again.
      for (const statements of this.#statementCaches) statements.forget();
      for (const connection of this.#connections) connection.prepare('select count(*) from sqlite_master').get();
    }
    // The bookkeeping table is created outside a group: its commit is synced here.
    await this.#gate?.committed();
  }

  /**
   * Whether the database's file and its log are still at their paths, the same files. Removed
   * under the running process (a data directory deleted, a volume unmounted), SQLite would go on
   * writing to the open, unlinked files, and the fsync of the log would succeed: commits would be
   * answered, and lost when the process closes them. Replaced, the files at the path are not the
   * ones written. Checked by health and, at most once a second, after a sync of the log, whose
   * failure fails the durability gate: nothing is reported as done from then until a restart.
   */
  async #checkFiles(): Promise<void> {
    const log = `${this.path}-wal`;
    if (!this.#opened.has(log)) {
      const found = await stat(log).catch(() => undefined);
      if (found !== undefined) this.#opened.set(log, found);
    }
    for (const [file, opened] of this.#opened) {
      const now = await stat(file).catch(() => undefined);
      if (now === undefined) throw new Error(`the SQLite file ${file} was removed while the connector ran: nothing written since is kept; restore the data and restart`);
      if (now.ino !== opened.ino || now.dev !== opened.dev) throw new Error(`the SQLite file ${file} was replaced while the connector ran: nothing written since is kept; restore the data and restart`);
    }
  }

  async health(): Promise<void> {
    await this.#checkFiles();
    const failure = this.#storageFailure;
    if (failure !== undefined) throw new Error(`the storage refused the last write (${failure.message}); no write has succeeded since`, { cause: failure });
    await ping(this.#readerDb);
    await this.#enqueue<AnySchema, void>(async (trx) => {
      await ping(trx);
    }, true);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while (this.#flushing) await new Promise((resolve) => setTimeout(resolve, 5));
    await this.#gate?.idle();
    await this.#log?.close();
    if (this.#readerDb !== this.#writer) await this.#readerDb.destroy();
    await this.#writer.destroy();
    // The snapshots' first: the writer, closed last, can then checkpoint the log and remove it.
    for (const connection of [...this.#snapshots, ...this.#connections]) if (connection.open) connection.close();
    this.#onClose?.();
  }
}

/** A group's transaction that SQLite rolled back on its own when the unit at `index` failed with `cause`. */
class GroupUndone extends Error {
  constructor(
    readonly index: number,
    override readonly cause: unknown,
  ) {
    super('SQLite rolled back the whole group after one unit\'s error');
  }
}

function openConnection(path: string): BetterSqlite3.Database {
  const connection = new BetterSqlite3(path);
  connection.pragma('journal_mode = WAL');
  // FULL less the fsync of the log after each commit, which SqliteDatabase runs off the event
  // loop before it answers (DurabilityGate): the same writes reach the disk before any answer.
  connection.pragma('synchronous = NORMAL');
  connection.pragma(`wal_autocheckpoint = ${LOG_PAGES_BEFORE_CHECKPOINT}`);
  connection.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  connection.pragma('busy_timeout = 5000');
  connection.pragma('foreign_keys = ON');
  return connection;
}

/** A connection's statements, kept by text; `forget` drops them all. */
interface CachingStatements extends KyselySqliteDatabase {
  forget(): void;
}

/**
 * better-sqlite3 compiles a statement per prepare(); Kysely prepares per query, so keep them, each
 * reading one with its rows made by readingStatement for the columns it had when prepared. A
 * change of schema is not seen by a kept statement's row maker, so migrations forget them all.
 * Kysely's plain `begin` runs as `begin` (the writer's groups: `begin immediate`).
 */
function cachingStatements(connection: BetterSqlite3.Database, counted: () => void, begin = 'begin'): CachingStatements {
  const cache = new Map<string, SqliteStatement>();
  const forget = (): void => cache.clear();
  return {
    close: forget,
    forget,
    prepare: (text: string) => {
      // Kysely prepares once per execution: this counts statements run.
      counted();
      let statement = cache.get(text);
      if (statement === undefined) {
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
        statement = readingStatement(connection.prepare(text === 'begin' ? begin : text));
        cache.set(text, statement);
      }
      return statement;
    },
  };
}

/**
 * Runs one statement as Kysely's SQLite driver does, with the same answer: the rows of a
 * statement that returns rows, otherwise the rows changed and the last rowid inserted.
 */
function answer(statements: KyselySqliteDatabase, text: string, parameters: readonly unknown[]): QueryResult<unknown> {
  const statement = statements.prepare(text);
  if (statement.reader) return { rows: statement.all(parameters) };
  const { changes, lastInsertRowid } = statement.run(parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/**
 * Holds a read's rows until every commit it could have seen is on disk: a row the last group
 * wrote is visible to the reader as soon as SQLite has committed it, before its log is synced.
 */
function durableReads(gate: DurabilityGate): KyselyPlugin {
  return {
    transformQuery: (args) => args.node,
    transformResult: async (args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> => {
      const settled = gate.settled();
      if (settled !== undefined) await settled;
      return args.result;
    },
  };
}
