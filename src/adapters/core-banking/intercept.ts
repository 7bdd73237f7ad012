import type { CoreBanking } from '../../ports/core-banking.js';

/** The port's operations, by name. */
export const CORE_BANKING_OPERATIONS = ['lookupParty', 'reserve', 'commit', 'release', 'collect', 'refund', 'transactionStatus', 'health', 'identifierEligibility', 'listIdentifiers', 'listMovements'] as const;
export type CoreBankingOperation = (typeof CORE_BANKING_OPERATIONS)[number];

/** Runs `call` (the inner adapter's operation) in its own way: before, after or instead of it. */
export type Around = <T>(operation: CoreBankingOperation, call: () => Promise<T>) => Promise<T>;

/**
 * An adapter that passes every operation of `inner` through `around`: the one place that lists
 * the port's operations for wrappers (the institution boundary, fault injection, tests).
 */
export function interceptCoreBanking(inner: CoreBanking, around: Around): CoreBanking {
  const wrapped: CoreBanking = {
    name: inner.name,
    capabilities: inner.capabilities,
    lookupParty: (id) => around('lookupParty', () => inner.lookupParty(id)),
    reserve: (request) => around('reserve', () => inner.reserve(request)),
    commit: (request) => around('commit', () => inner.commit(request)),
    release: (reference, amount) => around('release', () => inner.release(reference, amount)),
    collect: (request) => around('collect', () => inner.collect(request)),
    refund: (request) => around('refund', () => inner.refund(request)),
    transactionStatus: (reference) => around('transactionStatus', () => inner.transactionStatus(reference)),
    health: () => around('health', () => inner.health()),
  };
  const close = inner.close?.bind(inner);
  const verifySetup = inner.verifySetup?.bind(inner);
  const eligibility = inner.identifierEligibility?.bind(inner);
  const list = inner.listIdentifiers?.bind(inner);
  const movements = inner.listMovements?.bind(inner);
  return {
    ...wrapped,
    ...(eligibility === undefined ? {} : { identifierEligibility: (id) => around('identifierEligibility', () => eligibility(id)) }),
    ...(list === undefined ? {} : { listIdentifiers: () => around('listIdentifiers', () => list()) }),
    ...(movements === undefined ? {} : { listMovements: (period) => around('listMovements', () => movements(period)) }),
    ...(close === undefined ? {} : { close }),
    // Start-up only, never a payment: passed through as it is, outside `around`.
    ...(verifySetup === undefined ? {} : { verifySetup }),
  };
}
