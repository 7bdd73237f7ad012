import { asInstitutionError } from '../../domain/errors.js';
import type { Exchange } from '../ports/exchange.js';

/**
 * The edge between the connector and the provider's exchange, as for institutions: every error
 * an exchange adapter throws is marked as the exchange's, so that its detail (balances, the
 * exchange's own codes) reaches the logs and the conversion's record while the switch is told
 * the catalogue text only.
 */
export function atExchangeBoundary(inner: Exchange): Exchange {
  const mark = <T>(call: () => Promise<T>): Promise<T> =>
    call().catch((error: unknown) => {
      throw asInstitutionError(error);
    });
  return {
    name: inner.name,
    rates: () => mark(() => inner.rates()),
    reserve: (reference, target) => mark(() => inner.reserve(reference, target)),
    commit: (reference, source, target) => mark(() => inner.commit(reference, source, target)),
    release: (reference) => mark(() => inner.release(reference)),
    status: (reference) => mark(() => inner.status(reference)),
    health: () => mark(() => inner.health()),
    close: () => inner.close?.() ?? Promise.resolve(),
  };
}
