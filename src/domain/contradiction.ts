/**
 * A record flagged because the switch reported an outcome its own outcome contradicts (completed
 * for one released or being released, aborted for one credited or being credited). Nothing moves
 * on such a word, but the hub's settlement and the institution now disagree, which only an
 * operator can settle: the flag and its last error outlive the step's failed attempts and its
 * end, until an operator clears it.
 */
const CONTRADICTION = 'the switch reported ';

/** A SQL LIKE pattern matching a contradiction's last error (the marker has no wildcard character). */
export const CONTRADICTION_LIKE = `${CONTRADICTION}%`;

/** The last error of a contradiction: what the switch reported, what the record is. */
export function contradictionNote(reported: string, record: string, state: string): string {
  return `${CONTRADICTION}${reported}, but the ${record} is ${state}: reconcile by hand`;
}

export function isContradiction(lastError: string | null): lastError is string {
  return lastError !== null && lastError.startsWith(CONTRADICTION);
}

/**
 * The flag and last error a finished step leaves: cleared, unless they record a contradiction.
 * `record` is the one the step started from; a contradiction flagged meanwhile by another process
 * is kept by the store's transition itself (`keepContradiction`).
 */
export function flagKept(record: { readonly lastError: string | null }): { readonly lastError: string | null; readonly needsAttention: boolean } {
  return isContradiction(record.lastError) ? { lastError: record.lastError, needsAttention: true } : { lastError: null, needsAttention: false };
}
