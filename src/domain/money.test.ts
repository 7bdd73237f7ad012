import { describe, expect, it } from 'vitest';
import {
  AMOUNT_PATTERN,
  addMoney,
  canonicalAmount,
  compareDecimal,
  formatMinorUnits,
  isAmount,
  percentOfRoundHalfUp,
  subtractMoney,
  toMinorUnits,
} from './money.js';
import { minorUnitDigits } from './currencies.js';

describe('Amount pattern', () => {
  it.each(['0', '1', '10.5', '0.0001', '123456789012345678', '123456789012345678.1234', '1.01'])('accepts %s', (text) => {
    expect(isAmount(text)).toBe(true);
  });
  it.each(['', '01', '1.', '1.50', '1.00', '0.00001', '1234567890123456789', '-1', '+1', '1e3', ' 1', '1,5', '.5'])(
    'rejects %s',
    (text) => {
      expect(AMOUNT_PATTERN.test(text)).toBe(false);
    },
  );
});

describe('minor units', () => {
  it('uses the ISO 4217 exponent of each currency', () => {
    expect(minorUnitDigits('USD')).toBe(2);
    expect(minorUnitDigits('JPY')).toBe(0);
    expect(minorUnitDigits('KWD')).toBe(3);
    expect(minorUnitDigits('CLF')).toBe(4);
    expect(() => minorUnitDigits('ABC')).toThrow(RangeError);
  });

  it('converts 18-digit amounts exactly, beyond what a JS number holds', () => {
    expect(toMinorUnits('123456789012345678', 'USD')).toBe(12345678901234567800n);
    expect(toMinorUnits('999999999999999999.99', 'USD')).toBe(99999999999999999999n);
    expect(formatMinorUnits(99999999999999999999n, 'USD')).toBe('999999999999999999.99');
    expect(toMinorUnits('123456789012345678.1234', 'CLF')).toBe(1234567890123456781234n);
  });

  it('refuses amounts finer than the currency allows, but accepts trailing zeros', () => {
    expect(() => toMinorUnits('1.005', 'USD')).toThrow('more decimals than USD allows (2)');
    expect(() => toMinorUnits('1.5', 'JPY')).toThrow('more decimals than JPY allows (0)');
    expect(toMinorUnits('1.500', 'USD')).toBe(150n);
    expect(toMinorUnits('7', 'JPY')).toBe(7n);
  });

  it('formats canonically, without trailing zeros', () => {
    expect(formatMinorUnits(0n, 'USD')).toBe('0');
    expect(formatMinorUnits(5n, 'USD')).toBe('0.05');
    expect(formatMinorUnits(150n, 'USD')).toBe('1.5');
    expect(formatMinorUnits(10000n, 'USD')).toBe('100');
    expect(formatMinorUnits(1001n, 'KWD')).toBe('1.001');
    expect(canonicalAmount('10.50', 'USD')).toBe('10.5');
    expect(() => formatMinorUnits(-1n, 'USD')).toThrow(RangeError);
  });
});

describe('percentOfRoundHalfUp', () => {
  it('computes exactly and rounds half up to the minor unit', () => {
    expect(percentOfRoundHalfUp(10025n, '1.5')).toBe(150n); // 150.375 -> 150
    expect(percentOfRoundHalfUp(10000n, '1.5')).toBe(150n);
    expect(percentOfRoundHalfUp(100n, '0.5')).toBe(1n); // 0.5 -> 1 (half up)
    expect(percentOfRoundHalfUp(99n, '0.5')).toBe(0n); // 0.495 -> 0
    expect(percentOfRoundHalfUp(1n, '50')).toBe(1n); // 0.5 -> 1
    expect(percentOfRoundHalfUp(12345n, '0')).toBe(0n);
    expect(percentOfRoundHalfUp(12345n, '100')).toBe(12345n);
  });

  it('stays exact on 18-digit amounts', () => {
    // 2.5% of 999999999999999999.99 = 24999999999999999.99975 -> 25000000000000000.00
    expect(percentOfRoundHalfUp(99999999999999999999n, '2.5')).toBe(2500000000000000000n);
  });
});

describe('comparison and arithmetic', () => {
  it('compares by value whatever the formatting', () => {
    expect(compareDecimal('1.50', '1.5')).toBe(0);
    expect(compareDecimal('1.5', '1.51')).toBe(-1);
    expect(compareDecimal('100', '99.9999')).toBe(1);
  });

  it('adds and subtracts money of one currency only', () => {
    expect(addMoney({ amount: '0.1', currency: 'USD' }, { amount: '0.2', currency: 'USD' })).toEqual({ amount: '0.3', currency: 'USD' });
    expect(subtractMoney({ amount: '10', currency: 'USD' }, { amount: '0.01', currency: 'USD' })).toEqual({
      amount: '9.99',
      currency: 'USD',
    });
    expect(() => subtractMoney({ amount: '1', currency: 'USD' }, { amount: '2', currency: 'USD' })).toThrow('negative');
    expect(() => addMoney({ amount: '1', currency: 'USD' }, { amount: '1', currency: 'EUR' })).toThrow('currency mismatch');
  });
});
