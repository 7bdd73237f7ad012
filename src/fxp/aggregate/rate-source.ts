import { ConnectorError } from '../../domain/errors.js';
import type { Clock } from '../../ports/clock.js';
import type { Logger } from '../../ports/logger.js';
import type { Exchange, PairPricing, RateTable } from '../ports/exchange.js';

export interface RateSourceSettings {
  /** How often the rate table is fetched again from the exchange. */
  readonly refreshMs: number;
  /** A table priced longer ago than this is stale: quotes are refused until a refresh succeeds. */
  readonly maxAgeMs: number;
}

/**
 * How far ahead of this clock an exchange may date its table (clock skew). A table dated further
 * ahead could never be judged stale by its age, so it is refused.
 */
export const RATES_FUTURE_TOLERANCE_MS = 60_000;

/**
 * The provider's rates as the connector last fetched them. Quotes price from here, never from
 * a table older than maxAgeMs: a failing exchange makes quotes fail (FxRatesStale, 4xx) rather
 * than lock old rates.
 */
export class RateSource {
  #table: RateTable | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastError: string | undefined;
  #inFlight: Promise<boolean> | undefined;

  constructor(
    private readonly exchange: Exchange,
    private readonly clock: Clock,
    private readonly settings: RateSourceSettings,
    private readonly logger: Logger,
  ) {}

  /**
   * Fetches the table once; a failure keeps the previous table (which then ages). One fetch at a
   * time: a refresh asked for while one is on its way shares it, so a slow answer cannot land
   * after a newer one. A table older than the one held is not taken (an exchange behind a load
   * balancer may answer from a lagging node), nor one dated more than
   * RATES_FUTURE_TOLERANCE_MS ahead of this clock; either is reported in `status().lastError`.
   */
  async refresh(): Promise<boolean> {
    if (this.#inFlight !== undefined) return this.#inFlight;
    const fetching = this.#fetch().finally(() => {
      this.#inFlight = undefined;
    });
    this.#inFlight = fetching;
    return fetching;
  }

  async #fetch(): Promise<boolean> {
    let table: RateTable;
    try {
      table = await this.exchange.rates();
    } catch (error) {
      return this.#refused(error instanceof Error ? error.message : String(error), error);
    }
    const aheadMs = table.asOf.getTime() - this.clock.now().getTime();
    if (aheadMs > RATES_FUTURE_TOLERANCE_MS) {
      return this.#refused(`the exchange dated its rates ${table.asOf.toISOString()}, ${Math.round(aheadMs / 1000)} s ahead of this clock; not taken`);
    }
    const held = this.#table;
    if (held !== undefined && table.asOf.getTime() < held.asOf.getTime()) {
      return this.#refused(`the exchange answered rates of ${table.asOf.toISOString()}, older than those held (${held.asOf.toISOString()}); not taken`);
    }
    this.#table = table;
    this.#lastError = undefined;
    return true;
  }

  #refused(reason: string, error?: unknown): false {
    this.#lastError = reason;
    this.logger.warn({ exchange: this.exchange.name, ...(error === undefined ? { reason } : { err: error }) }, 'exchange rates could not be refreshed');
    return false;
  }

  /** The pricing of a pair, from a fresh table; FxRatesStale or FxPairNotSupported otherwise. */
  pricing(sourceCurrency: string, targetCurrency: string): PairPricing {
    const table = this.#fresh();
    const pair = table.pairs.find((candidate) => candidate.sourceCurrency === sourceCurrency && candidate.targetCurrency === targetCurrency);
    if (pair === undefined) throw new ConnectorError('FxPairNotSupported', `${sourceCurrency} to ${targetCurrency} is not converted here`);
    return pair;
  }

  /** For /health: when the table was priced, how old it is, whether quotes can use it. */
  status(): { readonly asOf: string | null; readonly ageMs: number | null; readonly stale: boolean; readonly pairs: number; readonly lastError?: string } {
    const table = this.#table;
    const ageMs = table === undefined ? null : this.#ageMs(table);
    return {
      asOf: table?.asOf.toISOString() ?? null,
      ageMs,
      stale: ageMs === null || ageMs > this.settings.maxAgeMs,
      pairs: table?.pairs.length ?? 0,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError.slice(0, 128) }),
    };
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.refresh(), this.settings.refreshMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #fresh(): RateTable {
    const table = this.#table;
    if (table === undefined) throw new ConnectorError('FxRatesStale', 'no rates fetched from the exchange yet');
    const ageMs = this.#ageMs(table);
    if (ageMs > this.settings.maxAgeMs) throw new ConnectorError('FxRatesStale', `rates are ${Math.round(ageMs / 1000)} s old (FX_RATE_MAX_AGE_MS ${this.settings.maxAgeMs})`);
    return table;
  }

  /** Never below zero: a table dated a little ahead of this clock (within the tolerance) is new. */
  #ageMs(table: RateTable): number {
    return Math.max(0, this.clock.now().getTime() - table.asOf.getTime());
  }
}
