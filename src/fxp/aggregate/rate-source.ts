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
 * The provider's rates as the connector last fetched them. Quotes price from here, never from
 * a table older than maxAgeMs: a failing exchange makes quotes fail (FxRatesStale, 4xx) rather
 * than lock old rates.
 */
export class RateSource {
  #table: RateTable | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastError: string | undefined;

  constructor(
    private readonly exchange: Exchange,
    private readonly clock: Clock,
    private readonly settings: RateSourceSettings,
    private readonly logger: Logger,
  ) {}

  /** Fetches the table once; a failure keeps the previous table (which then ages). */
  async refresh(): Promise<boolean> {
    try {
      this.#table = await this.exchange.rates();
      this.#lastError = undefined;
      return true;
    } catch (error) {
      this.#lastError = error instanceof Error ? error.message : String(error);
      this.logger.warn({ exchange: this.exchange.name, err: error }, 'exchange rates could not be refreshed');
      return false;
    }
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
    const ageMs = table === undefined ? null : this.clock.now().getTime() - table.asOf.getTime();
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
    const ageMs = this.clock.now().getTime() - table.asOf.getTime();
    if (ageMs > this.settings.maxAgeMs) throw new ConnectorError('FxRatesStale', `rates are ${Math.round(ageMs / 1000)} s old (FX_RATE_MAX_AGE_MS ${this.settings.maxAgeMs})`);
    return table;
  }
}
