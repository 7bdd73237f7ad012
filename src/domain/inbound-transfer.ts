import { AssertionFailed } from './errors.js';

/**
 * The incoming (payee-side) transfer's state machine. Every transition is listed here.
 *
 *   RECEIVED --reserve ok--> RESERVED --COMPLETED--> COMMITTING --credit ok--> COMMITTED
 *      |                        |
 *      |--declined--> REJECTED  '--other state--> RELEASING --release ok--> ABORTED
 *      '--switch says aborted--> RELEASING
 *
 * COMMITTING and RELEASING are durable intents: the money movement they name is retried
 * (by the request's retry or the recovery worker) until it succeeds.
 */
export const INBOUND_TRANSFER_STATES = [
  'RECEIVED',
  'RESERVED',
  'REJECTED',
  'COMMITTING',
  'COMMITTED',
  'RELEASING',
  'ABORTED',
] as const;
export type InboundTransferState = (typeof INBOUND_TRANSFER_STATES)[number];

const TRANSITIONS: Record<InboundTransferState, readonly InboundTransferState[]> = {
  RECEIVED: ['RESERVED', 'REJECTED', 'RELEASING'],
  RESERVED: ['COMMITTING', 'RELEASING'],
  REJECTED: [],
  COMMITTING: ['COMMITTED'],
  COMMITTED: [],
  RELEASING: ['ABORTED'],
  ABORTED: [],
};

export function canTransition(from: InboundTransferState, to: InboundTransferState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** States from which `to` may be entered. */
export function statesLeadingTo(to: InboundTransferState): InboundTransferState[] {
  return INBOUND_TRANSFER_STATES.filter((from) => TRANSITIONS[from].includes(to));
}

export function parseInboundTransferState(text: string): InboundTransferState {
  const state = INBOUND_TRANSFER_STATES.find((candidate) => candidate === text);
  if (state === undefined) throw new AssertionFailed(`stored transfer in unknown state ${text}`);
  return state;
}

/** The backend API's transferState word for GET /transfers/{id}. */
export function backendTransferState(state: InboundTransferState): 'RECEIVED' | 'RESERVED' | 'COMMITTED' | 'ABORTED' {
  switch (state) {
    case 'RECEIVED':
      return 'RECEIVED';
    case 'RESERVED':
    case 'COMMITTING':
      return 'RESERVED';
    case 'COMMITTED':
      return 'COMMITTED';
    case 'REJECTED':
    case 'RELEASING':
    case 'ABORTED':
      return 'ABORTED';
  }
}
