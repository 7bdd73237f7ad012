/**
 * The parts of Apache Fineract's REST API (fineract-provider/api/v1) this adapter uses, as read
 * from its published API documentation. Fineract writes ids, enum values and amounts as JSON
 * numbers; they are parsed as decimal text (contract/decimal-json.ts), so ids stay strings here
 * and amounts never become floats. Nothing here leaves this folder.
 *
 * Calls:
 *   GET  /clients?externalId={id}                        client search by external id
 *   GET  /clients/{clientId}/accounts                    the client's savings accounts
 *   GET  /savingsaccounts/{id}                           an account (the float's balances too; never its statement)
 *   GET  /savingsaccounts/{id}/transactions/{txId}       one transaction (our hold) by its id
 *   POST /savingsaccounts/{id}/transactions?command=deposit | withdrawal | holdAmount
 *   POST /savingsaccounts/{id}/transactions/{holdId}?command=releaseAmount
 *   GET  /paymenttypes                                   start-up check of FINERACT_PAYMENT_TYPE_ID
 *   GET  /savingsaccounts/{id}/transactions/search?fromDate&toDate&types&offset&limit
 *                                                        the float's deposits and withdrawals of a period (reconciliation)
 * Every call carries `Authorization: Basic ...` and `Fineract-Platform-TenantId`; every POST an
 * `Idempotency-Key` (Fineract 1.9 and later), and its answer is read with `x-served-from-cache`.
 * Commands are dated `yyyy-MM-dd` with the tenant's day (FINERACT_TIMEZONE).
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

/** An account as commit, refund and the start-up check need it: what it is, not what it holds. */
export interface FineractSavingsAccount {
  readonly id: string;
  readonly status: FineractEnum;
  readonly subStatus?: FineractEnum;
  readonly currency: string;
}

/**
 * The float with its balances, read only where a balance decides something (a refund checks the
 * float can fund it; a float withdrawal refused for a short float is sent again only once the
 * float covers it). Balances are signed decimal text at Fineract's scale, as Fineract wrote
 * them: an overdraft product lets a balance go below zero, and Fineract's currency table can give
 * a currency more decimals than ISO 4217 (UGX has 2), so "-20.000000" and "1500.500000" are both
 * balances. They are compared as decimals (fundsCover), never converted to numbers.
 */
export interface FineractFloatAccount extends FineractSavingsAccount {
  readonly accountBalance: string;
  readonly availableBalance?: string;
}

/** A hold read by its id (GET /savingsaccounts/{id}/transactions/{transactionId}). */
export interface FineractHold {
  readonly id: string;
  /** Decimal string, canonical for the account's currency. */
  readonly amount: string;
  /** releaseTransactionId is not 0: Fineract writes 0 while the hold is unreleased. */
  readonly released: boolean;
}

export interface FineractPaymentType {
  readonly id: string;
  readonly name: string;
}

/** savingsAccountTransactionType ids (SavingsAccountTransactionType.java). */
export const FINERACT_TRANSACTION_TYPE = {
  deposit: '1',
  withdrawal: '2',
  amountHold: '20',
  amountRelease: '21',
} as const;

/** One page of GET /savingsaccounts/{id}/transactions/search: `{ total, content }`. */
export interface FineractTransactionPage {
  readonly total: number;
  readonly transactions: readonly FineractStatementLine[];
}

/** A savings transaction as the search lists it; only what reconciliation reads. */
export interface FineractStatementLine {
  readonly id: string;
  readonly typeId: string;
  readonly amount: string;
  readonly currency: string;
  /** The value date, YYYY-MM-DD. */
  readonly date: string;
  readonly receiptNumber: string | undefined;
  readonly reversed: boolean;
}

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
