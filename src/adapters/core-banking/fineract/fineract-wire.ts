/**
 * The parts of Apache Fineract's REST API (fineract-provider/api/v1) this adapter uses, as read
 * from its published API documentation. Fineract writes ids, enum values and amounts as JSON
 * numbers; they are parsed as decimal text (contract/decimal-json.ts), so ids stay strings here
 * and amounts never become floats. Nothing here leaves this folder.
 *
 * Calls:
 *   GET  /clients?externalId={id}                        client search by external id
 *   GET  /clients/{clientId}/accounts                    the client's savings accounts
 *   GET  /savingsaccounts/{id}[?associations=transactions]
 *   POST /savingsaccounts/{id}/transactions?command=deposit | withdrawal | holdAmount
 *   POST /savingsaccounts/{id}/transactions/{holdId}?command=releaseAmount
 * Every call carries `Authorization: Basic ...` and `Fineract-Platform-TenantId`.
 */

/** Fineract's enum objects: `{ id, code, value }`; the id is what the adapter switches on. */
export interface FineractEnum {
  readonly id: string;
  readonly code: string;
}

export interface FineractClient {
  readonly id: string;
  readonly externalId?: string;
  readonly status: FineractEnum;
  readonly displayName: string;
  readonly firstname?: string;
  readonly middlename?: string;
  readonly lastname?: string;
  /** [year, month, day] on the wire. */
  readonly dateOfBirth?: readonly [string, string, string];
}

export interface FineractSavingsSummary {
  readonly id: string;
  readonly accountNo: string;
  readonly status: FineractEnum;
  readonly subStatus?: FineractEnum;
  readonly currency: string;
  /** `depositType.code`; plain savings are "depositAccountType.savingsDeposit". */
  readonly depositType?: string;
}

export interface FineractTransaction {
  readonly id: string;
  /** transactionType.id: 1 deposit, 2 withdrawal, 20 amount hold, 21 amount release; others are not ours. */
  readonly typeId: string;
  /** Decimal string, canonical for the account's currency. */
  readonly amount: string;
  readonly reversed: boolean;
  /** paymentDetailData.receiptNumber: where deposits and withdrawals carry our reference. */
  readonly receiptNumber?: string;
  /** Where a hold carries our reference (holds take no payment details). */
  readonly reasonForBlock?: string;
  /** Set on a hold once it is released. */
  readonly releaseTransactionId?: string;
}

export interface FineractSavingsAccount {
  readonly id: string;
  readonly status: FineractEnum;
  readonly subStatus?: FineractEnum;
  readonly currency: string;
  readonly accountBalance: string;
  readonly availableBalance?: string;
  readonly transactions: readonly FineractTransaction[];
}

export const FINERACT_TRANSACTION_TYPE = {
  deposit: '1',
  withdrawal: '2',
  amountHold: '20',
  amountRelease: '21',
} as const;

/** Body of deposit and withdrawal commands. Amounts travel as decimal strings, which Fineract reads with `locale`. */
export interface FineractMoneyCommand {
  readonly locale: 'en';
  readonly dateFormat: 'yyyy-MM-dd';
  readonly transactionDate: string;
  readonly transactionAmount: string;
  readonly paymentTypeId: unknown;
  readonly receiptNumber: string;
  readonly note: string;
}

export interface FineractHoldCommand {
  readonly locale: 'en';
  readonly dateFormat: 'yyyy-MM-dd';
  readonly transactionDate: string;
  readonly transactionAmount: string;
  readonly reasonForBlock: string;
}

/** Answer of every command: the affected savings account and the new transaction's id. */
export interface FineractCommandResult {
  readonly savingsId: string;
  readonly resourceId: string;
}

/** Error body: a top-level code and a list of per-field errors, each with its own code. */
export interface FineractError {
  readonly httpStatusCode?: string;
  readonly codes: readonly string[];
}
