import { describe, expect, it } from 'vitest';
import {
  ConversionTooLarge,
  ConversionTooSmall,
  convertReceiveAmount,
  convertSendAmount,
  percentRoundingUp,
  rateWithSpreadRoundingDown,
  sourceForTargetRoundingUp,
  targetForSourceRoundingDown,
  type ConversionPricing,
} from './fx-arithmetic.js';

const ZMW_MWK: ConversionPricing = { sourceCurrency: 'ZMW', targetCurrency: 'MWK', rate: '64.8235', charge: { currency: 'MWK', fixed: '10', percent: '0.5' } };

describe('rounding in the provider\'s favour', () => {
  it('rounds the target down and the source up, by the minor units of each currency', () => {
    // 100.01 ZMW x 64.8235 = 6482.998235 MWK -> 6482.99
    expect(targetForSourceRoundingDown(10_001n, ZMW_MWK)).toBe(648_299n);
    // 6483.00 MWK / 64.8235 = 100.0100272... ZMW -> 100.02
    expect(sourceForTargetRoundingUp(648_300n, ZMW_MWK)).toBe(10_002n);
    // Exact divisions are not rounded: 64.8235 MWK is exactly 1 ZMW... to the cent up: 6482.35 / 64.8235 = 100
    expect(sourceForTargetRoundingUp(648_235n, ZMW_MWK)).toBe(10_000n);
    expect(percentRoundingUp(10_001n, '0.5')).toBe(51n);
    expect(percentRoundingUp(10_000n, '0.5')).toBe(50n);
  });

  it('handles 0, 2 and 3 decimal currencies (UGX has none, KWD has three)', () => {
    const kesUgx = { sourceCurrency: 'KES', targetCurrency: 'UGX', rate: '28.4711' };
    // 10.01 KES x 28.4711 = 284.995711 -> 284 UGX (no minor unit)
    expect(targetForSourceRoundingDown(1001n, kesUgx)).toBe(284n);
    // 285 UGX / 28.4711 = 10.01015... KES -> 10.02
    expect(sourceForTargetRoundingUp(285n, kesUgx)).toBe(1002n);
    const usdKwd = { sourceCurrency: 'USD', targetCurrency: 'KWD', rate: '0.30741' };
    // 1.99 USD x 0.30741 = 0.6117459 KWD -> 0.611
    expect(targetForSourceRoundingDown(199n, usdKwd)).toBe(611n);
    // 0.612 KWD / 0.30741 = 1.99082... USD -> 1.99... up -> 2.00? 0.612/0.30741 = 1.990826 -> 1.99 up to 2.00? no: 199.08 cents -> 200
    expect(sourceForTargetRoundingUp(612n, usdKwd)).toBe(200n);
  });

  it('applies the spread to the mid rate, rounding the rate down', () => {
    expect(rateWithSpreadRoundingDown('65', '0.5')).toBe('64.675');
    expect(rateWithSpreadRoundingDown('0.0542', '1.25')).toBe('0.0535225');
    expect(rateWithSpreadRoundingDown('3', '0')).toBe('3');
    // 1/3 of a unit at 10 decimals, rounded down.
    expect(rateWithSpreadRoundingDown('0.0000000001', '50')).toBe('0');
  });
});

describe('SEND: the source amount is fixed; charges come off the target', () => {
  it('converts, takes the fixed and percent charges from the target, and states them in both currencies', () => {
    const conversion = convertSendAmount({ amount: '100', currency: 'ZMW' }, ZMW_MWK);
    // 100 x 64.8235 = 6482.35; charge 10 + 0.5% of 6482.35 = 10 + 32.41175 -> 42.42 (up); target 6439.93
    expect(conversion).toEqual({
      source: { amount: '100', currency: 'ZMW' },
      target: { amount: '6439.93', currency: 'MWK' },
      charges: { source: { amount: '0.66', currency: 'ZMW' }, target: { amount: '42.42', currency: 'MWK' } },
      rate: '64.8235',
    });
  });

  it('converts a charge set in the source currency at the rate, rounded up', () => {
    const pricing: ConversionPricing = { ...ZMW_MWK, charge: { currency: 'ZMW', fixed: '1', percent: '0' } };
    // 1 ZMW charge = 64.8235 MWK -> 64.83 MWK taken off 6482.35
    expect(convertSendAmount({ amount: '100', currency: 'ZMW' }, pricing).target).toEqual({ amount: '6417.52', currency: 'MWK' });
  });

  it('refuses an amount that the charges eat up', () => {
    expect(() => convertSendAmount({ amount: '0.1', currency: 'ZMW' }, ZMW_MWK)).toThrow(ConversionTooSmall);
  });

  it('moves 18-digit amounts exactly', () => {
    const pricing: ConversionPricing = { sourceCurrency: 'USD', targetCurrency: 'ZMW', rate: '1', charge: { currency: 'ZMW', fixed: '0', percent: '0' } };
    expect(convertSendAmount({ amount: '999999999999999999.99', currency: 'USD' }, pricing).target.amount).toBe('999999999999999999.99');
    const halving: ConversionPricing = { ...pricing, rate: '0.5' };
    // 999999999999999999.99 x 0.5 = 499999999999999999.995 -> .99 (down)
    expect(convertSendAmount({ amount: '999999999999999999.99', currency: 'USD' }, halving).target.amount).toBe('499999999999999999.99');
  });

  it('refuses a conversion whose target or source would pass 18 digits before the point (the switch\'s Amount)', () => {
    const pricing: ConversionPricing = { sourceCurrency: 'USD', targetCurrency: 'UGX', rate: '3700', charge: { currency: 'UGX', fixed: '0', percent: '0' } };
    // 999999999999999 USD x 3700 = 3699999999999996300 UGX: 19 digits.
    expect(() => convertSendAmount({ amount: '999999999999999', currency: 'USD' }, pricing)).toThrow(new ConversionTooLarge('3699999999999996300 UGX is more than the switch can carry (18 digits before the point)'));
    expect(convertSendAmount({ amount: '270270270270270', currency: 'USD' }, pricing).target.amount).toBe('999999999999999000');
    // RECEIVE 999999999999999999 UGX at 1/3700 needs 270270270270270.27 USD: fine; at a rate of 0.0001 it needs 19 digits.
    expect(() => convertReceiveAmount({ amount: '999999999999999999', currency: 'UGX' }, { ...pricing, rate: '0.0001' })).toThrow(ConversionTooLarge);
  });
});

describe('RECEIVE: the target amount is fixed; charges are added to the source', () => {
  it('converts back, adds the charges to the source, and states them in both currencies', () => {
    const conversion = convertReceiveAmount({ amount: '6439.93', currency: 'MWK' }, ZMW_MWK);
    // 6439.93 / 64.8235 = 99.345... -> 99.35 ZMW; charge 10 + 0.5% of 6439.93 = 42.19965 -> 42.20 MWK
    // -> 42.20 / 64.8235 = 0.65099 -> 0.66 ZMW; source 100.01
    expect(conversion).toEqual({
      source: { amount: '100.01', currency: 'ZMW' },
      target: { amount: '6439.93', currency: 'MWK' },
      charges: { source: { amount: '0.66', currency: 'ZMW' }, target: { amount: '42.78', currency: 'MWK' } },
      rate: '64.8235',
    });
  });

  it('converts into a currency without minor units', () => {
    const pricing: ConversionPricing = { sourceCurrency: 'KES', targetCurrency: 'UGX', rate: '28.4711', charge: { currency: 'KES', fixed: '5', percent: '1' } };
    // 10000 UGX / 28.4711 = 351.235... -> 351.24 KES; charge 5 + 1% of 351.24 = 8.5124 -> 8.52; source 359.76
    expect(convertReceiveAmount({ amount: '10000', currency: 'UGX' }, pricing).source).toEqual({ amount: '359.76', currency: 'KES' });
  });
});
