import { asInstitutionError } from '../../domain/errors.js';
import type { CoreBanking } from '../../ports/core-banking.js';
import { interceptCoreBanking } from './intercept.js';

/**
 * The edge between the connector and an institution's adapter: every error the adapter throws
 * is marked as the institution's (asInstitutionError), so that its detail reaches the logs and
 * the payment's record for support staff, while the switch is told the catalogue text only.
 * Applied by the composition root around whichever adapter is chosen.
 */
export function atInstitutionBoundary(inner: CoreBanking): CoreBanking {
  return interceptCoreBanking(inner, (_operation, call) =>
    call().catch((error: unknown) => {
      throw asInstitutionError(error);
    }),
  );
}
