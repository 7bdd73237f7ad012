import { ConnectorError } from '../../../domain/errors.js';
import { nameBasedUuid } from '../../../domain/outgoing-references.js';
import type { PartyId } from '../../../domain/identifiers.js';
import type { InstitutionTransactionStatus, PartyDetails } from '../../../ports/core-banking.js';
import { JsonNumber } from '../shared/decimal-json.js';
import { MalformedResponse, WireRecord, amountFromText, isRecord, optionalField } from '../shared/wire-reader.js';
import {
  COLLECTION_CODES,
  DISBURSEMENT_CODES,
  type AirtelBalance,
  type AirtelEnvelopeStatus,
  type AirtelSubscriber,
  type AirtelToken,
  type AirtelTransaction,
} from './airtel-wire.js';
import { TRANSACTION_NOT_FOUND_CODES } from './airtel-wire.js';

/** Pure conversions between Airtel's wire and the port. */

export function readToken(body: unknown): AirtelToken {
  const token = WireRecord.of(body);
  const accessToken = token.string('access_token');
  if (accessToken === '') throw new MalformedResponse('body.access_token is empty');
  // Airtel has written expires_in both as a number and as a string of digits.
  const raw = token.values['expires_in'];
  const text = raw instanceof JsonNumber ? raw.text : typeof raw === 'string' ? raw : undefined;
  if (text === undefined || !/^[1-9][0-9]{0,6}$/.test(text)) throw new MalformedResponse('body.expires_in is not a positive number of seconds');
  return { accessToken, expiresInSeconds: Number(text) };
}

export interface AirtelEnvelope {
  readonly status: AirtelEnvelopeStatus;
  readonly data: WireRecord | undefined;
}

export function readEnvelope(body: unknown): AirtelEnvelope {
  const envelope = WireRecord.of(body);
  const status = envelope.record('status');
  return {
    status: {
      success: status.boolean('success'),
      code: status.string('code'),
      ...optionalField('resultCode', status.optionalString('result_code')),
      ...optionalField('responseCode', status.optionalString('response_code')),
    },
    data: envelope.optionalRecord('data'),
  };
}

export function readSubscriber(data: WireRecord | undefined): AirtelSubscriber {
  if (data === undefined) throw new MalformedResponse('body.data is missing');
  // msisdn has been written as a number too; only its digits matter.
  const msisdn = data.values['msisdn'] instanceof JsonNumber ? data.integerText('msisdn') : data.string('msisdn');
  return { msisdn, firstName: data.string('first_name'), lastName: data.string('last_name'), barred: data.boolean('is_barred') };
}

/** Airtel writes the balance as text, sometimes with thousands separators ("1,234.50"). */
export function readBalance(data: WireRecord | undefined): AirtelBalance {
  if (data === undefined) throw new MalformedResponse('body.data is missing');
  const currency = data.string('currency');
  const text = data.string('balance');
  const ungrouped = /^[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?$/.test(text) ? text.replaceAll(',', '') : text;
  return { currency, balance: amountFromText(ungrouped, data.at('balance'), currency) };
}

export function readTransaction(data: WireRecord | undefined): AirtelTransaction {
  if (data === undefined) throw new MalformedResponse('body.data is missing');
  const transaction = data.record('transaction');
  return {
    id: transaction.string('id'),
    ...optionalField('status', transaction.optionalString('status')),
    ...optionalField('airtelMoneyId', transaction.optionalString('airtel_money_id')),
  };
}

/**
 * Enquiry and callback status codes: TS succeeded; TF failed and TE (transaction expired: a
 * prompt nobody answered in time) failed, final, nobody debited; TA (ambiguous) and TIP (in
 * progress) not final; anything else unknown.
 */
export function toTransactionStatus(status: string | undefined): InstitutionTransactionStatus {
  switch (status) {
    case 'TS':
      return 'succeeded';
    case 'TF':
    case 'TE':
      return 'failed';
    case 'TA':
    case 'TIP':
      return 'pending';
    default:
      return 'unknown';
  }
}

/**
 * Reads the body Airtel posts to the callback URL after a collection (spec: PUT /callback):
 * the reference we gave as transaction id, and where it ended. For the outgoing-payments server.
 */
export function readCallback(body: unknown): { reference: string; status: InstitutionTransactionStatus } | undefined {
  if (!isRecord(body) || !isRecord(body['transaction'])) return undefined;
  const { id, status_code: statusCode } = body['transaction'];
  if (typeof id !== 'string' || typeof statusCode !== 'string') return undefined;
  return { reference: id, status: toTransactionStatus(statusCode) };
}

/**
 * Airtel wants MSISDNs without the country code. Identifiers arrive in E.164 with an optional
 * plus; the configured dialing code is taken off. A value that is not a phone number cannot be
 * an Airtel subscriber.
 */
export function toAirtelMsisdn(idValue: string, dialingCode: string): string | undefined {
  const digits = idValue.startsWith('+') ? idValue.slice(1) : idValue;
  if (!/^[0-9]{6,15}$/.test(digits)) return undefined;
  return digits.startsWith(dialingCode) && digits.length - dialingCode.length >= 6 ? digits.slice(dialingCode.length) : digits;
}

/**
 * The Airtel transaction id of a disbursement's attempt `generation` under our reference. Airtel
 * refuses a transaction id it has seen (DP00900001017), failed ones included, so a disbursement
 * that failed (TF) cannot be sent again under its id: the next attempt goes under the next
 * generation's id. Generation 0 is the reference itself; later ones are name-based UUIDs (RFC
 * 9562 version 5 layout) of the reference and the generation, so every replica, retry and
 * restart derives the same ids and Airtel still refuses to pay any one of them twice.
 */
export function disbursementId(reference: string, generation: number): string {
  return generation === 0 ? reference : nameBasedUuid(`core-connector:airtel-disbursement:${reference}:${generation}`);
}

/** Airtel's `reference` field takes 4-64 letters and digits; our references are ULIDs or UUIDs. */
export function airtelReference(reference: string): string {
  return reference.replace(/[^0-9A-Za-z]/g, '').slice(0, 64).padEnd(4, '0');
}

export function toPartyDetails(id: PartyId, subscriber: AirtelSubscriber, currency: string): PartyDetails {
  return {
    idType: id.idType,
    idValue: id.idValue,
    ...optionalField('idSubValue', id.idSubValue),
    accountId: subscriber.msisdn,
    currency,
    status: subscriber.barred ? 'barred' : 'active',
    displayName: `${subscriber.firstName} ${subscriber.lastName}`.trim(),
    firstName: subscriber.firstName,
    lastName: subscriber.lastName,
  };
}

/** What a disbursement answer means: done, not final, or a decline from the catalogue. */
export type Outcome = { readonly kind: 'done' } | { readonly kind: 'not-final'; readonly code: string } | { readonly kind: 'declined'; readonly error: ConnectorError };

/**
 * A disbursement answer. `purpose` says whose money it is: a commit pays a payee from our float,
 * a refund pays a payer back; a short float is a liquidity decline for the first and an outage to
 * retry for the second (the refund has to happen).
 */
export function disbursementOutcome(status: AirtelEnvelopeStatus, purpose: 'commit' | 'refund'): Outcome {
  const code = status.responseCode ?? 'none';
  const declined = (name: ConnectorError['errorName'], what: string): Outcome => ({
    kind: 'declined',
    error: new ConnectorError(name, `airtel disbursement: ${code} ${what}`),
  });
  switch (code) {
    case DISBURSEMENT_CODES.success:
      return status.success ? { kind: 'done' } : { kind: 'not-final', code };
    case DISBURSEMENT_CODES.ambiguous:
    case DISBURSEMENT_CODES.inProgress:
      return { kind: 'not-final', code };
    // Sent to the enquiry (see DISBURSEMENT_CODES.askEnquiry): not final, asked on the next attempt.
    case DISBURSEMENT_CODES.askEnquiry[0]:
    case DISBURSEMENT_CODES.askEnquiry[1]:
    case DISBURSEMENT_CODES.askEnquiry[2]:
      return { kind: 'not-final', code };
    case DISBURSEMENT_CODES.insufficientFunds:
      return purpose === 'commit' ? declined('PayeeInsufficientLiquidity', 'wallet balance too low') : declined('InstitutionUnavailable', 'wallet cannot fund the refund now');
    case DISBURSEMENT_CODES.payeeNotAllowed:
      return purpose === 'commit' ? declined('PayeeBarred', 'payee may not receive') : declined('PayerRejected', 'payer may not receive');
    case DISBURSEMENT_CODES.invalidMsisdn:
      return declined('PartyNotFound', 'no such subscriber');
    default:
      if ((DISBURSEMENT_CODES.failed as readonly string[]).includes(code)) {
        return purpose === 'commit' ? declined('PayeeRejected', 'failed') : declined('PayerRejected', 'failed');
      }
      return { kind: 'not-final', code };
  }
}

/** A collection answer: the prompt is out (pending), it already ended, or it was refused at once. */
export function collectionOutcome(status: AirtelEnvelopeStatus): { readonly status: InstitutionTransactionStatus } | { readonly error: ConnectorError } {
  const code = status.responseCode ?? 'none';
  const declined = (name: ConnectorError['errorName'], what: string) => ({ error: new ConnectorError(name, `airtel collection: ${code} ${what}`) });
  switch (code) {
    case COLLECTION_CODES.inProgress:
      return { status: status.success ? 'pending' : 'unknown' };
    case COLLECTION_CODES.success:
      return { status: status.success ? 'succeeded' : 'unknown' };
    case COLLECTION_CODES.ambiguous:
    case COLLECTION_CODES.timedOut:
      return { status: 'unknown' };
    case COLLECTION_CODES.insufficientFunds:
      return declined('PayerInsufficientFunds', 'payer balance too low');
    case COLLECTION_CODES.refused:
    case COLLECTION_CODES.payerNotAllowed:
      return declined('PayerRejected', 'payer may not pay');
    case COLLECTION_CODES.invalidMsisdn:
      return declined('PartyNotFound', 'no such subscriber');
    default:
      if ((COLLECTION_CODES.failed as readonly string[]).includes(code)) return declined('PayerRejected', 'failed');
      return { status: 'unknown' };
  }
}

/**
 * An enquiry answer: where our transaction stands, or not-found when Airtel never saw the id.
 * The transaction's own status decides whenever Airtel names it (TF ends the payment even when
 * the envelope's success flag is false); otherwise a "transaction not found" code, in either
 * code field; anything else says nothing final.
 */
export function enquiryStatus(envelope: AirtelEnvelope, reference: string): InstitutionTransactionStatus {
  const named = envelope.data?.optionalRecord('transaction');
  if (named !== undefined && named.has('status')) {
    const transaction = readTransaction(envelope.data);
    if (transaction.id !== reference) throw new MalformedResponse('body.data.transaction.id differs from the reference asked about');
    return toTransactionStatus(transaction.status);
  }
  if (!envelope.status.success && isTransactionNotFound(envelope.status)) return 'not-found';
  return 'unknown';
}

export function isTransactionNotFound(status: AirtelEnvelopeStatus): boolean {
  return [status.responseCode, status.resultCode].some((code) => code !== undefined && TRANSACTION_NOT_FOUND_CODES.includes(code));
}

/**
 * Airtel's envelope from an answer whatever its HTTP status: the public documents do not settle
 * the status of a business rejection (their one error sample is a 400), so the body decides.
 * Undefined when the body is not Airtel's envelope (a gateway's error page, say).
 */
export function envelopeOf(body: unknown): AirtelEnvelope | undefined {
  if (!isRecord(body) || !isRecord(body['status'])) return undefined;
  const status = body['status'];
  if (typeof status['success'] !== 'boolean' || typeof status['code'] !== 'string') return undefined;
  try {
    return readEnvelope(body);
  } catch {
    return undefined;
  }
}
