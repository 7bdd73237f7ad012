/**
 * Named prepared statements for the `pg` clients of one process.
 *
 * Without a name, PostgreSQL parses, analyses and plans every parameterised statement afresh;
 * under the payee lifecycle that was about two fifths of the server's CPU. With a name, each
 * connection parses a statement once and keeps it for the session, and after a few executions
 * the server may keep one generic plan for it as well.
 *
 * Names are given per process (the same text has the same name on every connection), to at most
 * `maxNamed` distinct texts with at most `maxParameters` parameters each, so that statements
 * built with a variable number of parameters cannot fill the server's session memory; any other
 * statement runs unnamed, as before.
 *
 * A named statement whose result columns change under it (another replica migrating the schema,
 * say a column added to a table read with `select *`) fails once with "cached plan must not
 * change result type". The connection then drops all its prepared statements (`DEALLOCATE ALL`)
 * before its next statement outside a transaction, and names its statements afresh. A statement
 * outside a transaction is then retried once, which is safe because a planning error happens
 * before anything is executed; inside a transaction the error reaches the caller, whose
 * transaction is rolled back as for any other error.
 */

/** A client's `query(text, values)` as `pg` and Kysely use it: one round trip, a result. */
type RawQuery = (...args: unknown[]) => unknown;

export interface StatementNamingOptions {
  /** Distinct statement texts given a name in this process; later ones run unnamed. */
  readonly maxNamed?: number | undefined;
  /** A statement with more parameters than this runs unnamed (IN lists, batch inserts). */
  readonly maxParameters?: number | undefined;
}

const STATEMENT_NAMING_DEFAULTS = { maxNamed: 200, maxParameters: 64 } as const;

/**
 * PostgreSQL's stale-plan error: SQLSTATE feature_not_supported (shared with other errors) from
 * the plan cache's revalidation. The function's name comes untranslated whatever the server's
 * `lc_messages`; the message only in English, so it is a second sign, for a server that would
 * not name the function.
 */
const STALE_PLAN_CODE = '0A000';
const STALE_PLAN_ROUTINE = 'RevalidateCachedQuery';
const STALE_PLAN_MESSAGE = 'cached plan must not change result type';

const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
/** Only a bare end of transaction: `rollback to savepoint` keeps the transaction open. */
const END = /^\s*(commit|rollback|end|abort)(\s+(work|transaction))?\s*;?\s*$/i;

/** The process-wide registry of statement names. */
export class StatementNames {
  readonly #names = new Map<string, number>();
  readonly #maxNamed: number;
  readonly #maxParameters: number;

  constructor(options: StatementNamingOptions = {}) {
    this.#maxNamed = options.maxNamed ?? STATEMENT_NAMING_DEFAULTS.maxNamed;
    this.#maxParameters = options.maxParameters ?? STATEMENT_NAMING_DEFAULTS.maxParameters;
    if (!Number.isSafeInteger(this.#maxNamed) || this.#maxNamed < 0) throw new Error(`maxNamed ${this.#maxNamed} is not a whole number`);
    if (!Number.isSafeInteger(this.#maxParameters) || this.#maxParameters < 1) {
      throw new Error(`maxParameters ${this.#maxParameters} is not a positive whole number`);
    }
  }

  /** The statement's number, or undefined when it runs unnamed. */
  numberOf(text: string, parameterCount: number): number | undefined {
    if (parameterCount === 0 || parameterCount > this.#maxParameters) return undefined;
    const known = this.#names.get(text);
    if (known !== undefined) return known;
    if (this.#names.size >= this.#maxNamed) return undefined;
    const next = this.#names.size;
    this.#names.set(text, next);
    return next;
  }
}

/**
 * Wraps one client's `query` so that parameterised statements run as named prepared statements.
 * Calls of any other shape (a callback, a cursor object) pass through unchanged.
 */
export function preparingQuery(query: RawQuery, names: StatementNames): RawQuery {
  let inTransaction = false;
  /** Set when a statement failed on a stale plan: drop every prepared statement when allowed. */
  let stale = false;
  /** Bumped on every DEALLOCATE ALL, so the connection never reuses a name it has dropped. */
  let epoch = 0;

  const dropAll = async (): Promise<void> => {
    await query('deallocate all', []);
    epoch += 1;
    stale = false;
  };

  const run = async (text: string, values: unknown[]): Promise<unknown> => {
    const ending = END.test(text);
    if (stale && !inTransaction && !ending) await dropAll();
    const number = names.numberOf(text, values.length);
    const named = (): unknown => (number === undefined ? query(text, values) : query({ name: `cc${epoch}_${number}`, text, values }));
    try {
      const result = await named();
      if (BEGIN.test(text)) inTransaction = true;
      return result;
    } catch (error) {
      if (number === undefined || !isStalePlan(error)) throw error;
      stale = true;
      if (inTransaction) throw error;
      await dropAll();
      return await named();
    } finally {
      if (ending) inTransaction = false;
    }
  };

  return (...args: unknown[]): unknown => {
    const [text, values, more] = args;
    if (typeof text === 'string' && Array.isArray(values) && more === undefined) return run(text, values);
    return query(...args);
  };
}

/** Whether `error` is PostgreSQL refusing a prepared statement whose result would change. */
export function isStalePlan(error: unknown): boolean {
  if (!(error instanceof Error) || !('code' in error) || error.code !== STALE_PLAN_CODE) return false;
  const routine = 'routine' in error ? error.routine : undefined;
  return routine === STALE_PLAN_ROUTINE || error.message.includes(STALE_PLAN_MESSAGE);
}
