import pg from 'pg';
import type { StatementNames } from './postgres-statements.js';

/**
 * Group commit for PostgreSQL's autocommitted statements.
 *
 * A statement that is atomic by itself (an audited change, a one-statement reservation) is
 * normally committed on its own: one round trip and one WAL flush each. Under load many of them
 * arrive together, from different requests. This class sends the ones that arrive while a group
 * is in flight as one transaction on one pipelined connection: BEGIN, the statements, COMMIT,
 * written together and answered together, so that the group costs one round trip and one
 * commit instead of one each. A statement that arrives while nothing is in flight goes alone
 * (through `single`), as before; nothing waits for a timer.
 *
 * Every caller is answered only after the group's COMMIT is answered, so a statement is never
 * reported done before it is on disk. Within the group the statements run in the order they
 * arrived, each seeing the ones before it, as if each had committed before the next began.
 *
 * When a statement of the group fails (a lost lock wait, a guard that fails on purpose, a stale
 * plan), the server rolls the whole group back; nothing of it stays. Each statement of the group
 * is then run again on its own through `single`, so each caller gets the outcome its statement
 * has alone. When the connection fails instead, whether the COMMIT was applied is unknown: every
 * caller of the group gets the error, as a caller of a single statement whose connection failed
 * would.
 *
 * Deadlocks: the group holds the locks of its first statements while later ones run, which a
 * single statement did not. A statement of the group therefore waits for a lock at most
 * `lockTimeoutMs` (lock_timeout on the group's connection), well below the server's deadlock
 * check, so that a group that waits on a transaction waiting on the group fails and falls back
 * first, and no other transaction is picked as a deadlock's victim. Only one group is in flight
 * at a time, so two groups never wait on each other.
 */

export interface CommitGroupsOptions {
  /** The group's own pool (one connection, pipeline mode, lock_timeout set). */
  readonly pool: pg.Pool;
  /** Runs one statement on its own, autocommitted, through the ordinary pool. */
  readonly single: (text: string, values: readonly unknown[]) => Promise<pg.QueryResult>;
  /** Statement names shared with the ordinary pool; undefined when statements run unnamed. */
  readonly names: StatementNames | undefined;
  /** Most statements in one group. */
  readonly maxGroup: number;
  /**
   * Counts the group connection's work: statements sent, round trips (a group is one) and
   * commits (a group that committed is one; a statement committed alone through `single` is one,
   * its statement and round trip counted by the ordinary pool).
   */
  readonly count: (work: { readonly statements: number; readonly roundTrips: number; readonly commits: number }) => void;
}

interface Pending {
  readonly text: string;
  readonly values: readonly unknown[];
  readonly resolve: (result: pg.QueryResult) => void;
  readonly reject: (error: unknown) => void;
}

const STALE_PLAN_CODE = '0A000';

export class CommitGroups {
  readonly #options: CommitGroupsOptions;
  #queue: Pending[] = [];
  #inFlight = false;
  #closed = false;
  /** A group failed on a stale plan: the connection drops its prepared statements first. */
  #stale = false;
  /** Bumped on every DEALLOCATE ALL, so the connection never reuses a name it has dropped. */
  #epoch = 0;

  constructor(options: CommitGroupsOptions) {
    if (!Number.isSafeInteger(options.maxGroup) || options.maxGroup < 2) throw new Error(`maxGroup ${options.maxGroup} must be at least 2`);
    this.#options = options;
  }

  /** Runs one autocommitted statement, alone or in the next group. */
  run(text: string, values: readonly unknown[]): Promise<pg.QueryResult> {
    if (this.#closed) return Promise.reject(new Error('database is closed'));
    if (!this.#inFlight) {
      // Nothing in flight: go at once, alone, and let the statements that arrive meanwhile
      // gather behind it.
      this.#inFlight = true;
      const alone = this.#single(text, values);
      void alone.then(this.#next, this.#next);
      return alone;
    }
    return new Promise<pg.QueryResult>((resolve, reject) => this.#queue.push({ text, values, resolve, reject }));
  }

  /** Rejects what is waiting; a group in flight finishes. */
  close(): void {
    this.#closed = true;
    const waiting = this.#queue;
    this.#queue = [];
    for (const pending of waiting) pending.reject(new Error('database is closed'));
  }

  readonly #next = (): void => {
    if (this.#queue.length === 0) {
      this.#inFlight = false;
      return;
    }
    const group = this.#queue.splice(0, this.#options.maxGroup);
    const done = group.length === 1 ? this.#alone(group[0]!) : this.#group(group);
    void done.then(this.#next);
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
    this.#options.count({ statements: 0, roundTrips: 0, commits: 1 });
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
    let broken: unknown;
    try {
      if (this.#stale) {
        this.#options.count({ statements: 1, roundTrips: 1, commits: 0 });
        await client.query('deallocate all');
        this.#epoch += 1;
        this.#stale = false;
      }
      const outcome = await this.#send(client, group);
      if (outcome.committed) {
        group.forEach((pending, index) => {
          const answer = outcome.results[index]!;
          if (answer.status === 'fulfilled') pending.resolve(answer.value);
          else pending.reject(answer.reason);
        });
        return;
      }
      if (outcome.unknown !== undefined) {
        broken = outcome.unknown;
        const error = new Error(`connection lost during a group commit; whether it was applied is unknown: ${describe(outcome.unknown)}`);
        for (const pending of group) pending.reject(error);
        return;
      }
      if (outcome.stale) this.#stale = true;
    } catch (error) {
      broken = error;
      for (const pending of group) pending.reject(error);
      return;
    } finally {
      client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error(String(broken)));
    }
    // Rolled back by the server: nothing of the group stays; each statement runs again alone.
    await Promise.all(group.map((pending) => this.#alone(pending)));
  }

  /** Writes BEGIN, the statements and COMMIT together, and reads their answers. */
  async #send(client: pg.PoolClient, group: Pending[]): Promise<GroupOutcome> {
    const names = this.#options.names;
    const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
    stream?.cork?.();
    let answers: Promise<pg.QueryResult>[];
    try {
      answers = [
        client.query('begin'),
        ...group.map((pending) => {
          const number = names?.numberOf(pending.text, pending.values.length);
          const values = [...pending.values];
          return number === undefined ? client.query(pending.text, values) : client.query({ name: `cg${this.#epoch}_${number}`, text: pending.text, values });
        }),
        client.query('commit'),
      ];
    } finally {
      stream?.uncork?.();
    }
    this.#options.count({ statements: answers.length, roundTrips: 1, commits: 0 });
    const settled = await Promise.allSettled(answers);
    const commit = settled[settled.length - 1]!;
    const failures = settled.filter((answer): answer is PromiseRejectedResult => answer.status === 'rejected').map((answer) => answer.reason as unknown);
    const stale = failures.some((error) => error instanceof pg.DatabaseError && error.code === STALE_PLAN_CODE);
    if (commit.status === 'rejected') {
      // The server answered the COMMIT with an error (it rolled back), or the session ended or
      // the connection failed first (unknown whether the COMMIT was applied).
      if (commit.reason instanceof pg.DatabaseError && commit.reason.severity === 'ERROR') return { committed: false, stale };
      return { committed: false, stale, unknown: commit.reason };
    }
    if (commit.value.command !== 'COMMIT') return { committed: false, stale };
    this.#options.count({ statements: 0, roundTrips: 0, commits: 1 });
    // Committed: a server error would have rolled the group back, so a statement that failed
    // here failed in the client before it was sent (a value it could not bind) and did nothing.
    return { committed: true, results: settled.slice(1, -1) };
  }
}

type GroupOutcome =
  | { readonly committed: true; readonly results: PromiseSettledResult<pg.QueryResult>[] }
  | { readonly committed: false; readonly stale: boolean; readonly unknown?: unknown };

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
