import { describe, expect, it } from 'vitest';
import { fromMinor, refusal, toMinor, toTransactionStatus } from './minibank-transform.js';

describe('minibank transformers', () => {
  it('converts minor units both ways through money.ts', () => {
    expect(fromMinor('1234', 'ZMW', 'x')).toBe('12.34');
    expect(fromMinor('1200', 'ZMW', 'x')).toBe('12');
    expect(fromMinor('1234', 'UGX', 'x')).toBe('1234');
    expect(toMinor({ amount: '12.3', currency: 'ZMW' })).toBe('1230');
    expect(() => fromMinor('12.34', 'ZMW', 'body.amount_minor')).toThrow('body.amount_minor is not a whole number of minor units');
    expect(() => toMinor({ amount: '0.001', currency: 'ZMW' })).toThrow('amount is not payable in ZMW');
  });

  it('maps payment states and refusals exhaustively', () => {
    expect(['BOOKED', 'REJECTED', 'QUEUED'].map(toTransactionStatus)).toEqual(['succeeded', 'failed', 'unknown']);
    expect(['NSF', 'FROZEN', 'SHUT', 'NO_WALLET', 'LIMIT'].map((reason) => refusal({ reason }, 'payee').errorName)).toEqual([
      'PayeeInsufficientLiquidity',
      'PayeeBlocked',
      'PayeeClosed',
      'PartyNotFound',
      'PayeeRejected',
    ]);
  });
});
