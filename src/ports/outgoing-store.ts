import type { OutgoingState } from '../domain/outgoing-payment.js';
import type { PartyIdType } from '../domain/identifiers.js';
import type { OutgoingFlow } from './core-banking.js';
import type { ChangedPeriod, InsertResult, OperatorGuard, RecordSearch } from './store.js';

export type PaymentKind = 'SEND_MONEY' | 'MERCHANT_PAYMENT';

/**
 * One outgoing payment, keyed by the channel's homeTransactionId and, once the switch has
 * answered, by the switch's transferId. It holds identifiers and amounts only: the payer's name
 * and birth data are sent to the switch and never stored.
 */
export interface OutgoingPaymentRecord {
  readonly homeTransactionId: string;
  readonly transferId: string | null;
  /** Fingerprint of the channel's request, to tell a retry from a modified request. */
  readonly requestHash: string;
  readonly kind: PaymentKind;
  readonly amountType: 'SEND' | 'RECEIVE';
  /** Chosen when the payment starts, so that a restart with other settings finishes it the same way. */
  readonly flow: OutgoingFlow;
  readonly state: OutgoingState;
  readonly payerId: string;
  readonly payeeIdType: PartyIdType;
  readonly payeeId: string;
  readonly sendAmount: string;
  readonly sendCurrency: string;
  readonly receiveCurrency: string;
  /** What the customer is debited (collected or, in the bank flow, debited by the channel), in sendCurrency. */
  readonly debitAmount: string | null;
  /** The terms answered to the channel (JSON), answered again on a retry. */
  readonly terms: string | null;
  readonly quoteExpiration: string | null;
  /** The last currentState the switch reported. */
  readonly switchState: string | null;
  /** The institution's reference for the collection (mobile-operator flow), for support staff. */
  readonly institutionReference: string | null;
  /** The transaction.status_code of the callback, once one came. */
  readonly callbackCode: string | null;
  /** For the states that answer the channel with an error: the catalogue error and its message. */
  readonly errorName: string | null;
  readonly errorMessage: string | null;
  /** Recovery bookkeeping. */
  readonly attempts: number;
  readonly nextAttemptAt: string | null;
  readonly lastError: string | null;
  readonly needsAttention: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type NewOutgoingPayment = Pick<
  OutgoingPaymentRecord,
  | 'homeTransactionId'
  | 'requestHash'
  | 'kind'
  | 'amountType'
  | 'flow'
  | 'payerId'
  | 'payeeIdType'
  | 'payeeId'
  | 'sendAmount'
  | 'sendCurrency'
  | 'receiveCurrency'
  | 'createdAt'
>;

/** Fields a transition may change besides the state. */
export interface OutgoingChanges {
  readonly transferId?: string;
  readonly debitAmount?: string;
  readonly terms?: string;
  readonly quoteExpiration?: string;
  readonly switchState?: string;
  readonly institutionReference?: string;
  readonly callbackCode?: string;
  readonly errorName?: string;
  readonly errorMessage?: string;
  readonly attempts?: number;
  readonly nextAttemptAt?: string | null;
  readonly lastError?: string | null;
  readonly needsAttention?: boolean;
  /** The code of the error that caused this change, for the audit trail only (not stored on the payment). */
  readonly errorCode?: string;
  /** A contradiction already recorded stays the last error, and the flag stays up (see TransferChanges.keepContradiction, src/ports/store.ts). */
  readonly keepContradiction?: boolean;
}

export interface ClaimOptions {
  readonly states: readonly OutgoingState[];
  readonly now: string;
  /** Items without a scheduled attempt are due when last updated before this. */
  readonly staleBefore: string;
  readonly leaseUntil: string;
  readonly limit: number;
}

/**
 * Durable state of outgoing payments. Every method is one atomic transaction.
 */
export interface OutgoingStore {
  /** Inserts in INITIATING unless the homeTransactionId is known; answers the stored record either way. */
  insert(payment: NewOutgoingPayment): Promise<InsertResult<OutgoingPaymentRecord>>;
  findByHomeTransactionId(homeTransactionId: string): Promise<OutgoingPaymentRecord | undefined>;
  findByTransferId(transferId: string): Promise<OutgoingPaymentRecord | undefined>;
  /** The payment whose refund carries this reference at the institution (refundReference of its transferId). */
  findByRefundReference(refundReference: string): Promise<OutgoingPaymentRecord | undefined>;
  /**
   * Moves a payment to `to` only when its state is one of `from` (compare-and-set); returns the
   * updated record, or undefined when the state was not one of `from`.
   */
  transition(
    homeTransactionId: string,
    from: readonly OutgoingState[],
    to: OutgoingState,
    changes?: OutgoingChanges,
    guard?: OperatorGuard,
  ): Promise<OutgoingPaymentRecord | undefined>;
  /** Makes the payment due for the recovery worker at `now`, if still in `state` and not leased; answers whether it did. */
  scheduleNow(homeTransactionId: string, state: OutgoingState, now: string): Promise<boolean>;
  /** Payments matching `search`, newest first. */
  search(search: RecordSearch): Promise<OutgoingPaymentRecord[]>;
  /** Every payment last changed in `period`, as at one instant, a page at a time (see InboundStore.visitChangedTransfers). */
  visitChangedPayments(period: ChangedPeriod, visit: (page: readonly OutgoingPaymentRecord[]) => void): Promise<void>;
  /**
   * Records a failed attempt (and anything learnt) without changing the state, if the payment is
   * still in `state`: bookkeeping from an actor that lost a race never lands on a later state.
   * Answers whether it did.
   */
  recordAttempt(homeTransactionId: string, state: OutgoingState, changes: OutgoingChanges): Promise<boolean>;
  /**
   * Takes a COLLECTING payment's next prompt until `until` (its next attempt and its lease), unless
   * another worker holds it at `now`: whoever takes it is the only one to prompt before then.
   * Answers whether it did.
   */
  holdPrompt(homeTransactionId: string, until: string, now: string): Promise<boolean>;
  /**
   * Keeps an intent its holder is still working on (a refund, or a confirmation's calls, under
   * way) from the recovery workers until `until`, if it is still in `state`; a lease reaching
   * further stays.
   */
  holdIntent(homeTransactionId: string, state: OutgoingState, until: string): Promise<boolean>;
  /** Gives back claims made with `leaseUntil` that the worker will not work (a stop ended its pass). */
  releaseClaims(homeTransactionIds: readonly string[], leaseUntil: string): Promise<void>;
  /** Claims due payments in `states`, leasing them so that no other worker takes them meanwhile. */
  claimDue(options: ClaimOptions): Promise<OutgoingPaymentRecord[]>;
  /** Payments flagged as needing manual action, oldest first. */
  listNeedingAttention(limit: number): Promise<OutgoingPaymentRecord[]>;
}
