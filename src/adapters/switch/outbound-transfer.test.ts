import { describe, expect, it } from 'vitest';
import { readErrorTransferState, readOutboundTransfer } from './outbound-transfer.js';
import { errorStatusCode, sdkErrorDetail } from './sdk-client.js';

describe('readOutboundTransfer', () => {
  it('reads the party name, quote and conversion terms as the switch wrote them', () => {
    const transfer = readOutboundTransfer({
      transferId: '01JDV6M3AZ6XK1B0SPZ8Q4W2RA',
      currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE',
      getPartiesResponse: { body: { party: { personalInfo: { complexName: { firstName: 'Chanda', lastName: 'Mwila' } } } } },
      quoteResponse: { body: { transferAmount: { amount: '10', currency: 'ZMW' }, expiration: '2026-11-23T11:00:00.000Z' } },
      fxQuotesResponse: { body: { conversionTerms: { sourceAmount: { currency: 'ZMW' }, charges: [{ chargeType: 'x', sourceAmount: { amount: '1', currency: 'ZMW' } }] } } },
      unknownField: true,
    });
    expect(transfer).toEqual({
      transferId: '01JDV6M3AZ6XK1B0SPZ8Q4W2RA',
      currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE',
      payeeName: 'Chanda Mwila',
      quote: { transferAmount: { amount: '10', currency: 'ZMW' }, expiration: '2026-11-23T11:00:00.000Z' },
      conversion: { sourceAmount: { currency: 'ZMW' }, charges: [{ chargeType: 'x', sourceAmount: { amount: '1', currency: 'ZMW' } }] },
      malformed: [],
    });
  });

  it('notes fields of the wrong type instead of guessing', () => {
    const transfer = readOutboundTransfer({ currentState: 7, quoteResponse: { body: { transferAmount: { amount: 10, currency: 'ZMW' }, expiration: 1 } } });
    expect(transfer.malformed).toEqual(['currentState', 'quoteResponse.body.transferAmount', 'quoteResponse.body.expiration']);
    expect(readOutboundTransfer('text').malformed).toEqual(['body']);
  });

  it('reads the hub\'s error code from the transfer\'s last error, and only from a hub error', () => {
    const relayed = { lastError: { httpStatusCode: 500, mojaloopError: { errorInformation: { errorCode: '5100', errorDescription: 'Payee rejected' } } } };
    expect(readErrorTransferState({ statusCode: '5100', transferState: { transferId: 'x', currentState: 'ERROR_OCCURRED', ...relayed } })).toEqual({
      transferId: 'x',
      currentState: 'ERROR_OCCURRED',
      hubErrorCode: '5100',
      malformed: [],
    });
    // The switch connector's own failures: a transport error's fields, or an error serialised to text.
    expect(readOutboundTransfer({ currentState: 'ERROR_OCCURRED', lastError: { code: 'ECONNRESET' } })).toEqual({ currentState: 'ERROR_OCCURRED', malformed: [] });
    expect(readOutboundTransfer({ currentState: 'ERROR_OCCURRED', lastError: '{"msg":"Request returned non-success status code 503"}' })).toEqual({ currentState: 'ERROR_OCCURRED', malformed: [] });
    expect(readOutboundTransfer({ lastError: { mojaloopError: { errorInformation: { errorCode: 5100 } } } })).toEqual({ malformed: [] });
  });

  it('reads error bodies whether statusCode is a string or a number', () => {
    expect(errorStatusCode({ statusCode: '5000' })).toBe('5000');
    expect(errorStatusCode({ statusCode: 400 })).toBe('400');
    expect(errorStatusCode({})).toBe('none');
    expect(sdkErrorDetail({ status: 400, body: { statusCode: 400, message: 'bad' } })).toBe('HTTP 400, statusCode 400: bad');
    expect(readErrorTransferState({ statusCode: '5000', transferState: { transferId: 'x', currentState: 'ERROR_OCCURRED' } })).toEqual({
      transferId: 'x',
      currentState: 'ERROR_OCCURRED',
      malformed: [],
    });
  });
});
