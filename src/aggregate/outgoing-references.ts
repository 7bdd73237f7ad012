import { createHash } from 'node:crypto';

/**
 * The refund's reference at the institution: a name-based UUID (RFC 9562 version 5 layout)
 * derived from the transferId, so that every attempt, by any replica and after any restart,
 * carries the same reference and the institution refunds at most once. The collection uses the
 * transferId itself (the callback names the transfer by it), so the two never collide.
 */
export function refundReference(transferId: string): string {
  const bytes = createHash('sha1').update(`core-connector:refund:${transferId}`).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Runs work for one key at a time within this process, in arrival order. Across processes the
 * store's compare-and-set transitions decide; this only keeps one process from racing itself
 * (a channel retry, a callback and the recovery worker on the same payment).
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
