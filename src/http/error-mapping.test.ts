import { describe, expect, it } from 'vitest';
import { ConnectorError, asInstitutionError } from '../domain/errors.js';
import { mapError } from './error-mapping.js';

describe('mapError', () => {
  it('maps each category to its HTTP status with the FSPIOP code and the message', () => {
    expect(mapError(new ConnectorError('PartyNotFound'))).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found' }, unexpected: false });
    expect(mapError(new ConnectorError('QuoteExpired', 'at 2026-11-23T10:00:00.000Z'))).toEqual({
      status: 422,
      body: { statusCode: '3302', message: 'Quote expired: at 2026-11-23T10:00:00.000Z' },
      unexpected: false,
    });
    expect(mapError(new ConnectorError('InstitutionTimeout')).status).toBe(504);
    expect(mapError(new ConnectorError('ModifiedRequest')).status).toBe(409);
  });

  it('answers anything that is not a ConnectorError as an internal error, without its text', () => {
    expect(mapError(new TypeError('x is undefined'))).toEqual({ status: 500, body: { statusCode: '2001', message: 'Internal server error' }, unexpected: true });
  });

  it('clips messages to the 128 characters the switch accepts', () => {
    const body = mapError(new ConnectorError('ValidationFailed', 'x'.repeat(200))).body;
    expect(body.message).toHaveLength(128);
    expect(body.message.endsWith('xxx...')).toBe(true);
  });

  it('hides an institution\'s detail where asked (the switch), shows it elsewhere (the channel), and leaves the connector\'s own detail alone', () => {
    const adapterError = new ConnectorError('PayeeInsufficientLiquidity', 'airtel reserve 01JD: wallet balance below the amount');
    const marked = asInstitutionError(adapterError);
    expect(marked).toBeInstanceOf(ConnectorError);
    expect(marked).toMatchObject({ errorName: 'PayeeInsufficientLiquidity', code: '5001', fromInstitution: true, message: adapterError.message, cause: adapterError });
    expect(mapError(marked, { hideInstitutionDetail: true }).body).toEqual({ statusCode: '5001', message: 'Payee FSP insufficient liquidity' });
    expect(mapError(marked).body).toEqual({ statusCode: '5001', message: 'Payee FSP insufficient liquidity: airtel reserve 01JD: wallet balance below the amount' });
    const own = new ConnectorError('QuoteExpired', 'at 2026-11-23T10:00:00.000Z');
    expect(mapError(own, { hideInstitutionDetail: true }).body.message).toBe('Quote expired: at 2026-11-23T10:00:00.000Z');
    // Marking twice, or marking what is not a ConnectorError, changes nothing.
    expect(asInstitutionError(marked)).toBe(marked);
    const plain = new Error('socket hang up');
    expect(asInstitutionError(plain)).toBe(plain);
  });
});
