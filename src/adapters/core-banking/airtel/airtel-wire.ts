/**
 * The parts of Airtel Money's open API (openapi.airtel.africa) this adapter uses, as read from
 * Airtel's public developer documentation. Nothing here leaves this folder.
 *
 *   POST /auth/oauth2/token                      client-credentials token
 *   GET  /standard/v1/users/{msisdn}             KYC of a subscriber (name, barred flag)
 *   GET  /standard/v1/users/balance              balance of our disbursement wallet
 *   POST /standard/v2/disbursements/             pay a subscriber (B2C), with the encrypted PIN
 *   GET  /standard/v2/disbursements/{id}         disbursement enquiry
 *   POST /merchant/v1/payments/                  collection: USSD push asking a subscriber to pay
 *   GET  /standard/v1/payments/{id}              collection enquiry
 * Every call except the token carries `Authorization: Bearer`, `X-Country` and `X-Currency`.
 * MSISDNs travel without the country code. Amounts are JSON numbers in major units.
 * Business outcomes come back with HTTP 200 in the `status` envelope: `success`, and a
 * `response_code` naming the outcome (DP008... collections, DP009... disbursements).
 */

export interface AirtelToken {
  readonly accessToken: string;
  readonly expiresInSeconds: number;
}

export interface AirtelEnvelopeStatus {
  readonly success: boolean;
  readonly code: string;
  readonly resultCode?: string;
  readonly responseCode?: string;
}

export interface AirtelSubscriber {
  readonly msisdn: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly barred: boolean;
}

export interface AirtelBalance {
  /** Decimal string, canonical for the currency. */
  readonly balance: string;
  readonly currency: string;
}

/** Transaction status codes of enquiries and callbacks. */
export type AirtelTransactionStatus = 'TS' | 'TF' | 'TA' | 'TIP';

export interface AirtelTransaction {
  readonly id: string;
  /** As written by Airtel; see toTransactionStatus for the ones the adapter recognises. */
  readonly status?: string;
  readonly airtelMoneyId?: string;
}

export interface AirtelDisbursementRequest {
  readonly payee: { readonly msisdn: string; readonly wallet_type: 'NORMAL' };
  readonly reference: string;
  /** The PIN, RSA-encrypted with Airtel's public key, as configured (AIRTEL_PIN_ENCRYPTED). */
  readonly pin: string;
  readonly transaction: { readonly amount: unknown; readonly id: string; readonly type: 'B2C' };
}

export interface AirtelCollectionRequest {
  readonly reference: string;
  readonly subscriber: { readonly country: string; readonly currency: string; readonly msisdn: string };
  readonly transaction: { readonly amount: unknown; readonly country: string; readonly currency: string; readonly id: string };
}

/** The body Airtel sends to the callback URL registered in its portal when a collection ends. */
export interface AirtelCallback {
  readonly transaction: { readonly id: string; readonly status_code: string; readonly message?: string; readonly airtel_money_id?: string };
}

/** Response codes the adapter recognises; any other code is an outcome it does not guess. */
export const DISBURSEMENT_CODES = {
  success: 'DP00900001001',
  ambiguous: 'DP00900001000',
  inProgress: 'DP00900001006',
  insufficientFunds: 'DP00900001007',
  payeeNotAllowed: 'DP00900001010',
  invalidMsisdn: 'DP00900001012',
  notFound: 'DP00900001015',
  /** Failures that end the transaction: limits, amount out of range, refused, payee invalid, signature refused. */
  failed: ['DP00900001003', 'DP00900001004', 'DP00900001005', 'DP00900001009', 'DP00900001013', 'DP00900001016'],
  /**
   * Answers that send the caller to the transaction enquiry, not outcomes: DP00900001014
   * "Transaction Timed Out" (Airtel's code table: it may be processed or failed, ask the
   * enquiry), DP00900001017 "Duplicate Transaction Id" (the id was already used: ask the
   * enquiry about the transaction that holds it) and DP00900001011 (named "transaction with
   * similar information already exists" in some copies of the table, "transaction not allowed"
   * in others): none of them says nobody was paid.
   */
  askEnquiry: ['DP00900001011', 'DP00900001014', 'DP00900001017'],
} as const;

/**
 * "Transaction not found" as Airtel's enquiries answer it: ESB000045 (the gateway's result code),
 * DP00800001025 (collections) and DP00900001015 (disbursements). Whichever comes back, in
 * result_code or response_code, means Airtel never saw the id.
 */
export const TRANSACTION_NOT_FOUND_CODES: readonly string[] = ['ESB000045', 'DP00800001025', 'DP00900001015'];

/** User enquiry failed: the MSISDN is no Airtel Money subscriber. */
export const UNKNOWN_SUBSCRIBER_CODE = 'DP02200000000';

export const COLLECTION_CODES = {
  success: 'DP00800001001',
  ambiguous: 'DP00800001000',
  inProgress: 'DP00800001006',
  insufficientFunds: 'DP00800001007',
  refused: 'DP00800001008',
  payerNotAllowed: 'DP00800001010',
  invalidMsisdn: 'DP00800001012',
  notFound: 'DP00800001025',
  failed: ['DP00800001002', 'DP00800001003', 'DP00800001004', 'DP00800001005', 'DP00800001029'],
  /** DP00800001024 "Transaction Timed Out": the prompt's outcome is not known; the enquiry decides. */
  timedOut: 'DP00800001024',
} as const;
