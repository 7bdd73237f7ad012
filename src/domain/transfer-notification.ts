/**
 * What a final notification (PUT /transfers/{id}) tells the payee's connector to do. Two parties
 * speak in it: the switch connector (`currentState`: COMPLETED, ABORTED or ERROR_OCCURRED) and
 * the hub (`finalNotification.transferState`: COMMITTED or ABORTED). Money moves only on an
 * unambiguous word: both agree, or only one speaks and says a word of its own vocabulary,
 * spelled exactly. Anything else (a contradiction, an unknown or misspelled state) moves nothing:
 * the switch connector is asked for the truth later.
 */

export type NotificationVerdict =
  | { readonly kind: 'commit'; readonly notifiedState: string }
  | { readonly kind: 'release'; readonly notifiedState: string }
  | { readonly kind: 'doubtful'; readonly reason: string }
  | { readonly kind: 'silent' };

type Word = 'commit' | 'release';

const SWITCH_WORDS: Readonly<Record<string, Word>> = { COMPLETED: 'commit', ABORTED: 'release', ERROR_OCCURRED: 'release' };
const HUB_WORDS: Readonly<Record<string, Word>> = { COMMITTED: 'commit', ABORTED: 'release' };

export function readNotification(currentState: string | undefined, hubState: string | undefined): NotificationVerdict {
  if (currentState === undefined && hubState === undefined) return { kind: 'silent' };
  const switchWord = currentState === undefined ? undefined : wordOf(SWITCH_WORDS, currentState);
  const hubWord = hubState === undefined ? undefined : wordOf(HUB_WORDS, hubState);
  if (switchWord === null) return { kind: 'doubtful', reason: `currentState ${JSON.stringify(currentState)} is not COMPLETED, ABORTED or ERROR_OCCURRED` };
  if (hubWord === null) return { kind: 'doubtful', reason: `finalNotification.transferState ${JSON.stringify(hubState)} is not COMMITTED or ABORTED` };
  if (switchWord !== undefined && hubWord !== undefined && switchWord !== hubWord) {
    return { kind: 'doubtful', reason: `currentState ${currentState} contradicts the hub's ${hubState}` };
  }
  const kind = switchWord ?? hubWord;
  const notifiedState = currentState ?? hubState;
  if (kind === undefined || notifiedState === undefined) return { kind: 'silent' };
  return { kind, notifiedState };
}

function wordOf(words: Readonly<Record<string, Word>>, state: string): Word | null {
  return Object.hasOwn(words, state) ? (words[state] as Word) : null;
}
