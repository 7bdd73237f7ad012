import type { Money } from '../../domain/money.js';
import type { ChargeRule } from '../domain/fx-arithmetic.js';

/**
 * The exchange port: what the FX provider connector needs from the provider's own exchange
 * system. One adapter per exchange implements it (src/fxp/adapters/<exchange>/).
 *
 * Rules every adapter follows (as for the core-banking port):
 * - reserve, commit and release carry `reference` (the conversion's commitRequestId) and are
 *   idempotent on it: repeating one moves money at most once and answers the same.
 * - Failures are ConnectorErrors: a shortfall of liquidity is FxInsufficientLiquidity; an outage
 *   InstitutionUnavailable; a timeout InstitutionTimeout ("outcome unknown", never "failed").
 */

/** One currency pair the provider converts, source to target, with its price and limits. */
export interface PairPricing {
  readonly sourceCurrency: string;
  readonly targetCurrency: string;
  /** Target units per source unit, the provider's spread included. */
  readonly rate: string;
  readonly charge: ChargeRule;
  /** Smallest and largest source amount the provider converts in one go. */
  readonly minSource: string;
  readonly maxSource: string;
}

export interface RateTable {
  /** When the exchange priced these rates. */
  readonly asOf: Date;
  readonly pairs: readonly PairPricing[];
}

/** Where a conversion's liquidity stands at the exchange. */
export type ConversionHoldStatus = 'held' | 'committed' | 'released' | 'not-found';

export interface Exchange {
  readonly name: string;
  /** The current rate table: every pair, its rate, charges and limits. */
  rates(): Promise<RateTable>;
  /** Holds `target` of the provider's liquidity in that currency for the conversion `reference`. */
  reserve(reference: string, target: Money): Promise<void>;
  /** Completes the conversion: `source` is credited to the provider, the held `target` paid out. */
  commit(reference: string, source: Money, target: Money): Promise<void>;
  /** Gives the held target back to the provider's available liquidity; a no-op when nothing is held. */
  release(reference: string): Promise<void>;
  status(reference: string): Promise<ConversionHoldStatus>;
  health(): Promise<void>;
  close?(): Promise<void>;
}
