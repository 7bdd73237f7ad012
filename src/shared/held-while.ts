/**
 * How an intent (a stored "about to move money" state) is kept from the recovery workers while
 * the request or worker that wrote it is still making its institution call: they take over an
 * intent left untouched for a while, as if its writer had crashed, and an institution call can
 * outlast that while (Airtel's answers may take 30 s each). Without the hold a second commit,
 * release or refund would go out beside the first, under the same reference.
 */
export interface IntentHold {
  /** How often the holder writes again that it is still working. */
  readonly everyMs: number;
  /** How long each such write keeps the intent from the workers: a crashed holder's intent is free this long after its last write. */
  readonly forMs: number;
}

/** The hold for intents taken over after `staleAfterMs` untouched: written at a third of it, each write lasting all of it. */
export function intentHold(staleAfterMs: number): IntentHold {
  return { everyMs: Math.max(1, Math.floor(staleAfterMs / 3)), forMs: staleAfterMs };
}

/**
 * Runs `work` and, every `everyMs` until it ends, `renew` (one at a time; a failed renewal goes to
 * `failed` and the next one is tried at the next interval). Work that ends sooner, the usual case,
 * writes nothing. A renewal still running when the work ends is waited for, so that none lands
 * after the caller has moved on.
 */
export async function heldWhile<T>(everyMs: number, renew: () => Promise<unknown>, failed: (error: unknown) => void, work: () => Promise<T>): Promise<T> {
  let renewing: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (renewing !== undefined) return;
    renewing = renew().then(
      () => {
        renewing = undefined;
      },
      (error: unknown) => {
        renewing = undefined;
        failed(error);
      },
    );
  }, everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    if (renewing !== undefined) await renewing;
  }
}
