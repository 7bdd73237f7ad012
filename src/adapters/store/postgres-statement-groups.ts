import pg from 'pg';
import { shapedQuery } from './postgres-rows.js';
import { isStalePlan, type StatementNames } from './postgres-statements.js';

/**
 * Statements of many requests sent to PostgreSQL together, in one write on one pipelined
 * connection, so that a group of them costs one round trip instead of one each.
 *
 * Gathering: a statement that arrives while nothing is in flight is sent at the end of the event
 * loop's current turn (setImmediate), together with every statement that arrives before then:
 * the requests read in one turn each bring theirs, so under load they make one group instead of
 * a statement alone and a group behind it. Sent alone (through `single`, the ordinary pool, as
 * without groups) when it is the only one. Statements that arrive while a statement or a group
 * is in flight wait for it and then go together. Nothing waits for a timer, and at most one
 * statement or group of an instance is in flight at a time.
 *
 * Commit groups (`mode: 'commit'`), for statements that are atomic by themselves (an audited
 * change, a one-statement reservation), each normally committed on its own. The group is one
 * transaction: BEGIN, the statements in the order they arrived, COMMIT. It costs one round trip
 * and one commit (one WAL flush) instead of one of each per statement.
 * - Every caller is answered only after the group's COMMIT is answered, so a statement is never
 *   reported done before it is on disk. Each statement sees the ones before it, as if each had
 *   committed before the next began. No two statements of a group come from one request (a
 *   request waits for each of its statements before it sends the next).
 * - When a statement fails (a lock wait past the lock timeout, a guard that fails on purpose, a
 *   stale plan), the server rolls the whole group back and nothing of it stays. Each statement
 *   then runs again alone, so each caller gets the outcome its statement has on its own.
 * - When the connection fails or the session ends instead, whether the COMMIT was applied is
 *   unknown: every caller of the group gets an error saying so, as a caller of a single
 *   statement whose connection failed would.
 * - Deadlocks: the group holds the locks of its first statements while later ones run, which a
 *   single statement did not. The commit groups' connection therefore has a lock_timeout well
 *   below the server's deadlock_timeout: a group that waits on a transaction that waits on the
 *   group gives way (and falls back to single statements) before PostgreSQL's deadlock check
 *   would pick a victim. And a group still running after its time budget is cancelled, so that
 *   a transaction waiting on one of its rows never waits long enough for its own deadlock check
 *   to run first: no other transaction is ever failed for a group.
 * - A silent connection (no answer for the query timeout while a group is in flight) is dropped,
 *   and its group's outcome is unknown, as for a lost connection.
 *
 * Read groups (`mode: 'read'`), for short reads by key on the payment path. The reads of a group
 * are pipelined without a transaction: each is its own statement and its own snapshot, and each
 * caller gets its own answer or error. A long read would delay the ones written behind it, so
 * listings and reports do not come here (SqlDatabase.quickReader).
 */

export interface StatementGroupsOptions {
  readonly mode: 'commit' | 'read';
  /** The groups' own pool: one connection in pipeline mode. */
  readonly pool: pg.Pool;
  /** Runs one statement on its own (autocommitted) through the ordinary pool. */
  readonly single: (text: string, values: readonly unknown[]) => Promise<pg.QueryResult>;
  /** Statement names shared with the ordinary pool; undefined when statements run unnamed. */
  readonly names: StatementNames | undefined;
  /** Most statements in one group. */
  readonly maxGroup: number;
  /**
   * The longest the groups' connection may go without an answer while a group is in flight
   * before it is dropped as gone silent (the ordinary connections' query timeout). Counted from
   * the group's write and then from each answer: the server cuts each statement short at its
   * statement timeout, which is shorter, so a live server always answers within it.
   */
  readonly silenceMs: number;
  /**
   * Commit groups: the longest a group may run before it is cancelled (rolled back, its
   * statements run again alone), so that it never holds its rows' locks long enough for a
   * transaction waiting on them to reach PostgreSQL's deadlock check. Undefined for read groups,
   * which take no row locks.
   */
  readonly budgetMs?: number | undefined;
  /** Asks the server to cancel what the session with this backend process id is running. */
  readonly cancel?: ((processId: number) => Promise<void>) | undefined;
  /**
   * Counts the groups' work: statements sent and round trips (a group is one) on the groups'
   * connection, and commits (a commit group that committed, a statement committed alone). A
   * statement sent alone is counted by the ordinary pool, its commit here.
   */
  readonly count: (work: { readonly statements: number; readonly roundTrips: number; readonly commits: number }) => void;
}

interface Pending {
  readonly text: string;
  readonly values: readonly unknown[];
  readonly resolve: (result: pg.QueryResult) => void;
  readonly reject: (error: unknown) => void;
}

export class StatementGroups {
  readonly #options: StatementGroupsOptions;
  #queue: Pending[] = [];
  #inFlight = false;
  /** Callers of close waiting for the group in flight to finish. */
  readonly #idle: Array<() => void> = [];
  #closed = false;
  /** A statement failed on a stale plan: the connection drops its prepared statements first. */
  #stale = false;
  /** Bumped on every DEALLOCATE ALL, so the connection never reuses a name it has dropped. */
  #epoch = 0;

  constructor(options: StatementGroupsOptions) {
    if (!Number.isSafeInteger(options.maxGroup) || options.maxGroup < 2) throw new Error(`maxGroup ${options.maxGroup} must be at least 2`);
    this.#options = options;
  }

  /** Runs one statement, alone or in the next group. */
  run(text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    if (this.#closed) return Promise.reject(new Error('database is closed'));
    const answer = new Promise<pg.QueryResult>((resolve, reject) => this.#queue.push({ text, values, resolve, reject }));
    if (!this.#inFlight) {
      // Nothing in flight: the statements of this turn go together once it ends, and those
      // that arrive while they are in flight gather behind them.
      this.#inFlight = true;
      setImmediate(this.#next);
    }
    return answer;
  }

  /**
   * Rejects what is waiting; a group in flight finishes, with any of its statements that run again
   * alone through the ordinary pool, which must stay open until this resolves.
   */
  close(): Promise<void> {
    this.#closed = true;
    const waiting = this.#queue;
    this.#queue = [];
    for (const pending of waiting) pending.reject(new Error('database is closed'));
    if (!this.#inFlight) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  readonly #next = (): void => {
    if (this.#queue.length === 0) {
      this.#inFlight = false;
      for (const resolve of this.#idle.splice(0)) resolve();
      return;
    }
    const group = this.#queue.splice(0, this.#options.maxGroup);
    const done = group.length === 1 ? this.#alone(group[0]!) : this.#group(group);
    // #group settles every caller itself; should it throw all the same, no caller is left
    // waiting (settling twice changes nothing) and the next group still goes.
    void done
      .catch((error: unknown) => {
        for (const pending of group) pending.reject(error);
      })
      .finally(this.#next);
  };

  async #alone(pending: Pending): Promise<void> {
    try {
      pending.resolve(await this.#single(pending.text, pending.values));
    } catch (error) {
      pending.reject(error);
    }
  }

  async #single(text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    const result = await this.#options.single(text, values);
    if (this.#options.mode === 'commit') this.#options.count({ statements: 0, roundTrips: 0, commits: 1 });
    return result;
  }

  async #group(group: Pending[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.#options.pool.connect();
    } catch {
      // No group connection: each goes alone, through the ordinary pool.
      await Promise.all(group.map((pending) => this.#alone(pending)));
      return;
    }
    if (this.#stale) {
      try {
        this.#options.count({ statements: 1, roundTrips: 1, commits: 0 });
        await client.query({ text: 'deallocate all', query_timeout: this.#options.silenceMs } as pg.QueryConfig);
        this.#epoch += 1;
        this.#stale = false;
      } catch (error) {
        // Nothing of the group was sent: each goes alone, and the connection is replaced.
        client.release(asError(error));
        await Promise.all(group.map((pending) => this.#alone(pending)));
        return;
      }
    }
    let outcome: Outcome;
    const overtime = this.#overtime(client);
    try {
      const settled = await this.#send(client, group);
      outcome = this.#options.mode === 'commit' ? this.#committed(group, settled) : this.#read(group, settled);
    } catch (error) {
      for (const pending of group) pending.reject(error);
      outcome = { broken: asError(error), again: [] };
    } finally {
      clearTimeout(overtime);
    }
    client.release(outcome.broken);
    await Promise.all(outcome.again.map((pending) => this.#alone(pending)));
  }

  /**
   * Cancels a commit group still running after its budget. The statement it cuts short fails
   * (57014), the server rolls the group back, and its statements run again alone, as after any
   * failed statement; so does a group that the cancel reaches instead, should this one end
   * meanwhile. A COMMIT the server has begun to write is not cut short.
   */
  #overtime(client: pg.PoolClient): NodeJS.Timeout | undefined {
    const { budgetMs, cancel } = this.#options;
    const processId = (client as unknown as { processID?: unknown }).processID;
    if (budgetMs === undefined || cancel === undefined || typeof processId !== 'number') return undefined;
    return setTimeout(() => void cancel(processId), budgetMs);
  }

  /**
   * A commit group's answers: BEGIN, one per statement, COMMIT. Settles every caller when the
   * group committed or when its outcome is unknown; when the server rolled it back, settles none
   * and answers all of them, to run again alone.
   */
  #committed(group: Pending[], settled: PromiseSettledResult<pg.QueryResult>[]): Outcome {
    const commit = settled[settled.length - 1]!;
    const statements = settled.slice(1, -1);
    if (statements.some((answer) => answer.status === 'rejected' && isStalePlan(answer.reason))) this.#stale = true;
    if (commit.status === 'rejected') {
      // An error the server answered the COMMIT with means it rolled back; a session that ended
      // or a connection that failed first leaves the COMMIT's fate unknown.
      if (!isConnectionLevel(commit.reason)) return { broken: undefined, again: group };
      const error = new Error(`connection lost during a group commit; whether it was applied is unknown: ${describe(commit.reason)}`);
      for (const pending of group) pending.reject(error);
      return { broken: asError(commit.reason), again: [] };
    }
    if (commit.value.command !== 'COMMIT') return { broken: undefined, again: group };
    this.#options.count({ statements: 0, roundTrips: 0, commits: 1 });
    // Committed: a server error would have rolled the group back, so a statement that failed
    // here failed in the client before it was sent (a value it could not bind) and did nothing.
    group.forEach((pending, index) => settle(pending, statements[index]!));
    return { broken: undefined, again: [] };
  }

  /** A read group's answers, one per read: each caller gets its own; a stale plan runs again alone. */
  #read(group: Pending[], settled: PromiseSettledResult<pg.QueryResult>[]): Outcome {
    const again: Pending[] = [];
    let broken: Error | undefined;
    group.forEach((pending, index) => {
      const answer = settled[index]!;
      if (answer.status === 'rejected' && isStalePlan(answer.reason)) {
        this.#stale = true;
        again.push(pending);
        return;
      }
      if (answer.status === 'rejected' && isConnectionLevel(answer.reason)) broken = asError(answer.reason);
      settle(pending, answer);
    });
    return { broken, again };
  }

  /** Writes the group (for a commit group between BEGIN and COMMIT) at once, and reads its answers. */
  async #send(client: pg.PoolClient, group: Pending[]): Promise<PromiseSettledResult<pg.QueryResult>[]> {
    const names = this.#options.names;
    const commit = this.#options.mode === 'commit';
    const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void; destroy?: (error: Error) => void } } }).connection?.stream;
    // Corked, the messages of every statement leave in one write when uncorked.
    stream?.cork?.();
    let answers: Promise<pg.QueryResult>[];
    try {
      // Sent in this order: BEGIN (commit groups), the statements, COMMIT (commit groups).
      const send = (query: pg.Query): unknown => client.query(query);
      const begin = commit ? [client.query('begin')] : [];
      const statements = group.map((pending) => {
        const number = names?.numberOf(pending.text, pending.values.length);
        const values = [...pending.values];
        return shapedQuery(send, pending.text, values, number === undefined ? undefined : `cg${this.#epoch}_${number}`);
      });
      answers = [...begin, ...statements, ...(commit ? [client.query('commit')] : [])];
    } finally {
      stream?.uncork?.();
    }
    this.#options.count({ statements: answers.length, roundTrips: 1, commits: 0 });
    watchSilence(stream, answers, this.#options.silenceMs);
    return Promise.allSettled(answers);
  }
}

/**
 * Drops the connection when `silenceMs` pass without an answer while some are awaited: every
 * answer still awaited then fails with the connection (an unknown outcome for a commit group).
 * `pg`'s own read timeout is off on the groups' connections, because it starts each statement's
 * clock when the statement is written, and in a group that also counts the time the server
 * spends on every statement written before it: statements that each finish well within their
 * statement timeout would be taken for a silent server.
 */
function watchSilence(stream: { destroy?: (error: Error) => void } | undefined, answers: readonly Promise<unknown>[], silenceMs: number): void {
  let awaited = answers.length;
  let lastHeard = performance.now();
  // One timer for the group: when it fires early (an answer came meanwhile), it waits out the rest.
  const check = (): void => {
    if (awaited === 0) return;
    const quietMs = performance.now() - lastHeard;
    if (quietMs >= silenceMs) stream?.destroy?.(new Error(`no answer from PostgreSQL for ${silenceMs} ms during a statement group`));
    else timer = setTimeout(check, silenceMs - quietMs);
  };
  let timer = setTimeout(check, silenceMs);
  const heard = (): void => {
    lastHeard = performance.now();
    awaited -= 1;
    if (awaited === 0) clearTimeout(timer);
  };
  for (const answer of answers) answer.then(heard, heard);
}

/** What a group left: whether its connection is to be dropped, and what runs again alone. */
interface Outcome {
  readonly broken: Error | undefined;
  readonly again: Pending[];
}

function settle(pending: Pending, answer: PromiseSettledResult<pg.QueryResult>): void {
  if (answer.status === 'fulfilled') pending.resolve(answer.value);
  else pending.reject(answer.reason);
}

/**
 * Not an error of one statement: the session ended or the connection failed. Told by the
 * SQLSTATE, which the server never translates (the severity `pg` reads comes in the server's
 * language, 'ERREUR' from a French one): a connection exception (class 08), an operator's or a
 * shutdown's end of the session (57P, also the idle session timeout), a session ended idle in a
 * transaction (25P03), an internal error (XX: the session is not trusted after it). A fatal
 * severity, where the server says it in English, and anything that is not the server's answer
 * (a dropped socket) count too. A cancelled statement (57014) is the statement's own error.
 */
function isConnectionLevel(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return true;
  const code = error.code ?? '';
  return code.length !== 5 || /^(08|57P|XX)/.test(code) || code === '25P03' || error.severity === 'FATAL' || error.severity === 'PANIC';
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
