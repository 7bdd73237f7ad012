/**
 * What a commit or abort notification of a conversion says, read strictly. The switch connector
 * sends `PUT /fxTransfers/{id} {conversionState, completedTimestamp}`; versions before v24.10.9
 * sent `PATCH` with a state dump whose `finalNotification.conversionState` is the hub's word.
 * Money moves only on an unambiguous word: commit when every word present says so, release on
 * ABORTED (or ERROR_OCCURRED), and anything else (RESERVED, a contradiction, a word in another
 * case or with spaces) moves nothing.
 */
export type FxNotificationWord = { readonly kind: 'commit' } | { readonly kind: 'abort' } | { readonly kind: 'doubtful'; readonly why: string };

export function readFxNotification(body: Record<string, unknown>, method: 'PUT' | 'PATCH'): FxNotificationWord {
  if (method === 'PUT') {
    const state = body['conversionState'];
    if (state === 'COMMITTED') return { kind: 'commit' };
    if (state === 'ABORTED') return { kind: 'abort' };
    return { kind: 'doubtful', why: `conversionState ${describe(state)} is neither COMMITTED nor ABORTED` };
  }
  const current = body['currentState'];
  const final = body['finalNotification'];
  const hub = typeof final === 'object' && final !== null ? (final as Record<string, unknown>)['conversionState'] : undefined;
  const connector = current === 'COMPLETED' ? 'commit' : current === 'ABORTED' || current === 'ERROR_OCCURRED' ? 'abort' : current === undefined ? undefined : 'unknown';
  const hubWord = hub === 'COMMITTED' ? 'commit' : hub === 'ABORTED' ? 'abort' : hub === undefined ? undefined : 'unknown';
  if (connector === 'unknown' || hubWord === 'unknown') return { kind: 'doubtful', why: `currentState ${describe(current)}, finalNotification.conversionState ${describe(hub)}` };
  if (connector !== undefined && hubWord !== undefined && connector !== hubWord) return { kind: 'doubtful', why: `currentState ${describe(current)} contradicts finalNotification.conversionState ${describe(hub)}` };
  const word = hubWord ?? connector;
  if (word === undefined) return { kind: 'doubtful', why: 'neither currentState nor finalNotification.conversionState is given' };
  return { kind: word };
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `"${value.slice(0, 24)}"` : value === undefined ? 'absent' : 'not a string';
}
