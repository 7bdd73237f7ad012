import { ConnectorError } from '../../../domain/errors.js';
import { isCurrencyCode } from '../../../domain/currencies.js';
import { formatMinorUnits, toMinorUnits, type Money } from '../../../domain/money.js';

/**
 * Converts a request's amount to positive minor units of its currency, answering a caller's
 * mistake (unknown currency, too many decimals, zero) as ValidationFailed rather than a crash.
 */
export function positiveMinor(money: Money): bigint {
  if (!isCurrencyCode(money.currency)) throw new ConnectorError('ValidationFailed', `unknown currency ${money.currency}`);
  let minor: bigint;
  try {
    minor = toMinorUnits(money.amount, money.currency);
  } catch (error) {
    throw new ConnectorError('ValidationFailed', `amount ${money.amount} ${money.currency} is not valid`, { cause: error });
  }
  if (minor <= 0n) throw new ConnectorError('ValidationFailed', 'amount must be greater than zero');
  return minor;
}

/** Formats signed minor units (a posting or a total) as a decimal string. */
export function formatSigned(minor: bigint, currency: string): string {
  return minor < 0n ? `-${formatMinorUnits(-minor, currency)}` : formatMinorUnits(minor, currency);
}
