import { ConnectorError } from '../../src/domain/errors.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';
import { interceptCoreBanking, type CoreBankingOperation } from '../../src/adapters/core-banking/intercept.js';

export interface FaultOptions {
  /** The operations that may fail (any of the port's); the others always pass through. */
  readonly operations: readonly CoreBankingOperation[];
  /**
   * 'unavailable': fails before calling the institution (InstitutionUnavailable).
   * 'timeout': calls the institution, then fails as if the answer was lost (InstitutionTimeout),
   * which is the case that tests idempotency: the work was done but the caller cannot know.
   */
  readonly kind: 'unavailable' | 'timeout';
  /** Fails this many matching calls, then recovers. */
  readonly failures?: number;
  /** Fails each matching call with this probability instead (0 to 1). */
  readonly fraction?: number;
  /** Random source for `fraction`, injectable so tests are deterministic. */
  readonly random?: () => number;
}

/**
 * Merged with the class below: the port's members (name, capabilities, every operation) are
 * those interceptCoreBanking builds, copied onto the instance in the constructor.
 */
export interface FaultyCoreBanking extends CoreBanking {}

/**
 * Wraps any institution adapter and fails chosen operations: the first N calls, or a fraction
 * of them. Used by recovery tests ("the institution fails, then recovers") and fault harnesses.
 * The operations are the inner adapter's, passed through interceptCoreBanking, so this class
 * lists none of them.
 */
export class FaultyCoreBanking {
  readonly #inner: CoreBanking;
  readonly #options: FaultOptions;
  readonly #random: () => number;
  #failuresLeft: number;
  #injected = 0;

  constructor(inner: CoreBanking, options: FaultOptions) {
    const hasCount = options.failures !== undefined;
    const hasFraction = options.fraction !== undefined;
    if (hasCount === hasFraction) throw new RangeError('FaultyCoreBanking: give either failures or fraction');
    if (options.fraction !== undefined && !(options.fraction >= 0 && options.fraction <= 1)) throw new RangeError('FaultyCoreBanking: fraction must be within 0..1');
    if (options.failures !== undefined && !(Number.isInteger(options.failures) && options.failures >= 0)) throw new RangeError('FaultyCoreBanking: failures must be a whole number');
    this.#inner = inner;
    this.#options = options;
    this.#random = options.random ?? Math.random;
    this.#failuresLeft = options.failures ?? 0;
    Object.assign(this, interceptCoreBanking(inner, (operation, call) => this.#call(operation, call)));
  }

  /** How many calls this wrapper has failed so far. */
  get injected(): number {
    return this.#injected;
  }

  async close(): Promise<void> {
    await this.#inner.close?.();
  }

  async #call<T>(operation: CoreBankingOperation, call: () => Promise<T>): Promise<T> {
    if (!this.#shouldFail(operation)) return call();
    this.#injected += 1;
    if (this.#options.kind === 'unavailable') throw new ConnectorError('InstitutionUnavailable', `injected fault on ${operation}`);
    // The institution did (or refused) the work; only its answer is lost, whichever it was.
    await call().catch(() => undefined);
    throw new ConnectorError('InstitutionTimeout', `injected fault on ${operation}: outcome unknown`);
  }

  #shouldFail(operation: CoreBankingOperation): boolean {
    if (!this.#options.operations.includes(operation)) return false;
    if (this.#options.fraction !== undefined) return this.#random() < this.#options.fraction;
    if (this.#failuresLeft === 0) return false;
    this.#failuresLeft -= 1;
    return true;
  }
}
