import { ConnectorError } from '../domain/errors.js';
import { AMOUNT_PATTERN, formatMinorUnits, percentOfRoundHalfUp, toMinorUnits } from '../domain/money.js';

export interface QuoteTerms {
  readonly transferAmount: string;
  readonly payeeReceiveAmount: string;
  readonly fee: string;
}

/**
 * The payee's terms for a quote request (Mojaloop payee-fee semantics):
 * fee = charge% of the amount, exact, rounded half-up to the currency's minor unit;
 * SEND: the payer sends `amount`, the payee receives amount - fee;
 * RECEIVE: the payee receives `amount`, the payer sends amount + fee.
 */
export function quoteTerms(amountType: 'SEND' | 'RECEIVE', amount: string, currency: string, chargePercent: string): QuoteTerms {
  let amountMinor: bigint;
  try {
    amountMinor = toMinorUnits(amount, currency);
  } catch (error) {
    throw new ConnectorError('ValidationFailed', `amount ${amount} has more decimals than ${currency} allows`, { cause: error });
  }
  if (amountMinor === 0n) throw new ConnectorError('ValidationFailed', 'amount must be greater than zero');
  const feeMinor = percentOfRoundHalfUp(amountMinor, chargePercent);
  const transferMinor = amountType === 'SEND' ? amountMinor : amountMinor + feeMinor;
  const receiveMinor = amountType === 'SEND' ? amountMinor - feeMinor : amountMinor;
  if (receiveMinor <= 0n) throw new ConnectorError('PayeeRejected', 'the amount does not cover the fee');
  const terms = {
    transferAmount: formatMinorUnits(transferMinor, currency),
    payeeReceiveAmount: formatMinorUnits(receiveMinor, currency),
    fee: formatMinorUnits(feeMinor, currency),
  };
  if (!AMOUNT_PATTERN.test(terms.transferAmount)) {
    throw new ConnectorError('ValidationFailed', 'amount plus fee exceeds the largest amount the scheme carries');
  }
  return terms;
}

/** now + validity, as the API's timestamp (ISO 8601 with milliseconds, UTC). */
export function quoteExpiration(now: Date, validityMs: number): string {
  return new Date(now.getTime() + validityMs).toISOString();
}
