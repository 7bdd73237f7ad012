import type { ConversionCharge, ConversionTerms, OutboundTransfer, ReturnedQuote, WireMoney } from '../../ports/outgoing-switch.js';
import { isObject, pick } from './sdk-client.js';

/**
 * Reads the switch connector's outbound transfer body (transferResponse of the outbound API
 * v2.1) into the aggregate's shape. Nothing is judged here: a field of the wrong type is noted
 * in `malformed` and left out, and the aggregate's rules decide what that means.
 */
export function readOutboundTransfer(body: unknown): OutboundTransfer {
  const malformed: string[] = [];
  if (!isObject(body)) return { malformed: ['body'] };
  const reader = new FieldReader(malformed);
  const transferId = reader.string(body, 'transferId');
  const currentState = reader.string(body, 'currentState');
  const fulfil = reader.object(body, 'fulfil.body');
  const hubState = fulfil === undefined ? undefined : reader.string(fulfil, 'transferState');
  const hubErrorCode = hubErrorCodeOf(body);
  const payeeName = payeeNameOf(body, reader);
  const quoteBody = reader.object(body, 'quoteResponse.body');
  const termsBody = reader.object(body, 'fxQuotesResponse.body.conversionTerms');
  return {
    ...(transferId === undefined ? {} : { transferId }),
    ...(currentState === undefined ? {} : { currentState }),
    ...(hubState === undefined ? {} : { hubState }),
    ...(hubErrorCode === undefined ? {} : { hubErrorCode }),
    ...(payeeName === undefined ? {} : { payeeName }),
    ...(quoteBody === undefined ? {} : { quote: readQuote(quoteBody, reader) }),
    ...(termsBody === undefined ? {} : { conversion: readConversion(termsBody, reader) }),
    malformed,
  };
}

/**
 * The code of the hub's error callback the switch connector's transfer ended on
 * (`lastError.mojaloopError.errorInformation.errorCode`). The switch connector sets a
 * `mojaloopError` on a transfer's error only when a PUT /transfers/{id}/error reached it
 * (sdk-scheme-adapter, OutboundTransfersModel `_executeTransfer`, the `transferError` message);
 * its own failures (a reset on its POST to the hub, a cache error, an invalid fulfilment) carry
 * none. Read without judging: a `lastError` of another shape (some errors serialise to a string)
 * is simply no hub error.
 */
function hubErrorCodeOf(body: Record<string, unknown>): string | undefined {
  const code = pick(body, ['lastError', 'mojaloopError', 'errorInformation', 'errorCode']);
  return typeof code === 'string' && code !== '' ? code : undefined;
}

/** The transfer state carried in a switch error body ({statusCode, message, transferState}). */
export function readErrorTransferState(body: unknown): OutboundTransfer | undefined {
  if (!isObject(body) || !isObject(body['transferState'])) return undefined;
  return readOutboundTransfer(body['transferState']);
}

function payeeNameOf(body: Record<string, unknown>, reader: FieldReader): string | undefined {
  const party = reader.object(body, 'getPartiesResponse.body.party');
  if (party === undefined) return undefined;
  const name = reader.string(party, 'name');
  if (name !== undefined && name.trim() !== '') return name.trim();
  const complex = reader.object(party, 'personalInfo.complexName');
  if (complex === undefined) return undefined;
  const parts = ['firstName', 'middleName', 'lastName']
    .map((field) => reader.string(complex, field))
    .filter((part): part is string => part !== undefined && part.trim() !== '');
  return parts.length === 0 ? undefined : parts.map((part) => part.trim()).join(' ');
}

function readQuote(body: Record<string, unknown>, reader: FieldReader): ReturnedQuote {
  const transferAmount = reader.money(body, 'transferAmount', 'quoteResponse.body');
  const payeeReceiveAmount = reader.money(body, 'payeeReceiveAmount', 'quoteResponse.body');
  const payeeFspFee = reader.money(body, 'payeeFspFee', 'quoteResponse.body');
  const payeeFspCommission = reader.money(body, 'payeeFspCommission', 'quoteResponse.body');
  const expiration = reader.string(body, 'expiration', 'quoteResponse.body');
  return {
    ...(transferAmount === undefined ? {} : { transferAmount }),
    ...(payeeReceiveAmount === undefined ? {} : { payeeReceiveAmount }),
    ...(payeeFspFee === undefined ? {} : { payeeFspFee }),
    ...(payeeFspCommission === undefined ? {} : { payeeFspCommission }),
    ...(expiration === undefined ? {} : { expiration }),
  };
}

function readConversion(body: Record<string, unknown>, reader: FieldReader): ConversionTerms {
  const where = 'fxQuotesResponse.body.conversionTerms';
  const conversionId = reader.string(body, 'conversionId', where);
  const sourceAmount = reader.partialMoney(body, 'sourceAmount', where);
  const targetAmount = reader.partialMoney(body, 'targetAmount', where);
  const expiration = reader.string(body, 'expiration', where);
  const charges: ConversionCharge[] = [];
  const rawCharges = body['charges'];
  if (Array.isArray(rawCharges)) {
    rawCharges.forEach((charge: unknown, index) => {
      const at = `${where}.charges[${index}]`;
      if (!isObject(charge)) {
        reader.note(at);
        return;
      }
      const chargeType = reader.string(charge, 'chargeType', at) ?? '';
      const chargeSource = reader.money(charge, 'sourceAmount', at);
      const chargeTarget = reader.money(charge, 'targetAmount', at);
      charges.push({
        chargeType,
        ...(chargeSource === undefined ? {} : { sourceAmount: chargeSource }),
        ...(chargeTarget === undefined ? {} : { targetAmount: chargeTarget }),
      });
    });
  } else if (rawCharges !== undefined) {
    reader.note(`${where}.charges`);
  }
  return {
    ...(conversionId === undefined ? {} : { conversionId }),
    ...(sourceAmount === undefined ? {} : { sourceAmount }),
    ...(targetAmount === undefined ? {} : { targetAmount }),
    charges,
    ...(expiration === undefined ? {} : { expiration }),
  };
}

/** Reads typed fields at dotted paths, noting each one present with the wrong type. */
class FieldReader {
  constructor(private readonly malformed: string[]) {}

  note(path: string): void {
    this.malformed.push(path);
  }

  string(from: Record<string, unknown>, path: string, prefix?: string): string | undefined {
    const value = at(from, path);
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    this.note(prefix === undefined ? path : `${prefix}.${path}`);
    return undefined;
  }

  object(from: Record<string, unknown>, path: string): Record<string, unknown> | undefined {
    const value = at(from, path);
    if (value === undefined) return undefined;
    if (isObject(value)) return value;
    this.note(path);
    return undefined;
  }

  money(from: Record<string, unknown>, field: string, prefix: string): WireMoney | undefined {
    const value = from[field];
    if (value === undefined) return undefined;
    if (isObject(value) && typeof value['amount'] === 'string' && typeof value['currency'] === 'string') {
      return { amount: value['amount'], currency: value['currency'] };
    }
    this.note(`${prefix}.${field}`);
    return undefined;
  }

  /** Conversion amounts: the currency always, the amount once the provider has filled it. */
  partialMoney(from: Record<string, unknown>, field: string, prefix: string): { currency: string; amount?: string } | undefined {
    const value = from[field];
    if (value === undefined) return undefined;
    if (isObject(value) && typeof value['currency'] === 'string' && (value['amount'] === undefined || typeof value['amount'] === 'string')) {
      const amount = value['amount'];
      return { currency: value['currency'], ...(typeof amount === 'string' ? { amount } : {}) };
    }
    this.note(`${prefix}.${field}`);
    return undefined;
  }
}

function at(from: Record<string, unknown>, path: string): unknown {
  let current: unknown = from;
  for (const key of path.split('.')) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}
