import type { SandboxExchangeConfig } from './exchange-config.js';

/**
 * The demo exchange: Zambian kwacha to Malawian kwacha and US dollars, Kenyan to Ugandan
 * shillings (UGX has no minor unit) and US dollars to Kuwaiti dinars (three decimals). Rates are
 * illustrative, not market data.
 */
export const demoExchange: SandboxExchangeConfig = {
  liquidity: { ZMW: '1000000', MWK: '50000000', USD: '250000', KES: '5000000', UGX: '500000000', KWD: '50000' },
  pairs: [
    { source: 'ZMW', target: 'MWK', mid: '65', spreadPercent: '0.5', charge: { currency: 'MWK', fixed: '10', percent: '0.5' }, limits: { min: '1', max: '100000' } },
    { source: 'MWK', target: 'ZMW', mid: '0.0153', spreadPercent: '0.5', charge: { currency: 'MWK', fixed: '50', percent: '0.5' }, limits: { min: '100', max: '5000000' } },
    { source: 'ZMW', target: 'USD', mid: '0.0371', spreadPercent: '0.75', charge: { currency: 'ZMW', fixed: '2', percent: '0.25' }, limits: { min: '10', max: '250000' } },
    { source: 'USD', target: 'ZMW', mid: '26.9', spreadPercent: '0.75', charge: { currency: 'USD', fixed: '0.5', percent: '0.25' }, limits: { min: '1', max: '10000' } },
    { source: 'KES', target: 'UGX', mid: '28.62', spreadPercent: '0.6', charge: { currency: 'UGX', fixed: '500', percent: '0' }, limits: { min: '50', max: '1000000' } },
    { source: 'USD', target: 'KWD', rate: '0.30741', charge: { currency: 'USD', fixed: '1', percent: '0' }, limits: { min: '5', max: '50000' } },
  ],
};
