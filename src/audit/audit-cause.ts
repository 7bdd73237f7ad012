import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Why a state changed, as the audit trail records it. A request of the switch connector or the
 * channel, the recovery worker, or a named operator with the reason they gave.
 */
export type AuditCause =
  | { readonly cause: 'request' }
  | { readonly cause: 'recovery' }
  | { readonly cause: 'operator'; readonly operator: string; readonly reason: string; readonly evidence?: string };

const scope = new AsyncLocalStorage<AuditCause>();
const REQUEST: AuditCause = { cause: 'request' };

/**
 * Runs `work` with `cause` as the cause of every transition it makes, however deep the calls go
 * (the stores read it when they write the audit row). The recovery loops and the operator
 * actions set it; work outside any scope is a request's.
 */
export function withAuditCause<T>(cause: AuditCause, work: () => Promise<T>): Promise<T> {
  return scope.run(cause, work);
}

/** The cause of the work now running. */
export function currentAuditCause(): AuditCause {
  return scope.getStore() ?? REQUEST;
}
