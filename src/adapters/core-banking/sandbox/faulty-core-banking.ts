import { ConnectorError } from '../../../domain/errors.js';
import type { CoreBankingOperation } from '../intercept.js';
import type { PartyId } from '../../../domain/identifiers.js';
import type {
  CollectRequest,
  CollectResult,
  CommitRequest,
  CoreBanking,
  CoreBankingCapabilities,
  InstitutionTransactionStatus,
  PartyDetails,
  RefundRequest,
  ReserveRequest,
} from '../../../ports/core-banking.js';

/** The operations a fault can be aimed at: all of the port's. */
export type FaultyOperation = CoreBankingOperation;

export interface FaultOptions {
  /** The operations that may fail; the others always pass through. */
  readonly operations: readonly FaultyOperation[];
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
 * Wraps any institution adapter and fails chosen operations: the first N calls, or a fraction
 * of them. Used by recovery tests ("the institution fails, then recovers") and fault harnesses.
 */
export class FaultyCoreBanking implements CoreBanking {
  readonly name: string;
  readonly capabilities: CoreBankingCapabilities;
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
    this.name = inner.name;
    this.capabilities = inner.capabilities;
  }

  /** How many calls this wrapper has failed so far. */
  get injected(): number {
    return this.#injected;
  }

  lookupParty(id: PartyId): Promise<PartyDetails> {
    return this.#call('lookupParty', () => this.#inner.lookupParty(id));
  }

  reserve(request: ReserveRequest): Promise<void> {
    return this.#call('reserve', () => this.#inner.reserve(request));
  }

  commit(request: CommitRequest): Promise<void> {
    return this.#call('commit', () => this.#inner.commit(request));
  }

  release(reference: string): Promise<void> {
    return this.#call('release', () => this.#inner.release(reference));
  }

  collect(request: CollectRequest): Promise<CollectResult> {
    return this.#call('collect', () => this.#inner.collect(request));
  }

  refund(request: RefundRequest): Promise<void> {
    return this.#call('refund', () => this.#inner.refund(request));
  }

  transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    return this.#call('transactionStatus', () => this.#inner.transactionStatus(reference));
  }

  health(): Promise<void> {
    return this.#call('health', () => this.#inner.health());
  }

  async close(): Promise<void> {
    await this.#inner.close?.();
  }

  async #call<T>(operation: FaultyOperation, call: () => Promise<T>): Promise<T> {
    if (!this.#shouldFail(operation)) return call();
    this.#injected += 1;
    if (this.#options.kind === 'unavailable') throw new ConnectorError('InstitutionUnavailable', `injected fault on ${operation}`);
    // The institution did (or refused) the work; only its answer is lost, whichever it was.
    await call().catch(() => undefined);
    throw new ConnectorError('InstitutionTimeout', `injected fault on ${operation}: outcome unknown`);
  }

  #shouldFail(operation: FaultyOperation): boolean {
    if (!this.#options.operations.includes(operation)) return false;
    if (this.#options.fraction !== undefined) return this.#random() < this.#options.fraction;
    if (this.#failuresLeft === 0) return false;
    this.#failuresLeft -= 1;
    return true;
  }
}
