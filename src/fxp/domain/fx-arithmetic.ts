import { minorUnitDigits } from '../../domain/currencies.js';
import { AMOUNT_PATTERN, formatMinorUnits, parseDecimal, toMinorUnits, type Money } from '../../domain/money.js';

/**
 * Exact conversion arithmetic of the FX provider, in bigint minor units. Every rounding is in
 * the provider's favour, and each function's name says which way it rounds: the customer gets
 * at most the exact target amount and pays at least the exact source amount and charges.
 *
 * A rate is a decimal string: target units per one source unit (ZMW->MWK 64.8235 means 1 ZMW
 * buys 64.8235 MWK). Amounts follow the Mojaloop Amount pattern (up to 18 integer digits).
 */

/**
 * A pair's charges, in one currency of the pair: a fixed amount and a percent of the amount
 * converted in that currency (SEND: of the source, or of the target before charges; RECEIVE: of
 * the source before charges, or of the target delivered).
 */
export interface ChargeRule {
  readonly currency: string;
  readonly fixed: string;
  readonly percent: string;
}

export interface ConversionPricing {
  readonly sourceCurrency: string;
  readonly targetCurrency: string;
  /** Target units per source unit, after the provider's spread. */
  readonly rate: string;
  readonly charge: ChargeRule;
}

export interface Conversion {
  /** What the payer's side pays the provider (charges included for RECEIVE). */
  readonly source: Money;
  /** What the provider pays out (charges already taken off for SEND). */
  readonly target: Money;
  /** The charges, expressed in both currencies. */
  readonly charges: { readonly source: Money; readonly target: Money };
  readonly rate: string;
}

/** Thrown when the amounts come out at zero or below: the amount is too small to convert. */
export class ConversionTooSmall extends Error {}

/** Thrown when an amount comes out beyond the switch's Amount (18 digits before the point): the hub could not carry it. */
export class ConversionTooLarge extends Error {}

/** source x rate, rounded down to the target's minor unit. */
export function targetForSourceRoundingDown(sourceMinor: bigint, pricing: Pick<ConversionPricing, 'sourceCurrency' | 'targetCurrency' | 'rate'>): bigint {
  const { numerator, denominator } = scaled(pricing);
  return (sourceMinor * numerator) / denominator;
}

/** target / rate, rounded up to the source's minor unit. */
export function sourceForTargetRoundingUp(targetMinor: bigint, pricing: Pick<ConversionPricing, 'sourceCurrency' | 'targetCurrency' | 'rate'>): bigint {
  const { numerator, denominator } = scaled(pricing);
  if (numerator === 0n) throw new RangeError('a rate of zero converts nothing');
  return divideRoundingUp(targetMinor * denominator, numerator);
}

/** `percent`% of an amount, rounded up to the minor unit. */
export function percentRoundingUp(amountMinor: bigint, percent: string): bigint {
  const rate = parseDecimal(percent);
  return divideRoundingUp(amountMinor * rate.units, 100n * 10n ** BigInt(rate.scale));
}

/**
 * SEND: the source amount is fixed. target = source x rate (rounded down), less the charges,
 * which are taken from the target (a charge in the source currency is converted at the rate,
 * rounded up).
 */
export function convertSendAmount(source: Money, pricing: ConversionPricing): Conversion {
  const sourceMinor = toMinorUnits(source.amount, pricing.sourceCurrency);
  const grossTarget = targetForSourceRoundingDown(sourceMinor, pricing);
  const chargeTarget = chargeInTarget(sourceMinor, grossTarget, pricing);
  const targetMinor = grossTarget - chargeTarget;
  if (sourceMinor <= 0n || targetMinor <= 0n) throw new ConversionTooSmall(`${source.amount} ${source.currency} converts to nothing after charges`);
  const chargeSource = sourceForTargetRoundingUp(chargeTarget, pricing);
  return result(sourceMinor, targetMinor, chargeSource, chargeTarget, pricing);
}

/**
 * RECEIVE: the target amount is fixed. source = target / rate (rounded up), plus the charges,
 * which are added to the source (a charge in the target currency is converted at the rate,
 * rounded up).
 */
export function convertReceiveAmount(target: Money, pricing: ConversionPricing): Conversion {
  const targetMinor = toMinorUnits(target.amount, pricing.targetCurrency);
  if (targetMinor <= 0n) throw new ConversionTooSmall(`${target.amount} ${target.currency} is nothing to convert`);
  const grossSource = sourceForTargetRoundingUp(targetMinor, pricing);
  const chargeSource = chargeInSource(grossSource, targetMinor, pricing);
  const chargeTarget = targetForSourceRoundingDown(chargeSource, pricing);
  return result(grossSource + chargeSource, targetMinor, chargeSource, chargeTarget, pricing);
}

/** The charge of a SEND, in target minor units (rounded up). */
function chargeInTarget(sourceMinor: bigint, grossTarget: bigint, pricing: ConversionPricing): bigint {
  const { charge } = pricing;
  if (charge.currency === pricing.targetCurrency) return toMinorUnits(charge.fixed, charge.currency) + percentRoundingUp(grossTarget, charge.percent);
  const inSource = toMinorUnits(charge.fixed, charge.currency) + percentRoundingUp(sourceMinor, charge.percent);
  // Converted at the rate, rounded up: the provider never charges less than it set.
  const { numerator, denominator } = scaled(pricing);
  return divideRoundingUp(inSource * numerator, denominator);
}

/** The charge of a RECEIVE, in source minor units (rounded up). */
function chargeInSource(grossSource: bigint, targetMinor: bigint, pricing: ConversionPricing): bigint {
  const { charge } = pricing;
  if (charge.currency === pricing.sourceCurrency) return toMinorUnits(charge.fixed, charge.currency) + percentRoundingUp(grossSource, charge.percent);
  const inTarget = toMinorUnits(charge.fixed, charge.currency) + percentRoundingUp(targetMinor, charge.percent);
  return sourceForTargetRoundingUp(inTarget, pricing);
}

function result(sourceMinor: bigint, targetMinor: bigint, chargeSource: bigint, chargeTarget: bigint, pricing: ConversionPricing): Conversion {
  const { sourceCurrency: s, targetCurrency: t } = pricing;
  const conversion = {
    source: { amount: formatMinorUnits(sourceMinor, s), currency: s },
    target: { amount: formatMinorUnits(targetMinor, t), currency: t },
    charges: { source: { amount: formatMinorUnits(chargeSource, s), currency: s }, target: { amount: formatMinorUnits(chargeTarget, t), currency: t } },
    rate: pricing.rate,
  };
  for (const money of [conversion.source, conversion.target, conversion.charges.source, conversion.charges.target]) {
    if (!AMOUNT_PATTERN.test(money.amount)) throw new ConversionTooLarge(`${money.amount} ${money.currency} is more than the switch can carry (18 digits before the point)`);
  }
  return conversion;
}

/**
 * The rate as a fraction between minor units: targetMinor = sourceMinor x numerator / denominator,
 * with the two currencies' minor-unit digits folded in.
 */
function scaled(pricing: Pick<ConversionPricing, 'sourceCurrency' | 'targetCurrency' | 'rate'>): { numerator: bigint; denominator: bigint } {
  const rate = parseDecimal(pricing.rate);
  const sourceDigits = BigInt(minorUnitDigits(pricing.sourceCurrency));
  const targetDigits = BigInt(minorUnitDigits(pricing.targetCurrency));
  return { numerator: rate.units * 10n ** targetDigits, denominator: 10n ** BigInt(rate.scale) * 10n ** sourceDigits };
}

function divideRoundingUp(numerator: bigint, denominator: bigint): bigint {
  if (numerator < 0n || denominator <= 0n) throw new RangeError('divideRoundingUp takes non-negative values');
  return (numerator + denominator - 1n) / denominator;
}

/**
 * The rate after the provider's spread: mid x (1 - spread%), rounded down at 10 decimals (a
 * lower rate gives the customer less target per source).
 */
export function rateWithSpreadRoundingDown(mid: string, spreadPercent: string): string {
  const m = parseDecimal(mid);
  const s = parseDecimal(spreadPercent);
  // mid x (100 - spread) / 100, at scale 10.
  const hundred = 100n * 10n ** BigInt(s.scale);
  const factor = hundred - s.units;
  if (factor <= 0n) throw new RangeError(`spread ${spreadPercent}% leaves no rate`);
  const scale = 10n;
  const units = (m.units * factor * 10n ** scale) / (hundred * 10n ** BigInt(m.scale));
  return formatDecimal(units, Number(scale));
}

/** A non-negative bigint at `scale` decimals as a decimal string without trailing zeros. */
export function formatDecimal(units: bigint, scale: number): string {
  if (scale === 0) return units.toString();
  const text = units.toString().padStart(scale + 1, '0');
  const fraction = text.slice(text.length - scale).replace(/0+$/, '');
  const whole = text.slice(0, text.length - scale);
  return fraction === '' ? whole : `${whole}.${fraction}`;
}
