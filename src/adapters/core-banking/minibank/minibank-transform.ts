import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { formatMinorUnits, toMinorUnits, type Money } from '../../../domain/money.js';
import type { AccountStatus, InstitutionTransactionStatus, PartyDetails } from '../../../ports/core-banking.js';
import { MalformedResponse, WireRecord, isRecord, optionalField } from '../shared/wire-reader.js';
import type { MiniBankCustomer, MiniBankPayment } from './minibank-wire.js';

/** Pure conversions between MiniBank's wire and the port. Minor units go through money.ts. */

/**
 * The one customer with this MSISDN, or undefined when MiniBank has none. MiniBank gives each
 * number to one customer, so a list of several is not an answer we can credit (taking the first
 * would pay whoever MiniBank happened to list first), and a customer with another number is not
 * the one asked about.
 */
export function readCustomer(body: unknown, msisdn: string): MiniBankCustomer | undefined {
  const customers = readCustomers(body);
  if (customers.length > 1) throw new MalformedResponse(`body.customers names ${customers.length} customers for one number`);
  const customer = customers[0];
  if (customer !== undefined && customer.msisdn !== msisdn) throw new MalformedResponse('body.customers[0].msisdn is not the number asked for');
  return customer;
}

function readCustomers(body: unknown): MiniBankCustomer[] {
  return WireRecord.of(body).array('customers').map((customer) => ({
    msisdn: customer.string('msisdn'),
    ref: customer.string('ref'),
    given: customer.string('given'),
    family: customer.string('family'),
    state: customer.oneOf('state', ['OPEN', 'FROZEN', 'SHUT'] as const),
    wallet: customer.string('wallet'),
    ccy: customer.string('ccy'),
  }));
}

export function toPartyDetails(id: PartyId, customer: MiniBankCustomer): PartyDetails {
  return {
    idType: id.idType,
    idValue: id.idValue,
    ...optionalField('idSubValue', id.idSubValue),
    accountId: customer.wallet,
    currency: customer.ccy,
    status: toAccountStatus(customer.state),
    displayName: `${customer.given} ${customer.family}`,
    firstName: customer.given,
    lastName: customer.family,
  };
}

function toAccountStatus(state: MiniBankCustomer['state']): AccountStatus {
  switch (state) {
    case 'OPEN':
      return 'active';
    case 'FROZEN':
      return 'blocked';
    case 'SHUT':
      return 'closed';
  }
}

/** "1234" minor units of ZMW as "12.34". */
export function fromMinor(text: string, currency: string, path: string): string {
  if (!/^(0|[1-9][0-9]{0,30})$/.test(text)) throw new MalformedResponse(`${path} is not a whole number of minor units`);
  return formatMinorUnits(BigInt(text), currency);
}

/** 12.34 ZMW as "1234"; an amount finer than the minor unit cannot be paid. */
export function toMinor(money: Money): string {
  try {
    return toMinorUnits(money.amount, money.currency).toString();
  } catch (error) {
    throw new ConnectorError('ValidationFailed', `amount is not payable in ${money.currency}`, { cause: error });
  }
}

export function readFloatBalance(body: unknown, currency: string): string {
  const float = WireRecord.of(body);
  if (float.string('ccy') !== currency) throw new MalformedResponse('body.ccy is not the currency asked about');
  return fromMinor(float.string('balance_minor'), currency, float.at('balance_minor'));
}

export function readPayment(body: unknown): MiniBankPayment {
  const payment = WireRecord.of(body);
  return {
    key: payment.string('key'),
    to: payment.string('to'),
    amountMinor: payment.string('amount_minor'),
    ccy: payment.string('ccy'),
    state: payment.string('state'),
  };
}

export function toTransactionStatus(state: string): InstitutionTransactionStatus {
  switch (state) {
    case 'BOOKED':
      return 'succeeded';
    case 'REJECTED':
      return 'failed';
    default:
      return 'unknown';
  }
}

/** A 422's reason as a catalogue error; whose account it was decides between payee and payer names. */
export function refusal(body: unknown, role: 'payee' | 'payer'): ConnectorError {
  const reason = isRecord(body) && typeof body['reason'] === 'string' ? body['reason'] : 'none';
  const detail = `minibank payment refused: ${reason}`;
  switch (reason) {
    case 'NSF':
      return new ConnectorError(role === 'payee' ? 'PayeeInsufficientLiquidity' : 'InstitutionUnavailable', detail);
    case 'FROZEN':
      return new ConnectorError(role === 'payee' ? 'PayeeBlocked' : 'PayerRejected', detail);
    case 'SHUT':
      return new ConnectorError(role === 'payee' ? 'PayeeClosed' : 'PayerRejected', detail);
    case 'NO_WALLET':
      return new ConnectorError('PartyNotFound', detail);
    default:
      return new ConnectorError(role === 'payee' ? 'PayeeRejected' : 'PayerRejected', detail);
  }
}
