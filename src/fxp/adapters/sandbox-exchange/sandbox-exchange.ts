import type { Money } from '../../../domain/money.js';
import type { ConversionHoldStatus, Exchange, PairPricing, RateTable } from '../../ports/exchange.js';
import { pricingOf, type SandboxExchangeConfig } from './exchange-config.js';
import type { ExchangeLedger } from './exchange-ledger.js';

/**
 * The embedded exchange (FX_EXCHANGE_ADAPTER=sandbox, the default): rates, charges and limits
 * from its config, liquidity in its ledger. Its rates are priced when asked, so they are as old
 * as the connector's last refresh.
 */
export class SandboxExchange implements Exchange {
  readonly name = 'sandbox';
  readonly #ledger: ExchangeLedger;
  readonly #pairs: readonly PairPricing[];
  readonly #clock: () => Date;

  constructor(ledger: ExchangeLedger, config: SandboxExchangeConfig, clock: () => Date) {
    this.#ledger = ledger;
    this.#pairs = pricingOf(config);
    this.#clock = clock;
  }

  async rates(): Promise<RateTable> {
    return { asOf: this.#clock(), pairs: this.#pairs };
  }

  reserve(reference: string, target: Money): Promise<void> {
    return this.#ledger.reserve(reference, target);
  }

  commit(reference: string, source: Money, target: Money): Promise<void> {
    return this.#ledger.commit(reference, source, target);
  }

  release(reference: string): Promise<void> {
    return this.#ledger.release(reference);
  }

  status(reference: string): Promise<ConversionHoldStatus> {
    return this.#ledger.status(reference);
  }

  async health(): Promise<void> {
    await this.#ledger.balances();
  }
}
