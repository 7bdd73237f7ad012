import { minorUnitDigits } from './currencies.js';

/**
 * Money, the only module that parses, computes with, rounds and formats amounts.
 * Amounts travel as decimal strings and are computed on as bigint minor units.
 * A JS number never holds an amount: the switch allows 18 integer digits.
 */

/** The Mojaloop Amount pattern: no leading zeros, no trailing zeros, at most 4 decimals. */
export const AMOUNT_PATTERN = /^([0]|([1-9][0-9]{0,17}))([.][0-9]{0,3}[1-9])?$/;

export interface Money {
  readonly amount: string;
  readonly currency: string;
}

/** A parsed decimal: value = units / 10^scale. */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

const DECIMAL_PATTERN = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

export function isAmount(text: string): boolean {
  return AMOUNT_PATTERN.test(text);
}

/** Parses a non-negative decimal string (any number of digits), such as a fee percentage. */
export function parseDecimal(text: string): Decimal {
  if (!DECIMAL_PATTERN.test(text)) throw new RangeError(`not a non-negative decimal: "${text}"`);
  const [whole = '0', fraction = ''] = text.split('.');
  return { units: BigInt(whole + fraction), scale: fraction.length };
}

/**
 * Converts a decimal amount to minor units of its currency.
 * Throws when the amount has more decimals than the currency has minor-unit digits,
 * since no institution can move a fraction of its smallest unit.
 */
export function toMinorUnits(amount: string, currency: string): bigint {
  const digits = minorUnitDigits(currency);
  const { units, scale } = parseDecimal(amount);
  if (scale <= digits) return units * 10n ** BigInt(digits - scale);
  const excess = 10n ** BigInt(scale - digits);
  if (units % excess !== 0n) {
    throw new RangeError(`${amount} has more decimals than ${currency} allows (${digits})`);
  }
  return units / excess;
}

/** True when the amount can be expressed in whole minor units of the currency. */
export function fitsMinorUnits(amount: string, currency: string): boolean {
  try {
    toMinorUnits(amount, currency);
    return true;
  } catch {
    return false;
  }
}

/** Formats minor units as a canonical decimal string (no trailing zeros), as the Amount pattern wants. */
export function formatMinorUnits(units: bigint, currency: string): string {
  if (units < 0n) throw new RangeError(`negative amount: ${units}`);
  const digits = minorUnitDigits(currency);
  if (digits === 0) return units.toString();
  const text = units.toString().padStart(digits + 1, '0');
  const whole = text.slice(0, text.length - digits);
  const fraction = text.slice(text.length - digits).replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** Canonical form of a decimal amount in a currency ("10.50" becomes "10.5"). */
export function canonicalAmount(amount: string, currency: string): string {
  return formatMinorUnits(toMinorUnits(amount, currency), currency);
}

/** Compares two decimal strings by value, whatever their formatting. */
export function compareDecimal(a: string, b: string): -1 | 0 | 1 {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  const scale = Math.max(x.scale, y.scale);
  const xu = x.units * 10n ** BigInt(scale - x.scale);
  const yu = y.units * 10n ** BigInt(scale - y.scale);
  return xu === yu ? 0 : xu < yu ? -1 : 1;
}

export function sameMoney(a: Money, b: Money): boolean {
  return a.currency === b.currency && compareDecimal(a.amount, b.amount) === 0;
}

/** Divides and rounds half away from zero (half-up for the non-negative values used here). */
function divideRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (numerator < 0n || denominator <= 0n) throw new RangeError('divideRoundHalfUp takes non-negative values');
  const quotient = numerator / denominator;
  const remainder = numerator % denominator;
  return remainder * 2n >= denominator ? quotient + 1n : quotient;
}

/**
 * `percent`% of an amount, exact, then rounded half-up to the currency's minor unit.
 * For example 1.5% of 100.25 USD is 1.50375, rounded to 1.50 (150 minor units).
 */
export function percentOfRoundHalfUp(amountMinor: bigint, percent: string): bigint {
  const rate = parseDecimal(percent);
  return divideRoundHalfUp(amountMinor * rate.units, 100n * 10n ** BigInt(rate.scale));
}

export function addMoney(a: Money, b: Money): Money {
  assertSameCurrency(a, b);
  const sum = toMinorUnits(a.amount, a.currency) + toMinorUnits(b.amount, b.currency);
  return { amount: formatMinorUnits(sum, a.currency), currency: a.currency };
}

/** a - b; throws when the result would be negative. */
export function subtractMoney(a: Money, b: Money): Money {
  assertSameCurrency(a, b);
  const difference = toMinorUnits(a.amount, a.currency) - toMinorUnits(b.amount, b.currency);
  if (difference < 0n) throw new RangeError(`${a.amount} - ${b.amount} is negative`);
  return { amount: formatMinorUnits(difference, a.currency), currency: a.currency };
}

function assertSameCurrency(a: Money, b: Money): void {
  if (a.currency !== b.currency) throw new RangeError(`currency mismatch: ${a.currency} and ${b.currency}`);
}
