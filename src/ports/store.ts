import type { InboundTransferState } from '../domain/inbound-transfer.js';
import type { PartyIdType } from '../domain/identifiers.js';
import type { ExtensionItem } from '../domain/iso20022.js';

/** A quote we gave, stored so that its transfer can be checked and a retry answered the same. */
export interface QuoteRecord {
  readonly quoteId: string;
  readonly transactionId: string;
  readonly requestHash: string;
  readonly amountType: 'SEND' | 'RECEIVE';
  /** The quote request's amount. */
  readonly amount: string;
  readonly currency: string;
  readonly transferAmount: string;
  readonly payeeReceiveAmount: string;
  readonly fee: string;
  readonly payeeIdType: PartyIdType;
  readonly payeeIdValue: string;
  readonly payeeIdSubValue: string | null;
  /** ISO 8601 with milliseconds. */
  readonly expiration: string;
  /** Payer extension keys received with the quote (iso20022 mode). */
  readonly payerKeys: readonly string[];
  /** The exact answer given, returned again on a retry. */
  readonly response: QuoteResponseBody;
  readonly createdAt: string;
}

export interface QuoteResponseBody {
  readonly quoteId: string;
  readonly transactionId: string;
  readonly transferAmount: string;
  readonly transferAmountCurrency: string;
  readonly payeeReceiveAmount: string;
  readonly payeeReceiveAmountCurrency: string;
  readonly payeeFspFeeAmount: string;
  readonly payeeFspFeeAmountCurrency: string;
  readonly expiration: string;
  readonly extensionList?: readonly ExtensionItem[];
}

export interface TransferRecord {
  readonly transferId: string;
  readonly quoteId: string;
  readonly requestHash: string;
  readonly state: InboundTransferState;
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly transactionType: string;
  /** The request's amount (the quote request's amount). */
  readonly amount: string;
  readonly currency: string;
  /** What the hub moves to us (the quote's transferAmount). */
  readonly transferAmount: string;
  /** What is reserved from the float and credited to the payee. */
  readonly payeeReceiveAmount: string;
  readonly payerIdType: string;
  readonly payerIdValue: string;
  readonly payeeIdType: PartyIdType;
  readonly payeeIdValue: string;
  readonly payeeIdSubValue: string | null;
  readonly payeeAccountId: string;
  /** When RESERVED was first answered; returned again on a retry. */
  readonly completedTimestamp: string | null;
  /** The notification state received from the switch (COMPLETED, ABORTED, ...), once one came. */
  readonly notifiedState: string | null;
  /** For REJECTED: the catalogue error the transfer was answered with. */
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

export type NewTransfer = Omit<
  TransferRecord,
  'attempts' | 'nextAttemptAt' | 'lastError' | 'needsAttention' | 'updatedAt' | 'notifiedState' | 'errorName' | 'errorMessage' | 'completedTimestamp'
>;

/** Fields a transition may change besides the state. */
export interface TransferChanges {
  readonly completedTimestamp?: string;
  readonly notifiedState?: string;
  readonly errorName?: string;
  readonly errorMessage?: string;
  readonly attempts?: number;
  readonly nextAttemptAt?: string | null;
  readonly lastError?: string | null;
  readonly needsAttention?: boolean;
  /** The code of the error that caused this change, for the audit trail only (not stored on the transfer). */
  readonly errorCode?: string;
  /**
   * lastError and needsAttention stay as stored when the stored last error records a
   * contradiction (src/domain/contradiction.ts), decided by the store in the same write, so that a
   * contradiction flagged by another process while the step ran outlives the step's failed
   * attempts and its end.
   */
  readonly keepContradiction?: boolean;
}

/** A period of last changes: from `from` (included) to `to` (excluded), ISO 8601 instants. */
export interface ChangedPeriod {
  readonly from: string;
  readonly to: string;
}

/** What operators search records by (the operations console). Every field narrows; none is required. */
export interface RecordSearch {
  /** The record's own id (the transferId; for outgoing payments the homeTransactionId or the transferId). */
  readonly id?: string;
  readonly states?: readonly string[];
  /** Created at or after this instant (ISO 8601). */
  readonly createdFrom?: string;
  /** Created before this instant (ISO 8601). */
  readonly createdTo?: string;
  readonly needsAttention?: boolean;
  readonly limit: number;
}

/**
 * An operator's compare-and-set holds only while the record is flagged for attention and no
 * worker holds its lease at `now`: an operator never overtakes an institution call in flight.
 */
export interface OperatorGuard {
  readonly now: string;
}

export interface InsertResult<T> {
  readonly record: T;
  readonly created: boolean;
}

/**
 * An incoming transfer's insert: created, or the record stored under its transferId, or nothing
 * because its quote is taken by another transfer that holds or moved money (not ABORTED or
 * REJECTED), however close together the two arrived.
 */
export type TransferInsertResult = InsertResult<TransferRecord> | { readonly created: false; readonly quoteTaken: true };

/**
 * Durable state of incoming payments. Every method is one atomic transaction.
 * Inserts are keyed by the switch's ids; an insert of a known id returns the stored record.
 */
export interface InboundStore {
  insertQuote(quote: QuoteRecord): Promise<InsertResult<QuoteRecord>>;
  findQuote(quoteId: string): Promise<QuoteRecord | undefined>;
  insertTransfer(transfer: NewTransfer): Promise<TransferInsertResult>;
  findTransfer(transferId: string): Promise<TransferRecord | undefined>;
  /**
   * Moves a transfer to `to` only when its state is one of `from` (compare-and-set); returns the
   * updated record, or undefined when the state was not one of `from`.
   */
  transitionTransfer(
    transferId: string,
    from: readonly InboundTransferState[],
    to: InboundTransferState,
    changes?: TransferChanges,
    guard?: OperatorGuard,
  ): Promise<TransferRecord | undefined>;
  /**
   * Makes the transfer due for the recovery worker at `now`, if it is still in `state` and no
   * worker holds its lease; answers whether it did.
   */
  scheduleTransferNow(transferId: string, state: InboundTransferState, now: string): Promise<boolean>;
  /**
   * Keeps an intent its holder is still working on (a commit or release call under way) from the
   * recovery workers until `until`, if it is still in `state`; a lease reaching further stays.
   */
  holdTransfer(transferId: string, state: InboundTransferState, until: string): Promise<boolean>;
  /** Gives back claims made with `leaseUntil` that the worker will not work (a stop ended its pass). */
  releaseTransferClaims(transferIds: readonly string[], leaseUntil: string): Promise<void>;
  /** Transfers matching `search`, newest first. */
  searchTransfers(search: RecordSearch): Promise<TransferRecord[]>;
  /**
   * Every transfer last changed in `period` (a reconciliation's records), as they all were at one
   * instant, given to `visit` a page at a time (CHANGED_PAGE_SIZE), the event loop free between
   * pages. An error thrown by `visit` stops the reading and is thrown here.
   */
  visitChangedTransfers(period: ChangedPeriod, visit: (page: readonly TransferRecord[]) => void): Promise<void>;
  /**
   * Records a failed attempt without changing the state, if the transfer is still in `state`:
   * bookkeeping from an actor that lost a race never lands on a later state. Answers whether it did.
   */
  recordTransferAttempt(transferId: string, state: InboundTransferState, changes: TransferChanges): Promise<boolean>;
  /**
   * Claims up to `limit` transfers in `states` whose next attempt is due (or unset and last
   * updated before `staleBefore`), leasing them until `leaseUntil` so that no other worker
   * takes them meanwhile.
   */
  claimDueTransfers(options: {
    readonly states: readonly InboundTransferState[];
    readonly now: string;
    readonly staleBefore: string;
    readonly leaseUntil: string;
    readonly limit: number;
  }): Promise<TransferRecord[]>;
}
