import { isCurrencyCode } from '../domain/currencies.js';
import { ConnectorError, type ErrorName } from '../domain/errors.js';
import { addMoney, compareDecimal, fitsMinorUnits, isAmount, sameMoney, type Money } from '../domain/money.js';
import type { ConversionTerms, ReturnedQuote, WireMoney } from '../ports/outgoing-switch.js';
import type { ConversionView } from './outgoing-types.js';

export interface PaymentAmounts {
  readonly amountType: 'SEND' | 'RECEIVE';
  readonly sendAmount: string;
  readonly sendCurrency: string;
  readonly receiveCurrency: string;
}

export interface CheckedQuote {
  readonly transferAmount: Money;
  readonly payeeReceiveAmount: Money;
  readonly fees: Money;
  readonly payeeFspCommission?: Money;
  readonly expiration: string;
}

/**
 * The conversion terms an FX provider offered (WAITING_FOR_CONVERSION_ACCEPTANCE): the source
 * is what the customer pays in sendCurrency, the target what arrives in receiveCurrency. Throws
 * ConversionRejected naming the first rule broken.
 */
export function checkConversionTerms(terms: ConversionTerms | undefined, malformed: readonly string[], payment: PaymentAmounts, now: Date): ConversionView {
  const reject = (reason: string): ConnectorError => new ConnectorError('ConversionRejected', reason);
  if (terms === undefined) throw reject('no conversion terms');
  const bad = malformed.find((path) => path.startsWith('fxQuotesResponse'));
  if (bad !== undefined) throw reject(`${bad} is malformed`);
  const source = completeMoney(terms.sourceAmount, 'sourceAmount', 'ConversionRejected');
  const target = completeMoney(terms.targetAmount, 'targetAmount', 'ConversionRejected');
  if (source.currency !== payment.sendCurrency) throw reject(`source currency ${source.currency} is not ${payment.sendCurrency}`);
  if (target.currency !== payment.receiveCurrency) throw reject(`target currency ${target.currency} is not ${payment.receiveCurrency}`);
  if (compareDecimal(source.amount, '0') === 0 || compareDecimal(target.amount, '0') === 0) throw reject('amounts must be greater than zero');
  if (payment.amountType === 'SEND' && !sameMoney(source, { amount: payment.sendAmount, currency: payment.sendCurrency })) {
    throw reject(`source amount ${source.amount} is not the amount sent ${payment.sendAmount}`);
  }
  const known = new Set([payment.sendCurrency, payment.receiveCurrency]);
  const charges = terms.charges.flatMap((charge, index) =>
    [charge.sourceAmount, charge.targetAmount]
      .filter((money): money is WireMoney => money !== undefined)
      .map((money) => {
        const checked = checkMoney(money, `charges[${index}]`, 'ConversionRejected');
        if (!known.has(checked.currency)) throw reject(`charges[${index}] is in ${checked.currency}, not a currency of this conversion`);
        return { chargeType: charge.chargeType, amount: checked };
      }),
  );
  const expiration = checkExpiration(terms.expiration, now, 'ConversionRejected', 'conversion terms');
  return { sourceAmount: source, targetAmount: target, charges, expiration };
}

/**
 * The quote the switch returned (WAITING_FOR_QUOTE_ACCEPTANCE), checked with the Mojaloop quote
 * rules: every amount an Amount in the quote's currency, transferAmount = payeeReceiveAmount +
 * payeeFspFee - payeeFspCommission, the anchor amount the one the payer asked for (SEND:
 * transferAmount; RECEIVE: payeeReceiveAmount), non-negative fees, not expired. With a
 * conversion the quote is in the target currency and transfers the conversion's target amount;
 * without one, receiveCurrency must be sendCurrency.
 * Throws InvalidReturnedQuote naming the first rule broken.
 */
export function checkReturnedQuote(
  quote: ReturnedQuote | undefined,
  malformed: readonly string[],
  payment: PaymentAmounts,
  conversion: ConversionView | undefined,
  now: Date,
): CheckedQuote {
  const reject = (reason: string): ConnectorError => new ConnectorError('InvalidReturnedQuote', reason);
  if (quote === undefined) throw reject('no quote in the switch answer');
  const bad = malformed.find((path) => path.startsWith('quoteResponse'));
  if (bad !== undefined) throw reject(`${bad} is malformed`);
  // Without a conversion the quote is in sendCurrency, so the payee would receive sendCurrency:
  // terms the customer did not ask for when receiveCurrency is another currency.
  if (conversion === undefined && payment.receiveCurrency !== payment.sendCurrency) {
    throw reject(`the switch offered no conversion to ${payment.receiveCurrency}`);
  }
  const currency = conversion === undefined ? payment.sendCurrency : conversion.targetAmount.currency;
  const inCurrency = (money: WireMoney | undefined, field: string): Money | undefined => {
    if (money === undefined) return undefined;
    const checked = checkMoney(money, field, 'InvalidReturnedQuote');
    if (checked.currency !== currency) throw reject(`${field} is in ${checked.currency}, expected ${currency}`);
    return checked;
  };
  const transferAmount = inCurrency(quote.transferAmount, 'transferAmount');
  if (transferAmount === undefined) throw reject('transferAmount is missing');
  const fees = inCurrency(quote.payeeFspFee, 'payeeFspFee') ?? { amount: '0', currency };
  const commission = inCurrency(quote.payeeFspCommission, 'payeeFspCommission');
  const payeeReceiveAmount = inCurrency(quote.payeeReceiveAmount, 'payeeReceiveAmount');
  if (payeeReceiveAmount === undefined) throw reject('payeeReceiveAmount is missing');
  if (compareDecimal(payeeReceiveAmount.amount, '0') === 0) throw reject('payeeReceiveAmount must be greater than zero');
  // Mojaloop's quote equation, rearranged so that no subtraction can go below zero.
  if (!sameMoney(addMoney(transferAmount, commission ?? { amount: '0', currency }), addMoney(payeeReceiveAmount, fees))) {
    throw reject('transferAmount is not payeeReceiveAmount + payeeFspFee - payeeFspCommission');
  }
  const anchor = anchorOf(payment, conversion);
  const anchored = anchor.field === 'transferAmount' ? transferAmount : payeeReceiveAmount;
  if (!sameMoney(anchored, anchor.money)) throw reject(`${anchor.field} ${anchored.amount} is not the requested ${anchor.money.amount}`);
  const expiration = checkExpiration(quote.expiration, now, 'InvalidReturnedQuote', 'quote');
  return { transferAmount, payeeReceiveAmount, fees, ...(commission === undefined ? {} : { payeeFspCommission: commission }), expiration };
}

/** The amount the quote must reproduce exactly. */
function anchorOf(payment: PaymentAmounts, conversion: ConversionView | undefined): { field: 'transferAmount' | 'payeeReceiveAmount'; money: Money } {
  if (conversion !== undefined) return { field: 'transferAmount', money: conversion.targetAmount };
  const requested = { amount: payment.sendAmount, currency: payment.sendCurrency };
  return payment.amountType === 'SEND' ? { field: 'transferAmount', money: requested } : { field: 'payeeReceiveAmount', money: requested };
}

function checkMoney(money: WireMoney, field: string, error: ErrorName): Money {
  if (!isCurrencyCode(money.currency)) throw new ConnectorError(error, `${field} currency ${money.currency} is not ISO 4217`);
  if (!isAmount(money.amount)) throw new ConnectorError(error, `${field} amount is not an Amount`);
  if (!fitsMinorUnits(money.amount, money.currency)) throw new ConnectorError(error, `${field} has more decimals than ${money.currency} allows`);
  return { amount: money.amount, currency: money.currency };
}

function completeMoney(money: { currency: string; amount?: string } | undefined, field: string, error: ErrorName): Money {
  if (money?.amount === undefined) throw new ConnectorError(error, `${field} is missing`);
  return checkMoney({ amount: money.amount, currency: money.currency }, field, error);
}

function checkExpiration(expiration: string | undefined, now: Date, error: ErrorName, what: string): string {
  if (expiration === undefined) throw new ConnectorError(error, `${what} has no expiration`);
  const at = Date.parse(expiration);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(expiration) || Number.isNaN(at)) throw new ConnectorError(error, `${what} expiration is not a timestamp`);
  if (at <= now.getTime()) throw new ConnectorError(error, `${what} expired at ${expiration}`);
  return new Date(at).toISOString();
}
