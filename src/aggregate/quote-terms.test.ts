import { describe, expect, it } from 'vitest';
import { isConnectorError } from '../domain/errors.js';
import { quoteExpiration, quoteTerms } from './quote-terms.js';

describe('quoteTerms', () => {
  it('SEND: the payer sends the amount, the payee receives amount minus fee', () => {
    expect(quoteTerms('SEND', '100.25', 'USD', '1.5')).toEqual({ transferAmount: '100.25', payeeReceiveAmount: '98.75', fee: '1.5' });
  });

  it('RECEIVE: the payee receives the amount, the payer sends amount plus fee', () => {
    expect(quoteTerms('RECEIVE', '100.25', 'USD', '1.5')).toEqual({ transferAmount: '101.75', payeeReceiveAmount: '100.25', fee: '1.5' });
  });

  it('rounds the fee half up to the minor unit', () => {
    expect(quoteTerms('SEND', '1', 'USD', '0.5').fee).toBe('0.01'); // 0.005 -> 0.01
    expect(quoteTerms('SEND', '0.99', 'USD', '0.5').fee).toBe('0'); // 0.00495 -> 0
    expect(quoteTerms('RECEIVE', '333', 'JPY', '1.5')).toEqual({ transferAmount: '338', payeeReceiveAmount: '333', fee: '5' }); // 4.995 -> 5
  });

  it('handles 18-digit amounts exactly', () => {
    expect(quoteTerms('SEND', '123456789012345678.9', 'USD', '1')).toEqual({
      transferAmount: '123456789012345678.9',
      payeeReceiveAmount: '122222221122222222.11',
      fee: '1234567890123456.79',
    });
  });

  it('refuses an amount plus fee beyond 18 integer digits', () => {
    expect(() => quoteTerms('RECEIVE', '999999999999999999', 'USD', '1')).toThrow('exceeds the largest amount');
  });

  it('refuses amounts finer than the currency, zero, and amounts that do not cover the fee', () => {
    const codes = [
      () => quoteTerms('SEND', '1.001', 'USD', '1'),
      () => quoteTerms('SEND', '0', 'USD', '1'),
      () => quoteTerms('SEND', '1', 'USD', '100'),
    ].map((fn) => {
      try {
        fn();
        return 'no error';
      } catch (error) {
        return isConnectorError(error) ? `${error.errorName}:${error.code}` : 'other';
      }
    });
    expect(codes).toEqual(['ValidationFailed:3100', 'ValidationFailed:3100', 'PayeeRejected:5100']);
  });
});

describe('quoteExpiration', () => {
  it('is now plus the validity, with milliseconds, in UTC', () => {
    expect(quoteExpiration(new Date('2026-11-23T10:00:00.000Z'), 3_600_000)).toBe('2026-11-23T11:00:00.000Z');
    expect(quoteExpiration(new Date('2026-12-31T23:30:00.123Z'), 5_400_000)).toBe('2027-01-01T01:00:00.123Z');
  });
});
