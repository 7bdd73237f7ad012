import type { ExtensionItem } from '../domain/iso20022.js';

/**
 * The parts of the switch connector's backend API bodies the aggregate reads. The HTTP layer
 * validates bodies against the published schemas before they get here; unknown fields pass.
 */
export interface PartyRef {
  readonly idType: string;
  readonly idValue: string;
  readonly idSubValue?: string;
  /** The party's regular fields: in iso20022 mode the switch connector carries the payer's name here. */
  readonly displayName?: string;
  readonly firstName?: string;
  readonly middleName?: string;
  readonly lastName?: string;
  readonly dateOfBirth?: string;
  readonly extensionList?: readonly ExtensionItem[];
}

export interface QuoteRequestBody {
  readonly quoteId: string;
  readonly transactionId: string;
  readonly to: PartyRef;
  readonly from: PartyRef;
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly amount: string;
  readonly currency: string;
  readonly transactionType: string;
  readonly extensionList?: readonly ExtensionItem[];
}

export interface TransferRequestBody {
  readonly transferId: string;
  readonly quote: {
    readonly quoteId: string;
    readonly transactionId: string;
    readonly transferAmount: string;
    readonly transferAmountCurrency: string;
    readonly payeeReceiveAmount?: string;
    readonly payeeReceiveAmountCurrency?: string;
    readonly payeeFspFeeAmount?: string;
    readonly payeeFspFeeAmountCurrency?: string;
    readonly expiration?: string;
  };
  readonly from: PartyRef;
  readonly to: PartyRef;
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly currency: string;
  readonly amount: string;
  readonly transactionType: string;
  readonly ilpPacket?: { readonly data?: { readonly amount?: { readonly amount: string; readonly currency: string } } };
  readonly quoteRequestExtensions?: readonly ExtensionItem[];
  readonly extensionList?: readonly ExtensionItem[];
}

export interface TransferNotificationBody {
  readonly currentState?: string;
  readonly finalNotification?: { readonly transferState?: string };
}

export interface PartyResponse {
  readonly idType: string;
  readonly idValue: string;
  readonly idSubValue?: string;
  readonly displayName: string;
  readonly firstName?: string;
  readonly middleName?: string;
  readonly lastName?: string;
  readonly dateOfBirth?: string;
  readonly kycInformation?: string;
  readonly supportedCurrencies: readonly string[];
  readonly extensionList?: readonly ExtensionItem[];
}

export interface TransferResponse {
  readonly homeTransactionId: string;
  readonly transferState: 'RESERVED';
  readonly completedTimestamp: string;
}

export interface TransferDetails {
  readonly homeTransactionId: string;
  readonly from: { readonly idType: string; readonly idValue: string };
  readonly to: { readonly idType: string; readonly idValue: string; readonly idSubValue?: string };
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly currency: string;
  readonly amount: string;
  readonly transferState: 'RECEIVED' | 'RESERVED' | 'COMMITTED' | 'ABORTED';
  readonly transactionType: string;
  readonly timestamp: string;
}
