import { ERROR_CATALOGUE, isErrorName } from '../domain/errors.js';
import type { Money } from '../domain/money.js';
import type { OutgoingPaymentRecord } from '../ports/outgoing-store.js';
import type { CheckedQuote } from './outgoing-terms-check.js';
import type { ConversionView, PaymentStatus, PaymentTerms } from './outgoing-types.js';

/** The terms answered to the channel, built once from the checked quote and stored for retries. */
export function paymentTerms(
  payment: OutgoingPaymentRecord & { readonly transferId: string },
  payeeName: string | undefined,
  quote: CheckedQuote,
  conversion: ConversionView | undefined,
): PaymentTerms {
  // Without a conversion the quote is in the sending currency and the payer's side sends
  // transferAmount; with one, the customer pays the conversion's source amount.
  const debitAmount: Money = conversion === undefined ? quote.transferAmount : conversion.sourceAmount;
  return {
    homeTransactionId: payment.homeTransactionId,
    transferId: payment.transferId,
    state: 'QUOTED',
    amountType: payment.amountType,
    ...(payeeName === undefined ? {} : { payeeName }),
    sendAmount: { amount: payment.sendAmount, currency: payment.sendCurrency },
    transferAmount: quote.transferAmount,
    payeeReceiveAmount: quote.payeeReceiveAmount,
    fees: quote.fees,
    ...(quote.payeeFspCommission === undefined ? {} : { payeeFspCommission: quote.payeeFspCommission }),
    debitAmount,
    ...(conversion === undefined ? {} : { conversion }),
    // Accept before both lapse: a conversion that ends before the quote ends the terms with it
    // (the hub would refuse the transfer of an expired conversion, after the customer's debit).
    expiration: conversion !== undefined && conversion.expiration < quote.expiration ? conversion.expiration : quote.expiration,
  };
}

/** Where a payment stands, without the payee's name (the only personal datum the terms hold). */
export function paymentStatus(payment: OutgoingPaymentRecord): PaymentStatus {
  const terms = payment.terms === null ? undefined : (JSON.parse(payment.terms) as PaymentTerms);
  const errorName = payment.errorName;
  const entry = errorName !== null && isErrorName(errorName) ? ERROR_CATALOGUE[errorName] : undefined;
  return {
    homeTransactionId: payment.homeTransactionId,
    transferId: payment.transferId,
    kind: payment.kind,
    flow: payment.flow,
    state: payment.state,
    amountType: payment.amountType,
    sendAmount: { amount: payment.sendAmount, currency: payment.sendCurrency },
    receiveCurrency: payment.receiveCurrency,
    debitAmount: payment.debitAmount === null ? null : { amount: payment.debitAmount, currency: payment.sendCurrency },
    transferAmount: terms?.transferAmount ?? null,
    payeeReceiveAmount: terms?.payeeReceiveAmount ?? null,
    fees: terms?.fees ?? null,
    quoteExpiration: payment.quoteExpiration,
    switchState: payment.switchState,
    callbackCode: payment.callbackCode,
    institutionReference: payment.institutionReference,
    error:
      errorName === null || entry === undefined
        ? null
        : { statusCode: entry.code, name: errorName, message: payment.errorMessage ?? entry.text },
    needsAttention: payment.needsAttention,
    attempts: payment.attempts,
    nextAttemptAt: payment.nextAttemptAt,
    lastError: payment.lastError,
    createdAt: payment.createdAt,
    updatedAt: payment.updatedAt,
  };
}
