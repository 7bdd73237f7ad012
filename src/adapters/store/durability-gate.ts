import { open, type FileHandle } from 'node:fs/promises';

/** Makes the data written to one file durable (fsync), off the event loop; `close` lets it go. */
export interface FileSync {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * fsync of the file at `path` on libuv's thread pool, so the event loop goes on meanwhile. The
 * file is opened at the first sync and kept open: one trip to the thread pool per sync instead
 * of three (open, fsync, close), each of which waits for the event loop to take its answer.
 * Keeping it is sound for SQLite's log: SQLite truncates and reuses the file in place and
 * removes it only when the last connection closes, after the database is closed here.
 */
export function fileSync(path: string): FileSync {
  let handle: Promise<FileHandle> | undefined;
  return {
    async sync() {
      handle ??= open(path, 'r+');
      await (await handle).sync();
    },
    async close() {
      const opened = handle;
      handle = undefined;
      if (opened !== undefined) await (await opened.catch(() => undefined))?.close();
    },
  };
}

/** A commit about to be made: `made` once the database has made it, `abandoned` if it failed. */
export interface CommitUnderWay {
  /** Counts the commit; the promise resolves once it is on disk. */
  made(): Promise<void>;
  abandoned(): void;
}

/** A caller waiting until commit number `commit` is on disk. */
interface Waiter {
  readonly commit: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * When the commits of a database are on disk, for a database whose commits reach the operating
 * system at once but the disk only when `sync` (an fsync of its log) has run after them.
 *
 * Each commit is numbered; a sync covers every commit made before it started (fsync makes
 * durable all that was written to the file before it was called, whatever else runs), and a
 * caller is answered as soon as any sync that covers its commit has finished. Up to `inFlight`
 * syncs run at once; commits made while that many run wait for the next one to start, so a
 * burst of commits costs one fsync, as a group commit does. A sync that fails leaves the gate
 * failed: every commit not yet on disk and every later one are refused, because after a failed
 * fsync the operating system may have dropped the data it did not write and nothing can tell
 * which.
 */
export class DurabilityGate {
  readonly #sync: () => Promise<void>;
  readonly #inFlight: number;
  #committed = 0;
  #durable = 0;
  /** The last commit covered by a sync that has started (finished or not). */
  #covered = 0;
  /** The syncs running. */
  readonly #running = new Set<Promise<void>>();
  /** In order of their commits, which only grow. */
  #waiters: Waiter[] = [];
  #failure: Error | undefined;
  /** Commits begun and not yet made or abandoned, and what settled() waits on meanwhile. */
  #underWay = 0;
  #underWayEnds: { readonly promise: Promise<void>; readonly resolve: () => void } | undefined;

  constructor(sync: () => Promise<void>, options: { readonly inFlight?: number } = {}) {
    const inFlight = options.inFlight ?? 1;
    if (!Number.isSafeInteger(inFlight) || inFlight < 1) throw new Error(`syncs in flight must be a positive integer, not ${inFlight}`);
    this.#sync = sync;
    this.#inFlight = inFlight;
  }

  /** Counts a commit just made; the promise resolves once it is on disk. */
  committed(): Promise<void> {
    this.#committed += 1;
    return this.#until(this.#committed);
  }

  /**
   * Says a commit is about to be made, before it is. A reader connection sees a commit's rows as
   * soon as the database has made it, which is before the caller can count it (the commit's
   * promise settles some steps later): until it is counted (`made`) or given up (`abandoned`),
   * settled() waits, so that no read returns those rows before their sync.
   */
  beginCommit(): CommitUnderWay {
    this.#underWay += 1;
    if (this.#underWayEnds === undefined) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((settle) => {
        resolve = settle;
      });
      this.#underWayEnds = { promise, resolve };
    }
    let ended = false;
    const end = (): void => {
      if (ended) throw new Error('this commit has already been made or abandoned');
      ended = true;
      this.#underWay -= 1;
      const ends = this.#underWayEnds;
      if (this.#underWay === 0 && ends !== undefined) {
        this.#underWayEnds = undefined;
        ends.resolve();
      }
    };
    return {
      made: () => {
        end();
        return this.committed();
      },
      abandoned: end,
    };
  }

  /**
   * Resolves once every commit made so far is on disk: for a read, which may have seen any of
   * them, including one under way (beginCommit). `undefined` when they already are, so that the
   * common case costs no promise.
   */
  settled(): Promise<void> | undefined {
    const underWay = this.#underWayEnds;
    if (underWay !== undefined) return underWay.promise.then(() => this.settled());
    if (this.#failure === undefined && this.#durable >= this.#committed) return undefined;
    return this.#until(this.#committed);
  }

  /** The error that failed the gate, if a sync has failed. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Resolves when no sync is running or waiting to run (for closing the database). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  #until(commit: number): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#durable >= commit) return Promise.resolve();
    const answered = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ commit, resolve, reject });
    });
    if (this.#covered < commit && this.#running.size < this.#inFlight) this.#start();
    return answered;
  }

  /** Starts a sync covering every commit made so far. */
  #start(): void {
    const target = this.#committed;
    this.#covered = target;
    const done = this.#sync().then(
      () => {
        if (target > this.#durable) this.#durable = target;
        let answered = 0;
        while (answered < this.#waiters.length && this.#waiters[answered]!.commit <= this.#durable) answered += 1;
        for (const waiter of this.#waiters.splice(0, answered)) waiter.resolve();
      },
      (error: unknown) => {
        this.#failure ??= new Error(`the database's log could not be written to disk; restart the connector: ${describe(error)}`, {
          cause: error,
        });
        for (const waiter of this.#waiters.splice(0)) waiter.reject(this.#failure);
      },
    );
    this.#running.add(done);
    void done.finally(() => {
      this.#running.delete(done);
      // Commits made while every slot was taken get a sync of their own now.
      const last = this.#waiters.at(-1);
      if (this.#failure === undefined && last !== undefined && last.commit > this.#covered) this.#start();
    });
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
