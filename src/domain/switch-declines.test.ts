import { describe, expect, it } from 'vitest';
import { ConnectorError } from './errors.js';
import { switchDeclineOf } from './switch-declines.js';

describe('switchDeclineOf', () => {
  it.each([
    ['3204', 'PartyNotFound', '3204', 'not-found'],
    ['3200', 'PartyNotFound', '3204', 'not-found'],
    ['3203', 'PayeeFspNotFound', '3203', 'not-found'],
    ['3100', 'SwitchRefusedRequest', '3100', 'invalid'],
    ['3302', 'QuoteExpired', '3302', 'rejected'],
    ['3303', 'TransferExpired', '3303', 'rejected'],
    ['4001', 'PayerFspInsufficientLiquidity', '4001', 'rejected'],
    ['4103', 'UnsupportedCurrency', '5106', 'rejected'],
    ['5001', 'PayeeInsufficientLiquidity', '5001', 'rejected'],
    ['5101', 'PayeeRejectedQuote', '5101', 'rejected'],
    ['5104', 'PayeeRejected', '5100', 'rejected'],
    ['5106', 'UnsupportedCurrency', '5106', 'rejected'],
    ['5400', 'PayeeBlocked', '5400', 'rejected'],
    ['5401', 'PayeeBarred', '5401', 'rejected'],
    ['5402', 'PayeeClosed', '5402', 'rejected'],
  ])('%s is a decline: %s (%s, %s)', (statusCode, name, code, category) => {
    const errorName = switchDeclineOf(statusCode);
    expect(errorName).toBe(name);
    const error = new ConnectorError(errorName ?? 'Internal');
    expect([error.code, error.category]).toEqual([code, category]);
  });

  it.each(['1000', '1001', '2000', '2001', '2003', '2004', '5000', '3106', '400', 'none', '', 'toString', '32040'])('%j is no decline: an outage or unknown', (statusCode) => {
    expect(switchDeclineOf(statusCode)).toBeUndefined();
  });
});
