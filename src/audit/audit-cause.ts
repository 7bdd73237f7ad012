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
/** Scopes begun and not yet settled. */
let open = 0;

/**
 * Runs `work` with `cause` as the cause of every transition it makes, however deep the calls go
 * (the stores read it when they write the audit row). The recovery loops and the operator
 * actions set it; work outside any scope is a request's.
 *
 * `work` must await every change it starts: once no scope is open, the cause of any work still
 * running is a request's. Node 20 carries the cause with promise hooks, which run for every
 * promise the process makes while any scope is open and cost a few per cent of the CPU of the
 * requests, so they are turned off when the last open scope settles and on again by the next.
 */
export async function withAuditCause<T>(cause: AuditCause, work: () => Promise<T>): Promise<T> {
  open += 1;
  try {
    return await scope.run(cause, work);
  } finally {
    open -= 1;
    if (open === 0) scope.disable();
  }
}

/** The cause of the work now running. */
export function currentAuditCause(): AuditCause {
  return scope.getStore() ?? REQUEST;
}
