import { ConnectorError } from '../../../domain/errors.js';
import { isCurrencyCode } from '../../../domain/currencies.js';
import { compareDecimal, fitsMinorUnits, isAmount, parseDecimal } from '../../../domain/money.js';
import { rateWithSpreadRoundingDown } from '../../domain/fx-arithmetic.js';
import type { PairPricing } from '../../ports/exchange.js';

/**
 * What the sandbox exchange starts with: liquidity per currency and the pairs it converts.
 * Read from demo-exchange.ts or from the JSON file named by FX_SANDBOX_FILE (see README).
 */
export interface SandboxExchangeConfig {
  /** Opening liquidity per currency, decimal strings. */
  readonly liquidity: Readonly<Record<string, string>>;
  readonly pairs: readonly SandboxPair[];
}

export interface SandboxPair {
  readonly source: string;
  readonly target: string;
  /** Either a mid rate and a spread in percent ... */
  readonly mid?: string;
  readonly spreadPercent?: string;
  /** ... or the rate the provider gives directly (target per source). */
  readonly rate?: string;
  readonly charge: { readonly currency: string; readonly fixed: string; readonly percent: string };
  readonly limits: { readonly min: string; readonly max: string };
}

/** Every problem of a config, at once; an empty list when it can be used. */
export function exchangeConfigProblems(config: unknown): string[] {
  const problems: string[] = [];
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return ['(top level): must be an object'];
  const record = config as Record<string, unknown>;
  const liquidity = record['liquidity'];
  if (typeof liquidity !== 'object' || liquidity === null || Array.isArray(liquidity)) problems.push('liquidity: must be an object of currency -> amount');
  else {
    for (const [currency, amount] of Object.entries(liquidity)) {
      if (!isCurrencyCode(currency)) problems.push(`liquidity.${currency}: not an ISO 4217 code`);
      else if (typeof amount !== 'string' || !isAmount(amount) || !fitsMinorUnits(amount, currency)) problems.push(`liquidity.${currency}: "${String(amount)}" is not an amount in ${currency}`);
    }
  }
  const pairs = record['pairs'];
  if (!Array.isArray(pairs) || pairs.length === 0) return [...problems, 'pairs: must be a non-empty list'];
  const seen = new Set<string>();
  pairs.forEach((pair: unknown, index) => problems.push(...pairProblems(pair, `pairs[${index}]`, liquidity as Record<string, unknown>, seen)));
  return problems;
}

function pairProblems(pair: unknown, where: string, liquidity: Record<string, unknown> | null, seen: Set<string>): string[] {
  if (typeof pair !== 'object' || pair === null) return [`${where}: must be an object`];
  const p = pair as Record<string, unknown>;
  const problems: string[] = [];
  const source = p['source'];
  const target = p['target'];
  for (const [name, currency] of [['source', source], ['target', target]] as const) {
    if (typeof currency !== 'string' || !isCurrencyCode(currency)) problems.push(`${where}.${name}: not an ISO 4217 code`);
    else if (liquidity !== null && typeof liquidity === 'object' && !(currency in liquidity)) problems.push(`${where}.${name}: ${currency} has no liquidity account`);
  }
  if (source === target) problems.push(`${where}: source and target must differ`);
  const key = `${String(source)}/${String(target)}`;
  if (seen.has(key)) problems.push(`${where}: ${key} is listed twice`);
  seen.add(key);
  const decimal = (value: unknown): boolean => typeof value === 'string' && /^(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(value);
  const hasRate = p['rate'] !== undefined;
  const hasMid = p['mid'] !== undefined || p['spreadPercent'] !== undefined;
  if (hasRate === hasMid) problems.push(`${where}: give either rate, or mid and spreadPercent`);
  if (hasRate && (!decimal(p['rate']) || parseDecimal(String(p['rate'])).units === 0n)) problems.push(`${where}.rate: must be a positive decimal`);
  if (hasMid && (!decimal(p['mid']) || !decimal(p['spreadPercent']) || compareDecimal(String(p['spreadPercent']), '100') >= 0)) {
    problems.push(`${where}: mid must be a positive decimal and spreadPercent a decimal below 100`);
  }
  const charge = p['charge'] as Record<string, unknown> | undefined;
  if (typeof charge !== 'object' || charge === null) problems.push(`${where}.charge: must be {currency, fixed, percent}`);
  else {
    if (charge['currency'] !== source && charge['currency'] !== target) problems.push(`${where}.charge.currency: must be the pair's source or target currency`);
    else if (typeof charge['fixed'] !== 'string' || !isAmount(charge['fixed']) || !fitsMinorUnits(charge['fixed'], String(charge['currency']))) problems.push(`${where}.charge.fixed: not an amount in ${String(charge['currency'])}`);
    if (!decimal(charge['percent']) || compareDecimal(String(charge['percent']), '100') >= 0) problems.push(`${where}.charge.percent: must be a decimal below 100`);
  }
  const limits = p['limits'] as Record<string, unknown> | undefined;
  if (typeof limits !== 'object' || limits === null) problems.push(`${where}.limits: must be {min, max} in the source currency`);
  else if (typeof source === 'string' && isCurrencyCode(source)) {
    const min = limits['min'];
    const max = limits['max'];
    if (typeof min !== 'string' || !isAmount(min) || !fitsMinorUnits(min, source)) problems.push(`${where}.limits.min: not an amount in ${source}`);
    else if (typeof max !== 'string' || !isAmount(max) || !fitsMinorUnits(max, source)) problems.push(`${where}.limits.max: not an amount in ${source}`);
    else if (compareDecimal(min, max) > 0) problems.push(`${where}.limits: min is above max`);
  }
  return problems;
}

export function parseExchangeConfig(text: string): SandboxExchangeConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConnectorError('MalformedSyntax', 'the sandbox exchange file is not JSON');
  }
  const problems = exchangeConfigProblems(parsed);
  if (problems.length > 0) throw new ConnectorError('ValidationFailed', `the sandbox exchange file has ${problems.length} problem(s): ${problems.join('; ')}`);
  return parsed as SandboxExchangeConfig;
}

/** The pairs as the port describes them, spreads applied. */
export function pricingOf(config: SandboxExchangeConfig): PairPricing[] {
  return config.pairs.map((pair) => ({
    sourceCurrency: pair.source,
    targetCurrency: pair.target,
    rate: pair.rate ?? rateWithSpreadRoundingDown(pair.mid ?? '0', pair.spreadPercent ?? '0'),
    charge: pair.charge,
    minSource: pair.limits.min,
    maxSource: pair.limits.max,
  }));
}
