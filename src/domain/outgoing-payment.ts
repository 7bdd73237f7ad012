import { AssertionFailed } from './errors.js';

/**
 * The outgoing (payer-side) payment's state machine. Every transition is listed here.
 *
 *   INITIATING --terms checked--> QUOTED --accept, bank flow--> ACCEPTING
 *       |                           |--accept, mobile-operator flow--> COLLECTING --pending--> AWAITING_DEBIT
 *       '--switch error--> FAILED   '--decline, expired quote--> ABORTED         (callback TS or status
 *                                                                                  "succeeded") --> ACCEPTING
 *   ACCEPTING --switch COMPLETED--> COMPLETED
 *       |--switch failed (error body, ERROR_OCCURRED)--> REFUNDING --refund ok--> REFUNDED
 *       '--timeout, 504: outcome unknown--> CONFIRMING --switch COMPLETED--> COMPLETED
 *                                               '--switch ABORTED--> REFUNDING
 *   (CONFIRMING whose switch still waits for the acceptance after the switch's time limit: the
 *   accept was lost, the quote is withdrawn with acceptQuote false; the switch's ABORTED refunds.)
 *   (REFUNDING whose transfer the switch then reports COMPLETED: the refund is held back, flagged,
 *   and an operator resolves it to COMPLETED, or to REFUNDED if it was paid after all.)
 *
 * COLLECTING, ACCEPTING, CONFIRMING and REFUNDING are durable intents: the recovery worker
 * finishes them after a crash or an outage. A collection that fails or is refused, and a
 * callback with a code other than TS, lead to ABORTED: nothing was debited, nothing to refund.
 */
export const OUTGOING_STATES = [
  'INITIATING',
  'QUOTED',
  'COLLECTING',
  'AWAITING_DEBIT',
  'ACCEPTING',
  'CONFIRMING',
  'REFUNDING',
  'COMPLETED',
  'REFUNDED',
  'ABORTED',
  'FAILED',
] as const;
export type OutgoingState = (typeof OUTGOING_STATES)[number];

const TRANSITIONS: Record<OutgoingState, readonly OutgoingState[]> = {
  INITIATING: ['QUOTED', 'ABORTED', 'FAILED'],
  QUOTED: ['ACCEPTING', 'COLLECTING', 'ABORTED'],
  COLLECTING: ['AWAITING_DEBIT', 'ACCEPTING', 'ABORTED'],
  AWAITING_DEBIT: ['ACCEPTING', 'ABORTED'],
  ACCEPTING: ['COMPLETED', 'CONFIRMING', 'REFUNDING'],
  CONFIRMING: ['COMPLETED', 'REFUNDING'],
  // COMPLETED by an operator only, for a refund held back: the switch reported the transfer completed.
  REFUNDING: ['REFUNDED', 'COMPLETED'],
  COMPLETED: [],
  REFUNDED: [],
  ABORTED: [],
  FAILED: [],
};

export function canTransitionOutgoing(from: OutgoingState, to: OutgoingState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isFinalOutgoing(state: OutgoingState): boolean {
  return TRANSITIONS[state].length === 0;
}

export function parseOutgoingState(text: string): OutgoingState {
  const state = OUTGOING_STATES.find((candidate) => candidate === text);
  if (state === undefined) throw new AssertionFailed(`stored outgoing payment in unknown state ${text}`);
  return state;
}
