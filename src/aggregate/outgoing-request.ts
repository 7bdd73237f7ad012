import { isCurrencyCode } from '../domain/currencies.js';
import { ConnectorError } from '../domain/errors.js';
import { checkIdentifier } from '../domain/identifier-rules.js';
import { isPartyIdType, type PartyIdType } from '../domain/identifiers.js';
import { PAYER_BIRTH_KEYS, PAYER_BIRTH_KEYS_ISO_EXACT, type ApiType, type ExtensionItem } from '../domain/iso20022.js';
import { canonicalAmount, fitsMinorUnits, isAmount, toMinorUnits } from '../domain/money.js';
import type { OutboundTransferRequest } from '../ports/outgoing-switch.js';
import type { BirthData, SendMoneyRequest } from './outgoing-types.js';

/** Which ISO 20022 birth keys go into from.extensionList in iso20022 mode. */
export type BirthKeySet = 'spec' | 'iso-exact' | 'both';

export interface RequestSettings {
  readonly supportedIdType: PartyIdType;
  /** The institution's currency: customers are debited in it. */
  readonly currency: string;
  readonly apiType: ApiType;
  readonly birthKeys: BirthKeySet;
}

export interface CheckedRequest {
  readonly payeeIdType: PartyIdType;
  /**
   * payeeId and payer.payerId in the normal form of their type (an IBAN without spaces, upper
   * case; an e-mail domain lower case), the form identifiers are registered and looked up in:
   * sent to the switch and stored.
   */
  readonly payeeId: string;
  readonly payerId: string;
  /**
   * sendAmount in canonical form. The schema's Amount pattern already refuses trailing zeros
   * ("10.50") and leading ones, so this is the text the channel sent; kept canonical here so
   * that what is stored and sent never depends on that pattern.
   */
  readonly sendAmount: string;
  /** YYYY-MM-DD, when birth data came. */
  readonly birthDate?: string;
}

/**
 * The checks a JSON schema cannot make: identifier formats, ISO 4217 codes, the amount's fit to
 * its currency, the calendar date of birth. Each rejection names the field.
 */
export function checkSendMoneyRequest(body: SendMoneyRequest, amountType: 'SEND' | 'RECEIVE', settings: RequestSettings): CheckedRequest {
  const payeeIdType = body.payeeIdType;
  if (!isPartyIdType(payeeIdType)) throw invalid('payeeIdType', 'is not an identifier type');
  // The channel's API carries no sub-identifier, so none is required (as for identifierFormatProblem).
  const payee = checkIdentifier(payeeIdType, body.payeeId, undefined, false);
  if (!payee.ok) throw invalid('payeeId', payee.problem);
  const payer = checkIdentifier(settings.supportedIdType, body.payer.payerId, undefined, false);
  if (!payer.ok) throw invalid('payer.payerId', `${payer.problem} (${settings.supportedIdType})`);
  for (const field of ['sendCurrency', 'receiveCurrency'] as const) {
    if (!isCurrencyCode(body[field])) throw invalid(field, 'is not an ISO 4217 currency code');
  }
  if (body.sendCurrency !== settings.currency) {
    throw new ConnectorError('UnsupportedCurrency', `sendCurrency ${body.sendCurrency} (customers are debited in ${settings.currency})`);
  }
  // A merchant payment (RECEIVE) asks for sendAmount in sendCurrency to arrive, so across
  // currencies no amount the terms could be checked against exists (the switch is sent
  // sendCurrency, the payee receives receiveCurrency): not offered.
  if (amountType === 'RECEIVE' && body.receiveCurrency !== body.sendCurrency) {
    throw new ConnectorError(
      'UnsupportedCurrency',
      `a cross-currency merchant payment is not offered (receiveCurrency ${body.receiveCurrency}, sendCurrency ${body.sendCurrency})`,
    );
  }
  if (!isAmount(body.sendAmount)) throw invalid('sendAmount', 'is not an Amount');
  if (!fitsMinorUnits(body.sendAmount, body.sendCurrency)) throw invalid('sendAmount', `has more decimals than ${body.sendCurrency} allows`);
  if (toMinorUnits(body.sendAmount, body.sendCurrency) === 0n) throw invalid('sendAmount', 'must be greater than zero');
  if (body.transactionType !== 'TRANSFER') throw invalid('transactionType', 'must be TRANSFER');
  const birth = body.payer.DateAndPlaceOfBirth;
  let birthDate: string | undefined;
  if (birth !== undefined) {
    const parsed = isoDateOfDayMonthYear(birth.BirthDt);
    if (parsed === undefined) throw invalid('payer.DateAndPlaceOfBirth.BirthDt', 'must be a calendar date written DD-MM-YYYY');
    birthDate = parsed;
  }
  return {
    payeeIdType,
    payeeId: payee.value,
    payerId: payer.value,
    sendAmount: canonicalAmount(body.sendAmount, body.sendCurrency),
    ...(birthDate === undefined ? {} : { birthDate }),
  };
}

/** DD-MM-YYYY to YYYY-MM-DD when it names a real calendar day (31-02-1990 does not); undefined otherwise. */
export function isoDateOfDayMonthYear(text: string): string | undefined {
  const match = /^([0-9]{2})-([0-9]{2})-([0-9]{4})$/.exec(text);
  if (match === null) return undefined;
  const [, dd = '', mm = '', yyyy = ''] = match;
  const day = Number(dd);
  const month = Number(mm);
  const year = Number(yyyy);
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  if (day > daysInMonth) return undefined;
  return `${yyyy}-${mm}-${dd}`;
}

/** The body of the switch connector's POST /transfers for a checked request. */
export function outboundTransferRequest(
  body: SendMoneyRequest,
  checked: CheckedRequest,
  amountType: 'SEND' | 'RECEIVE',
  settings: RequestSettings,
): OutboundTransferRequest {
  const birth = body.payer.DateAndPlaceOfBirth;
  const fspiopBirth = settings.apiType === 'fspiop' && checked.birthDate !== undefined ? { dateOfBirth: checked.birthDate } : {};
  const isoBirth =
    settings.apiType === 'iso20022' && birth !== undefined && checked.birthDate !== undefined
      ? { extensionList: birthExtensions(birth, checked.birthDate, settings.birthKeys) }
      : {};
  return {
    homeTransactionId: body.homeTransactionId,
    from: { idType: settings.supportedIdType, idValue: checked.payerId, displayName: body.payer.name, ...fspiopBirth, ...isoBirth },
    to: { idType: checked.payeeIdType, idValue: checked.payeeId },
    amountType,
    currency: body.sendCurrency,
    amount: checked.sendAmount,
    transactionType: 'TRANSFER',
    ...(body.transactionDescription === undefined ? {} : { note: body.transactionDescription }),
  };
}

/**
 * Birth data as from.extensionList entries (spec: mapping of payer birth data), with the date
 * as YYYY-MM-DD (the ISO 20022 ISODate). At most 8 entries, within the 16-item limit.
 */
export function birthExtensions(birth: BirthData, isoDate: string, keySet: BirthKeySet): ExtensionItem[] {
  const keyMaps = keySet === 'spec' ? [PAYER_BIRTH_KEYS] : keySet === 'iso-exact' ? [PAYER_BIRTH_KEYS_ISO_EXACT] : [PAYER_BIRTH_KEYS, PAYER_BIRTH_KEYS_ISO_EXACT];
  const items: ExtensionItem[] = [];
  for (const keys of keyMaps) {
    items.push({ key: keys.BirthDt, value: isoDate });
    if (birth.PrvcOfBirth !== undefined) items.push({ key: keys.PrvcOfBirth, value: birth.PrvcOfBirth });
    items.push({ key: keys.CityOfBirth, value: birth.CityOfBirth });
    items.push({ key: keys.CtryOfBirth, value: birth.CtryOfBirth });
  }
  return items;
}

function invalid(field: string, problem: string): ConnectorError {
  return new ConnectorError('ValidationFailed', `${field} ${problem}`);
}
