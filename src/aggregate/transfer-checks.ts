import { ConnectorError } from '../domain/errors.js';
import { compareDecimal, isAmount } from '../domain/money.js';
import type { AccountStatus } from '../ports/core-banking.js';
import type { QuoteRecord } from '../ports/store.js';
import type { TransferRequestBody } from './incoming-types.js';

/**
 * Checks that an incoming transfer is the one we quoted: the body's copy of our quote, the
 * request amount and the ILP packet's amount must all equal what we stored.
 */
export function checkTransferMatchesQuote(body: TransferRequestBody, quote: QuoteRecord, now: Date): void {
  if (now.toISOString() > quote.expiration) {
    throw new ConnectorError('QuoteExpired', `quote ${quote.quoteId} expired at ${quote.expiration}`);
  }
  const mismatches: string[] = [];
  const expectEqual = (field: string, actual: string | undefined, expected: string): void => {
    if (actual !== undefined && actual !== expected) mismatches.push(field);
  };
  const expectSameAmount = (field: string, actual: string | undefined, expected: string): void => {
    if (actual !== undefined && (!isAmount(actual) || compareDecimal(actual, expected) !== 0)) mismatches.push(field);
  };
  expectEqual('quote.transactionId', body.quote.transactionId, quote.transactionId);
  expectSameAmount('quote.transferAmount', body.quote.transferAmount, quote.transferAmount);
  expectEqual('quote.transferAmountCurrency', body.quote.transferAmountCurrency, quote.currency);
  expectSameAmount('quote.payeeReceiveAmount', body.quote.payeeReceiveAmount, quote.payeeReceiveAmount);
  expectEqual('quote.payeeReceiveAmountCurrency', body.quote.payeeReceiveAmountCurrency, quote.currency);
  expectSameAmount('quote.payeeFspFeeAmount', body.quote.payeeFspFeeAmount, quote.fee);
  expectEqual('quote.payeeFspFeeAmountCurrency', body.quote.payeeFspFeeAmountCurrency, quote.currency);
  expectEqual('quote.expiration', body.quote.expiration, quote.expiration);
  expectSameAmount('amount', body.amount, quote.amount);
  expectEqual('currency', body.currency, quote.currency);
  expectEqual('amountType', body.amountType, quote.amountType);
  expectEqual('to.idValue', body.to.idValue, quote.payeeIdValue);
  expectEqual('to.idSubValue', body.to.idSubValue ?? undefined, quote.payeeIdSubValue ?? '');
  const ilpAmount = body.ilpPacket?.data?.amount;
  expectSameAmount('ilpPacket.data.amount.amount', ilpAmount?.amount, quote.transferAmount);
  expectEqual('ilpPacket.data.amount.currency', ilpAmount?.currency, quote.currency);
  if (mismatches.length > 0) {
    throw new ConnectorError('InvalidQuote', `differs from quote ${quote.quoteId} in ${mismatches.join(', ')}`);
  }
}

/** A payee account that cannot receive: barred, blocked or closed, each its own error. */
export function checkPayeeCanReceive(status: AccountStatus): void {
  switch (status) {
    case 'active':
      return;
    case 'barred':
      throw new ConnectorError('PayeeBarred');
    case 'blocked':
      throw new ConnectorError('PayeeBlocked');
    case 'closed':
      throw new ConnectorError('PayeeClosed');
  }
}
