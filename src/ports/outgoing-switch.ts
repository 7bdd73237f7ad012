import type { ExtensionItem } from '../domain/iso20022.js';

/**
 * The switch connector's outbound transfer (POST /transfers, PUT /transfers/{id}) as the
 * outgoing aggregate sees it. The adapter reads the wire body into these shapes without judging
 * it: values are the switch's own strings, checked by the aggregate's rules
 * (outgoing-terms-check.ts); fields of the wrong type are listed in `malformed`.
 */

export interface OutboundTransferRequest {
  readonly homeTransactionId: string;
  readonly from: {
    readonly idType: string;
    readonly idValue: string;
    readonly displayName: string;
    /** YYYY-MM-DD (fspiop mode). */
    readonly dateOfBirth?: string;
    /** ISO 20022 payer data (iso20022 mode). */
    readonly extensionList?: readonly ExtensionItem[];
  };
  readonly to: { readonly idType: string; readonly idValue: string };
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly currency: string;
  readonly amount: string;
  readonly transactionType: 'TRANSFER';
  readonly note?: string;
}

export type TransferContinuation = { readonly acceptQuote: boolean } | { readonly acceptConversion: boolean };

/** Money as the switch wrote it: unchecked strings. */
export interface WireMoney {
  readonly amount: string;
  readonly currency: string;
}

export interface ReturnedQuote {
  readonly transferAmount?: WireMoney;
  readonly payeeReceiveAmount?: WireMoney;
  readonly payeeFspFee?: WireMoney;
  readonly payeeFspCommission?: WireMoney;
  readonly expiration?: string;
}

export interface ConversionCharge {
  readonly chargeType: string;
  readonly sourceAmount?: WireMoney;
  readonly targetAmount?: WireMoney;
}

export interface ConversionTerms {
  readonly conversionId?: string;
  readonly sourceAmount?: { readonly currency: string; readonly amount?: string };
  readonly targetAmount?: { readonly currency: string; readonly amount?: string };
  readonly charges: readonly ConversionCharge[];
  readonly expiration?: string;
}

export interface OutboundTransfer {
  readonly transferId?: string;
  readonly currentState?: string;
  /**
   * fulfil.body.transferState: the hub's own word on the transfer, when the switch connector
   * passes the hub's answer on (its `currentState` COMPLETED says only that the hub answered).
   */
  readonly hubState?: string;
  /**
   * The FSPIOP code of the hub's error callback (PUT /transfers/{id}/error) the switch connector's
   * transfer ended on, from its `lastError`: the hub itself refused or aborted the transfer, so
   * it will not commit it. Absent when the switch connector failed on its own.
   */
  readonly hubErrorCode?: string;
  /** getPartiesResponse.body.party.name, or its personalInfo.complexName joined. */
  readonly payeeName?: string;
  readonly quote?: ReturnedQuote;
  readonly conversion?: ConversionTerms;
  /** Paths of fields present with the wrong type. */
  readonly malformed: readonly string[];
}

/**
 * How an outbound call ended, sorted once by the adapter:
 * - answered: a 2xx with the transfer's state;
 * - failed: the switch answered with an error (4xx, 5xx other than 504) or the request never
 *   reached it (connection refused, `httpStatus` 0). For a call that moves money (an accept)
 *   only some failures prove that the transfer went no further: see OutgoingSettlement.accept;
 * - unknown: no answer in time, a reset, the switch connector's own 504, or any transport error
 *   after the request may have reached it: outcome unknown.
 */
export type OutboundAnswer =
  | { readonly outcome: 'answered'; readonly transfer: OutboundTransfer }
  | {
      readonly outcome: 'failed';
      readonly httpStatus: number;
      /** The error body's statusCode, as text whether the switch sent a string or a number. */
      readonly statusCode: string;
      readonly message: string;
      readonly transfer?: OutboundTransfer;
    }
  | { readonly outcome: 'unknown'; readonly reason: string; readonly transfer?: OutboundTransfer };
