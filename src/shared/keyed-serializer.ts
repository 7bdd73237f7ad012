/**
 * Runs work for one key at a time within this process, in arrival order; other keys run
 * alongside. It only keeps one process from racing itself (a channel retry, a callback and the
 * recovery worker on one payment; two calls on one reference in an adapter): across processes
 * the store's compare-and-set transitions decide.
 */
export class KeyedSerializer {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  isBusy(key: string): boolean {
    return this.#tails.has(key);
  }

  /** Resolves when all work queued so far has ended. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }
}
