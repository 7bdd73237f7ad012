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

export interface SqlDatabase {
  readonly dialect: 'sqlite' | 'postgres';
  /** For reads that need no transaction. */
  reader<S>(): Kysely<S>;
  /**
   * Runs `work` in one atomic transaction. On SQLite, transactions arriving together are
   * committed together (one fsync for the group), each isolated by a savepoint.
   * `work` must not start another transaction.
   */
  transaction<S, T>(work: (trx: Kysely<S>) => Promise<T>): Promise<T>;
  /** Applies the migrations not applied yet, in order. */
  migrate(migrations: readonly Migration[]): Promise<void>;
  health(): Promise<void>;
  close(): Promise<void>;
}
