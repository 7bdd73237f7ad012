/**
 * Wire types of the reference core banking API (docs/reference-core-banking-api.yaml). They
 * stay inside this folder: rest-transform.ts converts them to and from the port's types.
 */

export const REST_ACCOUNT_STATUSES = ['ACTIVE', 'BARRED', 'BLOCKED', 'CLOSED'] as const;
export type RestAccountStatus = (typeof REST_ACCOUNT_STATUSES)[number];

export const REST_RESERVATION_STATES = ['HELD', 'COMMITTED', 'RELEASED'] as const;
export type RestReservationState = (typeof REST_RESERVATION_STATES)[number];

/** Statuses the API documents today; the adapter reads any other string as "unknown". */
export type RestTransactionStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';

/** Every `Error.code` the API documents; test/docs checks this list against the document. */
export const REST_ERROR_CODES = [
  'PARTY_NOT_FOUND',
  'ACCOUNT_NOT_FOUND',
  'PAYER_NOT_FOUND',
  'RESERVATION_NOT_FOUND',
  'TRANSACTION_NOT_FOUND',
  'RESERVATION_RELEASED',
  'RESERVATION_COMMITTED',
  'REFERENCE_CONFLICT',
  'INSUFFICIENT_FLOAT',
  'INSUFFICIENT_FUNDS',
  'ACCOUNT_BLOCKED',
  'ACCOUNT_BARRED',
  'ACCOUNT_CLOSED',
  'CURRENCY_NOT_SUPPORTED',
  'ORIGINAL_NOT_FOUND',
  'ORIGINAL_NOT_DEBITED',
  'PAYER_MISMATCH',
  'CURRENCY_MISMATCH',
  'REFUND_EXCEEDS_ORIGINAL',
  'INVALID_REQUEST',
  'UNAUTHORIZED',
] as const;
export type RestErrorCode = (typeof REST_ERROR_CODES)[number];

/** Why a transaction FAILED (Transaction.reason, CollectionCallback.reason). */
export const REST_FAILURE_REASONS = ['DECLINED', 'EXPIRED', 'INSUFFICIENT_FUNDS', 'ACCOUNT_NOT_ACTIVE', 'RELEASED'] as const;
export type RestFailureReason = (typeof REST_FAILURE_REASONS)[number];

export interface RestPostalAddress {
  readonly addressType?: string;
  readonly department?: string;
  readonly subDepartment?: string;
  readonly streetName?: string;
  readonly buildingNumber?: string;
  readonly buildingName?: string;
  readonly floor?: string;
  readonly postBox?: string;
  readonly room?: string;
  readonly postCode?: string;
  readonly townName?: string;
  readonly townLocationName?: string;
  readonly districtName?: string;
  readonly countrySubDivision?: string;
  readonly country?: string;
  readonly addressLine?: string;
}

export interface RestParty {
  readonly accountId: string;
  readonly idType: string;
  readonly idValue: string;
  readonly idSubValue?: string;
  readonly currency: string;
  readonly status: RestAccountStatus;
  readonly name: { readonly displayName: string; readonly firstName?: string; readonly middleName?: string; readonly lastName?: string };
  readonly dateOfBirth?: string;
  readonly countryOfResidence?: string;
  readonly kycInformation?: string;
  readonly postalAddress?: RestPostalAddress;
}

export interface RestReservationRequest {
  readonly reference: string;
  readonly payeeAccountId: string;
  readonly amount: string;
  readonly currency: string;
}

export interface RestCommitRequest {
  readonly payeeAccountId: string;
  readonly amount: string;
  readonly currency: string;
}

export interface RestReservation {
  readonly reference: string;
  readonly payeeAccountId: string;
  readonly amount: string;
  readonly currency: string;
  readonly state: RestReservationState;
}

export interface RestCollectionRequest {
  readonly reference: string;
  readonly payerId: string;
  readonly amount: string;
  readonly currency: string;
  readonly description?: string;
  readonly callbackUrl?: string;
}

export interface RestRefundRequest {
  readonly reference: string;
  readonly originalReference: string;
  readonly payerId: string;
  readonly amount: string;
  readonly currency: string;
}

export interface RestTransaction {
  readonly reference: string;
  readonly type: 'RESERVATION' | 'COLLECTION' | 'REFUND';
  readonly amount: string;
  readonly currency: string;
  /** Kept as the institution wrote it: a value outside RestTransactionStatus maps to unknown. */
  readonly status: string;
  /** Why it FAILED, when the institution says; kept as written, for support staff. */
  readonly reason?: string;
  readonly institutionReference?: string;
}

export interface RestError {
  readonly code: string;
  readonly message: string;
}
