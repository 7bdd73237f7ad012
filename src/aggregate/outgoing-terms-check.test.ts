import { describe, expect, it } from 'vitest';
import type { ReturnedQuote } from '../ports/outgoing-switch.js';
import { checkReturnedQuote, type PaymentAmounts } from './outgoing-terms-check.js';

const now = new Date('2026-11-23T10:00:00.000Z');
const later = '2026-11-23T11:00:00.000Z';
const zmw = (amount: string) => ({ amount, currency: 'ZMW' });
const send: PaymentAmounts = { amountType: 'SEND', sendAmount: '100', sendCurrency: 'ZMW', receiveCurrency: 'ZMW' };
const receive: PaymentAmounts = { ...send, amountType: 'RECEIVE' };

describe('checkReturnedQuote', () => {
  it('SEND: transferAmount is the amount sent; the payee receives it less the fee', () => {
    const quote: ReturnedQuote = { transferAmount: zmw('100'), payeeReceiveAmount: zmw('98.5'), payeeFspFee: zmw('1.5'), expiration: later };
    expect(checkReturnedQuote(quote, [], send, undefined, now)).toEqual({
      transferAmount: zmw('100'),
      payeeReceiveAmount: zmw('98.5'),
      fees: zmw('1.5'),
      expiration: later,
    });
  });

  it('RECEIVE: payeeReceiveAmount is the amount asked; a commission lowers what is transferred', () => {
    const quote: ReturnedQuote = {
      transferAmount: zmw('100.5'),
      payeeReceiveAmount: zmw('100'),
      payeeFspFee: zmw('1'),
      payeeFspCommission: zmw('0.5'),
      expiration: later,
    };
    expect(checkReturnedQuote(quote, [], receive, undefined, now)).toMatchObject({ transferAmount: zmw('100.5'), payeeFspCommission: zmw('0.5') });
    expect(() => checkReturnedQuote({ ...quote, payeeReceiveAmount: zmw('99'), transferAmount: zmw('99.5') }, [], receive, undefined, now)).toThrow(
      'Invalid quote returned by the switch: payeeReceiveAmount 99 is not the requested 100',
    );
  });

  it('amounts beyond a double still compare exactly', () => {
    const big: PaymentAmounts = { ...send, sendAmount: '123456789012345678.91' };
    const quote: ReturnedQuote = {
      transferAmount: zmw('123456789012345678.91'),
      payeeReceiveAmount: zmw('123456789012345678.9'),
      payeeFspFee: zmw('0.01'),
      expiration: later,
    };
    expect(checkReturnedQuote(quote, [], big, undefined, now).payeeReceiveAmount).toEqual(zmw('123456789012345678.9'));
    expect(() => checkReturnedQuote({ ...quote, payeeFspFee: zmw('0.02') }, [], big, undefined, now)).toThrow('transferAmount is not payeeReceiveAmount');
  });

  it('without a conversion, refuses terms for a payee who is to receive another currency', () => {
    const quote: ReturnedQuote = { transferAmount: zmw('100'), payeeReceiveAmount: zmw('100'), expiration: later };
    for (const payment of [send, receive]) {
      expect(() => checkReturnedQuote(quote, [], { ...payment, receiveCurrency: 'MWK' }, undefined, now)).toThrow(
        'Invalid quote returned by the switch: the switch offered no conversion to MWK',
      );
    }
  });

  it('refuses a missing quote, missing amounts and an expiry at or before now', () => {
    expect(() => checkReturnedQuote(undefined, [], send, undefined, now)).toThrow('no quote in the switch answer');
    expect(() => checkReturnedQuote({ payeeReceiveAmount: zmw('100'), expiration: later }, [], send, undefined, now)).toThrow('transferAmount is missing');
    expect(() => checkReturnedQuote({ transferAmount: zmw('100'), expiration: later }, [], send, undefined, now)).toThrow('payeeReceiveAmount is missing');
    expect(() => checkReturnedQuote({ transferAmount: zmw('100'), payeeReceiveAmount: zmw('100'), expiration: now.toISOString() }, [], send, undefined, now)).toThrow(
      'quote expired at 2026-11-23T10:00:00.000Z',
    );
  });
});
