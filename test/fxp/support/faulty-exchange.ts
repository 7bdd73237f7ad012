import { ConnectorError } from '../../../src/domain/errors.js';
import type { Money } from '../../../src/domain/money.js';
import type { ConversionHoldStatus, Exchange, RateTable } from '../../../src/fxp/ports/exchange.js';

export type ExchangeOperation = 'rates' | 'reserve' | 'commit' | 'release';
/** before: fails without acting (an outage); after: acts, then the answer is lost (a timeout). */
export type ExchangeFault = 'before' | 'after';

/** Wraps an exchange to fail chosen operations a number of times: outages and lost answers. */
export class FaultyExchange implements Exchange {
  readonly name: string;
  readonly #inner: Exchange;
  readonly #plans = new Map<ExchangeOperation, Array<ExchangeFault>>();

  constructor(inner: Exchange) {
    this.#inner = inner;
    this.name = inner.name;
  }

  fail(operation: ExchangeOperation, ...faults: ExchangeFault[]): void {
    this.#plans.set(operation, [...(this.#plans.get(operation) ?? []), ...faults]);
  }

  async #run<T>(operation: ExchangeOperation, work: () => Promise<T>): Promise<T> {
    const fault = this.#plans.get(operation)?.shift();
    if (fault === 'before') throw new ConnectorError('InstitutionUnavailable', `exchange ${operation}: connection refused (injected)`);
    const result = await work();
    if (fault === 'after') throw new ConnectorError('InstitutionTimeout', `exchange ${operation}: no answer in time (injected, the exchange acted)`);
    return result;
  }

  rates(): Promise<RateTable> {
    return this.#run('rates', () => this.#inner.rates());
  }
  reserve(reference: string, target: Money): Promise<void> {
    return this.#run('reserve', () => this.#inner.reserve(reference, target));
  }
  commit(reference: string, source: Money, target: Money): Promise<void> {
    return this.#run('commit', () => this.#inner.commit(reference, source, target));
  }
  release(reference: string): Promise<void> {
    return this.#run('release', () => this.#inner.release(reference));
  }
  status(reference: string): Promise<ConversionHoldStatus> {
    return this.#inner.status(reference);
  }
  health(): Promise<void> {
    return this.#inner.health();
  }
}
