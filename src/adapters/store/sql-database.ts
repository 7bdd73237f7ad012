import type { Kysely } from 'kysely';

/**
 * One SQL database shared by the connector's store and the sandbox institution's ledger.
 * Each module owns its tables and sees them through a typed view (`Kysely<ItsSchema>`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySchema = Record<string, Record<string, any>>;

export interface Migration {
  /** Unique and ordered within its module, e.g. "connector-001-initial". */
  readonly id: string;
  up(db: Kysely<AnySchema>): Promise<void>;
}

/**
 * The database work done so far, counted by the driver wrapper: what a change is measured by,
 * whatever the machine's load.
 */
export interface DatabaseWork {
  /**
   * Statements sent to the database: on PostgreSQL BEGIN and COMMIT included; on SQLite each is
   * one call into the embedded engine (savepoints included).
   */
  readonly statements: number;
  /**
   * Round trips to the database. On PostgreSQL the statements of a commit group (BEGIN and
   * COMMIT included) or of a read group are written together and count as one; every other
   * statement is one. On SQLite there is no network: the same as `statements`.
   */
  readonly roundTrips: number;
  /** Calls of `transaction`: the atomic units of work asked for. */
  readonly transactions: number;
  /**
   * Commits that reached the disk: on SQLite one per group of transactions; on PostgreSQL one per
   * transaction, per commit group and per statement autocommitted alone.
   */
  readonly commits: number;
}

export interface SqlDatabase {
  readonly dialect: 'sqlite' | 'postgres';
  /** The work done since the database was opened. */
  work(): DatabaseWork;
  /** For reads that need no transaction. */
  reader<S>(): Kysely<S>;
  /**
   * For short reads by key on the payment path (a quote, a transfer, a customer by id). On
   * PostgreSQL those of one turn of the event loop, or that arrive while one is in flight, go
   * together on one pipelined connection (read groups), each still its own statement; a long
   * read there would delay the reads written behind it, so listings, reports and scans use
   * `reader`. On SQLite the same as `reader`.
   */
  quickReader<S>(): Kysely<S>;
  /**
   * For listings and reports whose best plan depends on the values asked for (a period, dates,
   * a state): the console's searches, a reconciliation's records, the audit trail's recent
   * entries. On PostgreSQL each statement is sent unnamed, so the server plans it with its
   * values every time: a named one may be given, after five runs on a connection, one plan for
   * any values, which walked the whole created_at index for a reconciliation's period (207–297
   * ms against 31–33 ms on 300,000 records, a reviewer's measurement) or a console search
   * between two dates. On SQLite the same as `reader`.
   */
  listReader<S>(): Kysely<S>;
  /**
   * Runs `work`, whose reads all see the database as it was at one instant, however many
   * statements it sends and however long it yields between them (a reconciliation's records, read
   * in pages): nothing committed meanwhile shows in a later page, and no record is read twice or
   * missed because it changed between two pages. On SQLite a read transaction on a connection of
   * its own, opened for `work` and closed after it, whose rows, like the reader's, wait until
   * every commit they could show is on disk; neither the writer nor the reader is held (a
   * database in memory has one connection: there `work` runs on the reader, without the
   * guarantee). On PostgreSQL a REPEATABLE READ, READ ONLY transaction on one of the pool's
   * connections (DATABASE_POOL_MAX), held until `work` ends, its statements sent unnamed as
   * `listReader`'s. `work` must only read.
   */
  snapshot<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T>;
  /**
   * Runs `work` in one atomic transaction. On SQLite, transactions arriving together are
   * committed together (one fsync for the group), each isolated by a savepoint.
   * `work` must not start another transaction.
   */
  transaction<S, T>(work: (trx: Kysely<S>) => Promise<T>): Promise<T>;
  /**
   * Runs `work`, which sends ONE statement that is atomic by itself (an INSERT, an UPDATE, a
   * data-modifying WITH). PostgreSQL commits it without BEGIN and COMMIT of its own: alone when
   * it is the only one of its turn of the event loop and nothing else is in flight (one round
   * trip), else in a commit group with the statements of its turn or those that arrived while
   * one was in flight (one round trip and one commit for the group). SQLite runs it as a
   * transaction, so that it is group-committed and durable like the rest.
   */
  autocommit<S, T>(work: (db: Kysely<S>) => Promise<T>): Promise<T>;
  /**
   * A slot from 0 to `slots` - 1 that no other process using this database holds while this one
   * lives, in the 32-bit key space `space`, for processes to spread their writes over different
   * rows. On PostgreSQL a session-level advisory lock (space, slot) on a session kept open for
   * it; the slot is free again when the process ends or its session is lost. A hint only: when
   * every slot is taken or the claim cannot be made, a slot already held elsewhere is answered
   * (the process id modulo `slots`), and the reason logged, so correctness never depends on it.
   * The same space and count answer the same slot for the life of the process. On SQLite, whose
   * file one process writes, always 0.
   */
  claimSlot(space: number, slots: number): Promise<number>;
  /** Applies the migrations not applied yet, in order. */
  migrate(migrations: readonly Migration[]): Promise<void>;
  health(): Promise<void>;
  close(): Promise<void>;
}

/** Refuses a key space or slot count that claimSlot cannot take. */
export function checkSlotRequest(space: number, slots: number): void {
  if (!Number.isSafeInteger(space) || space < -(2 ** 31) || space >= 2 ** 31) throw new Error(`slot key space ${space} is not a 32-bit integer`);
  if (!Number.isSafeInteger(slots) || slots < 1 || slots > 1024) throw new Error(`slot count ${slots} is not between 1 and 1024`);
}
