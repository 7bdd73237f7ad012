import type { Money } from '../domain/money.js';
import type { OutgoingFlow } from '../ports/core-banking.js';
import type { PaymentKind } from '../ports/outgoing-store.js';
import type { OutgoingState } from '../domain/outgoing-payment.js';

/** The channel's send-money (and merchant-payment) request, once the HTTP schema has checked its shape. */
export interface SendMoneyRequest {
  readonly homeTransactionId: string;
  readonly payeeId: string;
  readonly payeeIdType: string;
  readonly sendAmount: string;
  readonly sendCurrency: string;
  readonly receiveCurrency: string;
  readonly transactionDescription?: string;
  readonly transactionType: string;
  readonly payer: {
    readonly name: string;
    readonly payerId: string;
    readonly DateAndPlaceOfBirth?: BirthData;
  };
}

export interface BirthData {
  /** DD-MM-YYYY */
  readonly BirthDt: string;
  readonly PrvcOfBirth?: string;
  readonly CityOfBirth: string;
  readonly CtryOfBirth: string;
}

export interface ConversionView {
  readonly sourceAmount: Money;
  readonly targetAmount: Money;
  readonly charges: ReadonlyArray<{ readonly chargeType: string; readonly amount: Money }>;
  readonly expiration: string;
}

/** The terms answered to POST /send-money: what the channel shows the customer before they accept. */
export interface PaymentTerms {
  readonly homeTransactionId: string;
  readonly transferId: string;
  /** QUOTED when first answered; a retried POST answers the payment's state at that time. */
  readonly state: OutgoingState;
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly payeeName?: string;
  readonly sendAmount: Money;
  /** What the payer's institution sends through the switch. */
  readonly transferAmount: Money;
  /** What the payee receives, in the payee's currency. */
  readonly payeeReceiveAmount: Money;
  /** The payee institution's fee. */
  readonly fees: Money;
  readonly payeeFspCommission?: Money;
  /** What the customer is debited. */
  readonly debitAmount: Money;
  readonly conversion?: ConversionView;
  /** Accept before this: the quote's expiry, or the conversion's when that comes first. */
  readonly expiration: string;
}

/** Where a payment stands: for the channel and support staff, with ids and amounts, no names. */
export interface PaymentStatus {
  readonly homeTransactionId: string;
  readonly transferId: string | null;
  readonly kind: PaymentKind;
  readonly flow: OutgoingFlow;
  readonly state: OutgoingState;
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly sendAmount: Money;
  readonly receiveCurrency: string;
  readonly debitAmount: Money | null;
  readonly transferAmount: Money | null;
  readonly payeeReceiveAmount: Money | null;
  readonly fees: Money | null;
  readonly quoteExpiration: string | null;
  readonly switchState: string | null;
  readonly callbackCode: string | null;
  readonly institutionReference: string | null;
  /** The error the channel was answered with, for payments that ended in one. */
  readonly error: { readonly statusCode: string; readonly name: string; readonly message: string } | null;
  readonly needsAttention: boolean;
  readonly attempts: number;
  readonly nextAttemptAt: string | null;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The answer to an accepted payment: the collection's result (mobile-operator flow) or the outcome (bank flow). */
export interface AcceptResult {
  readonly homeTransactionId: string;
  readonly transferId: string;
  readonly state: OutgoingState;
  readonly collection?: { readonly status: string; readonly institutionReference?: string };
}

/** A payment provider's callback (Airtel Money's shape): TS succeeded, TA/TIP undecided, else failed. */
export interface ProviderCallbackBody {
  readonly transaction: { readonly id: string; readonly status_code: string };
}

/** The reference core banking API's callback: SUCCEEDED, FAILED or PENDING. */
export interface ReferenceCallbackBody {
  readonly reference: string;
  readonly status: string;
  readonly reason?: string;
  readonly institutionReference?: string;
}

export type CallbackBody = ProviderCallbackBody | ReferenceCallbackBody;

/** The transferId and the institution's word, whichever shape the callback came in. */
export function callbackOf(body: CallbackBody): { readonly id: string; readonly code: string } {
  return 'transaction' in body ? { id: body.transaction.id, code: body.transaction.status_code } : { id: body.reference, code: body.status };
}
