/**
 * At most `size` holders at a time, served in their order of asking; a waiter gives up at its
 * deadline and is then never served. The holder gives its slot back with release().
 */
export class Slots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(size: number) {
    if (!Number.isSafeInteger(size) || size < 1) throw new Error(`slots ${size} is not a positive whole number`);
    this.#free = size;
  }

  /** True once a slot is held; false when `timeoutMs` passed first (nothing held). */
  acquire(timeoutMs: number): Promise<boolean> {
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        resolve(false);
      }, timeoutMs);
      this.#waiting.push(grant);
    });
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#free += 1;
    else next();
  }

  get waiting(): number {
    return this.#waiting.length;
  }
}
