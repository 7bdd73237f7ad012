/**
 * Wire types of MiniBank, the toy institution of docs/adding-an-institution.md. Its API:
 *
 *   GET  /customers?msisdn={msisdn}   -> { customers: [Customer] }   (empty when unknown; one
 *                                          customer per number, its msisdn echoed)
 *   GET  /float                        -> { balance_minor, ccy }
 *   POST /payments                     -> Payment (201 new, 200 repeat)   header Idempotency-Key
 *   GET  /payments/{key}               -> Payment, or 404
 *   GET  /ping                         -> { ok: true }
 *
 * Every call carries `X-Api-Key`. Amounts are whole minor units written as digit strings
 * ("1234" is 12.34 ZMW). A refused payment is 422 { reason }.
 */

export type MiniBankCustomerState = 'OPEN' | 'FROZEN' | 'SHUT';

export interface MiniBankCustomer {
  /** The customer's number, as in the query. */
  readonly msisdn: string;
  readonly ref: string;
  readonly given: string;
  readonly family: string;
  readonly state: MiniBankCustomerState;
  readonly wallet: string;
  readonly ccy: string;
}

export interface MiniBankPaymentRequest {
  /** "FLOAT" or a wallet number. */
  readonly from: string;
  readonly to: string;
  readonly amount_minor: string;
  readonly ccy: string;
  readonly memo: string;
}

export interface MiniBankPayment {
  readonly key: string;
  readonly to: string;
  readonly amountMinor: string;
  readonly ccy: string;
  /** BOOKED and REJECTED today; kept as written so that a new state reads as unknown. */
  readonly state: string;
}

export type MiniBankRefusal = 'NSF' | 'FROZEN' | 'SHUT' | 'NO_WALLET';
