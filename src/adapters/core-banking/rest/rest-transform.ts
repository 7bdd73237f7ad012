import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import { PARTY_ID_TYPES, type PartyId } from '../../../domain/identifiers.js';
import type { PostalAddress } from '../../../domain/iso20022.js';
import type { AccountStatus, InstitutionTransactionStatus, PartyDetails } from '../../../ports/core-banking.js';
import { MalformedResponse, WireRecord, optionalField as optional } from '../shared/wire-reader.js';
import {
  REST_ACCOUNT_STATUSES,
  REST_ERROR_CODES,
  REST_RESERVATION_STATES,
  type RestError,
  type RestErrorCode,
  type RestParty,
  type RestPostalAddress,
  type RestReservation,
  type RestTransaction,
} from './rest-wire.js';

/** Pure conversions between the reference API's wire types and the port's types. */

export function readParty(body: unknown): RestParty {
  const party = WireRecord.of(body);
  const name = party.record('name');
  const address = party.optionalRecord('postalAddress');
  return {
    accountId: party.string('accountId'),
    idType: party.oneOf('idType', PARTY_ID_TYPES),
    idValue: party.string('idValue'),
    ...optional('idSubValue', party.optionalString('idSubValue')),
    currency: party.string('currency'),
    status: party.oneOf('status', REST_ACCOUNT_STATUSES),
    name: {
      displayName: name.string('displayName'),
      ...optional('firstName', name.optionalString('firstName')),
      ...optional('middleName', name.optionalString('middleName')),
      ...optional('lastName', name.optionalString('lastName')),
    },
    ...optional('dateOfBirth', party.optionalString('dateOfBirth')),
    ...optional('countryOfResidence', party.optionalString('countryOfResidence')),
    ...optional('kycInformation', party.optionalString('kycInformation')),
    ...(address === undefined ? {} : { postalAddress: readPostalAddress(address) }),
  };
}

const ADDRESS_FIELDS: ReadonlyArray<readonly [keyof RestPostalAddress, keyof PostalAddress]> = [
  ['addressType', 'AdrTpCd'],
  ['department', 'Dept'],
  ['subDepartment', 'SubDept'],
  ['streetName', 'StrtNm'],
  ['buildingNumber', 'BldgNb'],
  ['buildingName', 'BldgNm'],
  ['floor', 'Flr'],
  ['postBox', 'PstBx'],
  ['room', 'Room'],
  ['postCode', 'PstCd'],
  ['townName', 'TwnNm'],
  ['townLocationName', 'TwnLctnNm'],
  ['districtName', 'DstrctNm'],
  ['countrySubDivision', 'CtrySubDvsn'],
  ['country', 'Ctry'],
  ['addressLine', 'AdrLine'],
];

function readPostalAddress(address: WireRecord): RestPostalAddress {
  const result: Record<string, string> = {};
  for (const [wire] of ADDRESS_FIELDS) {
    const value = address.optionalString(wire);
    if (value !== undefined) result[wire] = value;
  }
  return result;
}

/**
 * The party as the port describes it; the institution must answer for the identifier we asked
 * about, sub-identifier included (both absent, or equal): a party without the idSubValue asked
 * for is another account of the number, never the one the payer named.
 */
export function toPartyDetails(party: RestParty, asked: PartyId): PartyDetails {
  if (party.idType !== asked.idType || party.idValue !== asked.idValue) {
    throw new MalformedResponse('body.idType/idValue differ from the identifier asked for');
  }
  if (party.idSubValue !== asked.idSubValue) throw new MalformedResponse('body.idSubValue differs from the one asked for');
  const address = toPostalAddress(party.postalAddress);
  return {
    idType: asked.idType,
    idValue: asked.idValue,
    ...optional('idSubValue', asked.idSubValue),
    accountId: party.accountId,
    currency: party.currency,
    status: toAccountStatus(party.status),
    displayName: party.name.displayName,
    ...optional('firstName', party.name.firstName),
    ...optional('middleName', party.name.middleName),
    ...optional('lastName', party.name.lastName),
    ...optional('dateOfBirth', party.dateOfBirth),
    ...optional('countryOfResidence', party.countryOfResidence),
    ...optional('kycInformation', party.kycInformation),
    ...(address === undefined ? {} : { postalAddress: address }),
  };
}

function toPostalAddress(address: RestPostalAddress | undefined): PostalAddress | undefined {
  if (address === undefined) return undefined;
  const result: Record<string, string> = {};
  for (const [wire, iso] of ADDRESS_FIELDS) {
    const value = address[wire];
    if (value !== undefined) result[iso] = value;
  }
  return Object.keys(result).length === 0 ? undefined : result;
}

export function toAccountStatus(status: RestAccountStatus): AccountStatus {
  switch (status) {
    case 'ACTIVE':
      return 'active';
    case 'BARRED':
      return 'barred';
    case 'BLOCKED':
      return 'blocked';
    case 'CLOSED':
      return 'closed';
  }
}

type RestAccountStatus = RestParty['status'];

export function readReservation(body: unknown, currency: string): RestReservation {
  const reservation = WireRecord.of(body);
  return {
    reference: reservation.string('reference'),
    payeeAccountId: reservation.string('payeeAccountId'),
    currency: reservation.string('currency'),
    amount: reservation.amountString('amount', currency),
    state: reservation.oneOf('state', REST_RESERVATION_STATES),
  };
}

/** A transaction; its amount is read in its own currency unless the caller knows which to expect. */
export function readTransaction(body: unknown, expectedCurrency?: string): RestTransaction {
  const transaction = WireRecord.of(body);
  const currency = transaction.string('currency');
  return {
    reference: transaction.string('reference'),
    type: transaction.oneOf('type', ['RESERVATION', 'COLLECTION', 'REFUND'] as const),
    currency,
    amount: transaction.amountString('amount', expectedCurrency ?? currency),
    status: transaction.string('status'),
    ...optional('reason', transaction.optionalString('reason')),
    ...optional('institutionReference', transaction.optionalString('institutionReference')),
  };
}

/** Reads a status to the port's words. A status the API did not document is unknown, never guessed. */
export function toTransactionStatus(status: string): InstitutionTransactionStatus {
  switch (status) {
    case 'PENDING':
      return 'pending';
    case 'SUCCEEDED':
      return 'succeeded';
    case 'FAILED':
      return 'failed';
    default:
      return 'unknown';
  }
}

/** The error body of a 4xx, or undefined when the institution sent something else. */
export function readError(body: unknown): RestError | undefined {
  try {
    const error = WireRecord.of(body);
    return { code: error.string('code'), message: error.string('message') };
  } catch {
    return undefined;
  }
}

function isRestErrorCode(code: string | undefined): code is RestErrorCode {
  return REST_ERROR_CODES.some((known) => known === code);
}

/** Whose account a declined call was about, since the catalogue names payee and payer declines apart. */
export type DeclineRole = 'party' | 'payee' | 'payer';

/**
 * A 4xx answer as a catalogue error. The institution's message is left out: it may quote a name
 * or a balance. Its code is kept, so that support staff can find the case.
 */
export function declineFor(operation: string, status: number, body: unknown, role: DeclineRole): ConnectorError {
  const code = readError(body)?.code;
  const detail = `rest ${operation}: HTTP ${status}${code === undefined ? '' : ` ${code}`}`;
  if (status === 401 || status === 403 || code === 'UNAUTHORIZED') {
    // Our credentials were refused: nothing was decided about the payment, and an operator must act.
    return new ConnectorError('InstitutionUnavailable', `${detail}: credentials refused`);
  }
  if (status === 404 && !isRestErrorCode(code)) {
    // The API answers every 404 with one of its codes; without one, the request reached something
    // else (a gateway, a wrong base path): nothing was decided about the payment.
    return new ConnectorError('InstitutionUnavailable', `${detail}: not an answer of the API`);
  }
  return new ConnectorError(declineName(code, role), detail);
}

function declineName(code: string | undefined, role: DeclineRole): ErrorName {
  // Every code of REST_ERROR_CODES has its case; a code outside the list falls to the default.
  switch (code) {
    case 'PARTY_NOT_FOUND':
    case 'ACCOUNT_NOT_FOUND':
    case 'PAYER_NOT_FOUND':
      return 'PartyNotFound';
    case 'RESERVATION_NOT_FOUND':
    case 'TRANSACTION_NOT_FOUND':
    case 'ORIGINAL_NOT_FOUND':
      return 'TransferNotFound';
    case 'RESERVATION_RELEASED':
    case 'RESERVATION_COMMITTED':
    case 'ORIGINAL_NOT_DEBITED':
      return 'TransferStateConflict';
    case 'REFERENCE_CONFLICT':
    case 'PAYER_MISMATCH':
    case 'CURRENCY_MISMATCH':
    case 'REFUND_EXCEEDS_ORIGINAL':
      // The refund does not match the debit it returns: a different request, never money owed.
      return 'ModifiedRequest';
    case 'INSUFFICIENT_FLOAT':
      return 'PayeeInsufficientLiquidity';
    case 'INSUFFICIENT_FUNDS':
      return 'PayerInsufficientFunds';
    case 'ACCOUNT_BLOCKED':
      return role === 'payer' ? 'PayerRejected' : 'PayeeBlocked';
    case 'ACCOUNT_BARRED':
      return role === 'payer' ? 'PayerRejected' : 'PayeeBarred';
    case 'ACCOUNT_CLOSED':
      return role === 'payer' ? 'PayerRejected' : 'PayeeClosed';
    case 'CURRENCY_NOT_SUPPORTED':
      return 'UnsupportedCurrency';
    case 'INVALID_REQUEST':
      return 'ValidationFailed';
    default:
      // A 4xx is a decision about this payment even when its code is new to us.
      return role === 'payer' ? 'PayerRejected' : 'PayeeRejected';
  }
}

/** The institution must answer for exactly what we sent. */
export function checkReservationEcho(reservation: RestReservation, sent: { reference: string; payeeAccountId: string; amount: string; currency: string }): void {
  if (reservation.reference !== sent.reference) throw new MalformedResponse('body.reference differs from the request');
  if (reservation.payeeAccountId !== sent.payeeAccountId) throw new MalformedResponse('body.payeeAccountId differs from the request');
  if (reservation.currency !== sent.currency) throw new MalformedResponse('body.currency differs from the request');
  if (reservation.amount !== sent.amount) throw new MalformedResponse('body.amount differs from the request');
}

export function checkTransactionEcho(transaction: RestTransaction, sent: { reference: string; amount: string; currency: string }, type: RestTransaction['type']): void {
  if (transaction.reference !== sent.reference) throw new MalformedResponse('body.reference differs from the request');
  if (transaction.type !== type) throw new MalformedResponse(`body.type is not ${type}`);
  if (transaction.currency !== sent.currency) throw new MalformedResponse('body.currency differs from the request');
  if (transaction.amount !== sent.amount) throw new MalformedResponse('body.amount differs from the request');
}
