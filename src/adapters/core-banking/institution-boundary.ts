import { asInstitutionError } from '../../domain/errors.js';
import type { CoreBanking } from '../../ports/core-banking.js';

/**
 * The edge between the connector and an institution's adapter: every error the adapter throws
 * is marked as the institution's (asInstitutionError), so that its detail reaches the logs and
 * the payment's record for support staff, while the switch and the customer channel are told
 * the catalogue text only. Applied by the composition root around whichever adapter is chosen.
 */
export function atInstitutionBoundary(inner: CoreBanking): CoreBanking {
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    call().catch((error: unknown) => {
      throw asInstitutionError(error);
    });
  const bounded: CoreBanking = {
    name: inner.name,
    capabilities: inner.capabilities,
    lookupParty: (id) => guard(() => inner.lookupParty(id)),
    reserve: (request) => guard(() => inner.reserve(request)),
    commit: (request) => guard(() => inner.commit(request)),
    release: (reference) => guard(() => inner.release(reference)),
    collect: (request) => guard(() => inner.collect(request)),
    refund: (request) => guard(() => inner.refund(request)),
    transactionStatus: (reference) => guard(() => inner.transactionStatus(reference)),
    health: () => guard(() => inner.health()),
  };
  const close = inner.close?.bind(inner);
  return close === undefined ? bounded : { ...bounded, close };
}
