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

interface Waiting {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

function waiting(): Waiting {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/**
 * When the commits of a database are on disk, for a database whose commits reach the operating
 * system at once but the disk only when `sync` (an fsync of its log) has run after them.
 *
 * Each commit is numbered; a sync covers every commit made before it started. One sync runs at
 * a time, and every commit made while it runs waits for the next one, so a burst of commits
 * costs one fsync, as a group commit does. A sync that fails leaves the gate failed: that commit
 * and every later one are refused, because after a failed fsync the operating system may have
 * dropped the data it did not write and nothing can tell which.
 */
export class DurabilityGate {
  readonly #sync: () => Promise<void>;
  #committed = 0;
  #durable = 0;
  #running: { readonly target: number; readonly done: Promise<void> } | undefined;
  #next: Waiting | undefined;
  #failure: Error | undefined;

  constructor(sync: () => Promise<void>) {
    this.#sync = sync;
  }

  /** Counts a commit just made; the promise resolves once it is on disk. */
  committed(): Promise<void> {
    this.#committed += 1;
    return this.until(this.#committed);
  }

  /**
   * Resolves once every commit made so far is on disk: for a read, which may have seen any of
   * them. `undefined` when they already are, so that the common case costs no promise.
   */
  settled(): Promise<void> | undefined {
    if (this.#failure === undefined && this.#durable >= this.#committed) return undefined;
    return this.until(this.#committed);
  }

  /** Every commit up to and including number `commit` is on disk. */
  until(commit: number): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#durable >= commit) return Promise.resolve();
    const running = this.#running;
    if (running !== undefined && running.target >= commit) return running.done;
    if (this.#next === undefined) {
      this.#next = waiting();
      const next = this.#next.promise;
      if (running === undefined) this.#start();
      return next;
    }
    return this.#next.promise;
  }

  /** The error that failed the gate, if a sync has failed. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Resolves when no sync is running or waiting to run (for closing the database). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running.done.catch(() => undefined);
  }

  #start(): void {
    const next = this.#next;
    if (next === undefined) return;
    this.#next = undefined;
    if (this.#failure !== undefined) {
      next.reject(this.#failure);
      return;
    }
    const target = this.#committed;
    const done = this.#sync().then(
      () => {
        if (target > this.#durable) this.#durable = target;
      },
      (error: unknown) => {
        this.#failure ??= new Error(`the database's log could not be written to disk; restart the connector: ${describe(error)}`, {
          cause: error,
        });
        throw this.#failure;
      },
    );
    this.#running = { target, done };
    void done.then(next.resolve, next.reject).finally(() => {
      this.#running = undefined;
      if (this.#next !== undefined) this.#start();
    });
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
