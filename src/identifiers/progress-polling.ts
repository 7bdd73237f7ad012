/** The shortest wait between two progress requests of the command line. */
export const MIN_POLL_MS = 500;
/** The longest: a job's progress is still shown at least this often. */
export const MAX_POLL_MS = 10_000;
/** How many times the last answer's time the command line waits before asking again. */
const WAIT_PER_ANSWER = 10;

/**
 * How long the command line waits before it asks for a job's progress again, given how long the
 * last answer took. The progress of a job reads every line of it (about 0.5 s for 500,000 lines on
 * SQLite, the connector's event loop and so its payments waiting meanwhile): asking every 500 ms
 * whatever the answer's time would hold the connector about half the time for as long as a large
 * job runs; waiting ten times the answer's time holds it at most a tenth.
 */
export function nextPollDelayMs(lastAnswerMs: number): number {
  if (!Number.isFinite(lastAnswerMs) || lastAnswerMs < 0) return MIN_POLL_MS;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.ceil(lastAnswerMs * WAIT_PER_ANSWER)));
}
