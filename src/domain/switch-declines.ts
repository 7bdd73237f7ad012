import type { ErrorName } from './errors.js';

/**
 * The FSPIOP error codes the switch connector relays when the hub or the payee's FSP declines a
 * payment (it answers them as HTTP 500 with `{statusCode: "dddd"}`, see the switch-contract
 * notes), mapped to the catalogue entry the customer channel is answered with. A decline is a
 * business outcome with a 4xx: the channel tells its customer "no such customer" or "payee
 * blocked" instead of "try later". Every code not listed here (1xxx communication and 2xxx
 * server errors, the generic 5000, a missing or numeric statusCode) stays an outage (5xx), except
 * the switch connector's own refusal of a request as invalid (HTTP 400 with a numeric statusCode)
 * at initiation, which outgoing-payments.ts answers as SwitchRefusedRequest.
 */
const DECLINES: Readonly<Record<string, ErrorName>> = {
  // 3xxx: the request, the party or the id
  '3100': 'SwitchRefusedRequest',
  '3101': 'SwitchRefusedRequest',
  '3102': 'SwitchRefusedRequest',
  '3103': 'SwitchRefusedRequest',
  '3104': 'SwitchRefusedRequest',
  '3107': 'SwitchRefusedRequest',
  '3200': 'PartyNotFound',
  '3201': 'PayeeFspNotFound',
  '3203': 'PayeeFspNotFound',
  '3204': 'PartyNotFound',
  '3300': 'TransferExpired',
  '3302': 'QuoteExpired',
  '3303': 'TransferExpired',
  // 4xxx: the payer's side
  '4001': 'PayerFspInsufficientLiquidity',
  '4100': 'PayerRejected',
  '4101': 'PayerRejected',
  '4102': 'UnsupportedTransactionType',
  '4103': 'UnsupportedCurrency',
  '4200': 'PayerLimitExceeded',
  '4300': 'PayerPermissionDenied',
  '4400': 'PayerBlocked',
  // 5xxx: the payee's side
  '5001': 'PayeeInsufficientLiquidity',
  '5100': 'PayeeRejected',
  '5101': 'PayeeRejectedQuote',
  '5102': 'UnsupportedTransactionType',
  '5103': 'PayeeRejectedQuote',
  '5104': 'PayeeRejected',
  '5105': 'PayeeRejected',
  '5106': 'UnsupportedCurrency',
  '5200': 'PayeeLimitExceeded',
  '5300': 'PayeePermissionDenied',
  '5400': 'PayeeBlocked',
  '5401': 'PayeeBarred',
  '5402': 'PayeeClosed',
};

/** The catalogue entry for a decline the switch relayed, or undefined when the code is no decline. */
export function switchDeclineOf(statusCode: string): ErrorName | undefined {
  return Object.hasOwn(DECLINES, statusCode) ? DECLINES[statusCode] : undefined;
}
