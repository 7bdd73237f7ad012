import type { Env } from '../../src/config.js';
import { compareDecimal, parseDecimal } from '../../src/domain/money.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';
import { CORE_BANKING_OPERATIONS, type CoreBankingOperation } from '../../src/adapters/core-banking/intercept.js';
import { FaultyCoreBanking } from './faulty-core-banking.js';
import { seededRandom } from './seeded-random.js';

/**
 * Fault injection for tests and drills; it is not part of the built connector (src/ refuses the
 * CBS_FAULT_* settings). The test entry point, test/support/connector-main.ts, reads them and,
 * when CBS_FAULT_RATE is above 0, wraps the institution adapter so that a fraction of its calls
 * fail. The crash and replica suites start that entry to show that no money is lost or moved
 * twice while the institution misbehaves, and that pending work drains once it stops.
 *
 *   CBS_FAULT_RATE         probability, 0 to 1, that a call to a listed operation fails (0: off)
 *   CBS_FAULT_OPERATIONS   comma list of operations that may fail (default: all but health)
 *   CBS_FAULT_KINDS        comma list of: unavailable (InstitutionUnavailable, the call is not
 *                          made), timeout (the call is made, then InstitutionTimeout: the
 *                          outcome is lost). Default: both, in equal shares.
 *   CBS_FAULT_SEED         whole number seeding the random source, for a repeatable run
 *
 * Between them the two kinds cover what the aggregate can meet: a failure before the
 * institution did the work and one after it did. Any 5xx or timeout the aggregate sees falls in
 * one of these two classes, since it treats every non-decline failure alike.
 */

export const FAULT_KINDS = ['unavailable', 'timeout'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

// Payment operations only: health and identifier registration are left alone unless named.
const DEFAULT_OPERATIONS = CORE_BANKING_OPERATIONS.filter((operation) => operation !== 'health' && operation !== 'identifierEligibility' && operation !== 'listIdentifiers' && operation !== 'listMovements');

export interface FaultSettings {
  /** The rate as configured, a decimal string from 0 to 1. */
  readonly rate: string;
  readonly operations: readonly CoreBankingOperation[];
  readonly kinds: readonly FaultKind[];
  readonly seed: number | undefined;
}

/** Reads the CBS_FAULT_* settings; undefined when fault injection is off. Problems go to `problems`. */
export function readFaultSettings(env: Env, problems: string[]): FaultSettings | undefined {
  const rateText = env['CBS_FAULT_RATE']?.trim() ?? '';
  if (rateText === '') return undefined;
  let rate: string | undefined;
  try {
    parseDecimal(rateText);
    if (compareDecimal(rateText, '1') <= 0) rate = rateText;
  } catch {
    rate = undefined;
  }
  if (rate === undefined) problems.push(`CBS_FAULT_RATE: "${rateText.slice(0, 32)}" is not a probability from 0 to 1`);
  const operations = readList(env, 'CBS_FAULT_OPERATIONS', CORE_BANKING_OPERATIONS, DEFAULT_OPERATIONS, problems);
  const kinds = readList(env, 'CBS_FAULT_KINDS', FAULT_KINDS, FAULT_KINDS, problems);
  const seedText = env['CBS_FAULT_SEED']?.trim() ?? '';
  let seed: number | undefined;
  if (seedText !== '') {
    if (/^[0-9]{1,10}$/.test(seedText) && Number(seedText) <= 0xffffffff) seed = Number(seedText);
    else problems.push(`CBS_FAULT_SEED: "${seedText.slice(0, 32)}" is not a whole number from 0 to 4294967295`);
  }
  if (rate === undefined || compareDecimal(rate, '0') === 0) return undefined;
  return { rate, operations, kinds, seed };
}

function readList<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: readonly T[], problems: string[]): readonly T[] {
  const text = env[name]?.trim() ?? '';
  if (text === '') return fallback;
  const chosen: T[] = [];
  for (const item of text.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const match = allowed.find((candidate) => candidate === item);
    if (match === undefined) problems.push(`${name}: "${item.slice(0, 32)}" is not one of ${allowed.join(', ')}`);
    else if (!chosen.includes(match)) chosen.push(match);
  }
  if (chosen.length === 0) problems.push(`${name}: names nothing`);
  return chosen;
}

/**
 * Wraps `inner` so that a call to a listed operation fails with probability `rate`, the kind
 * chosen in equal shares. One FaultyCoreBanking per kind, outermost first; each inner one's
 * fraction is conditional on the outer ones having let the call through, so that the overall
 * failure rate is exactly `rate` (1 fails every call).
 */
export function withFaults(inner: CoreBanking, settings: FaultSettings): CoreBanking {
  const random = settings.seed === undefined ? Math.random : seededRandom(settings.seed);
  const rate = probabilityOf(settings.rate);
  const share = rate / settings.kinds.length;
  let passedSoFar = 1;
  const layers: Array<{ kind: FaultKind; fraction: number }> = [];
  for (const kind of settings.kinds) {
    const fraction = passedSoFar <= 0 ? 1 : Math.min(1, share / passedSoFar);
    layers.push({ kind, fraction });
    passedSoFar -= share;
  }
  let wrapped = inner;
  for (const layer of layers.reverse()) {
    wrapped = new FaultyCoreBanking(wrapped, { operations: settings.operations, kind: layer.kind, fraction: layer.fraction, random });
  }
  return wrapped;
}

/** A probability as a number: the rate is a setting, not an amount of money. */
function probabilityOf(rate: string): number {
  const { units, scale } = parseDecimal(rate);
  return Number(units) / 10 ** scale;
}
