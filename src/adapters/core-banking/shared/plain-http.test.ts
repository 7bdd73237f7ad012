import { describe, expect, it } from 'vitest';
import { plainHttpWarning } from './plain-http.js';

describe('plainHttpWarning', () => {
  it('names the setting and the host for plain http to another machine', () => {
    expect(plainHttpWarning('FINERACT_BASE_URL', 'http://fineract.bank.internal:8443/fineract-provider/api/v1')).toBe(
      'FINERACT_BASE_URL uses plain http to fineract.bank.internal: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
    );
    expect(plainHttpWarning('REST_CBS_BASE_URL', 'http://10.0.4.7:8080')).toBe(
      'REST_CBS_BASE_URL uses plain http to 10.0.4.7: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
    );
    expect(plainHttpWarning('FX_REST_BASE_URL', 'http://[2001:db8::5]:9000')).toBe(
      'FX_REST_BASE_URL uses plain http to [2001:db8::5]: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
    );
  });

  it('says nothing for https, or for http to this machine', () => {
    for (const url of ['https://openapi.airtel.africa', 'http://127.0.0.1:9000', 'http://127.8.9.10', 'http://localhost:8080/api', 'http://cbs.localhost', 'http://[::1]:8080', 'http://[::ffff:127.0.0.1]:80']) {
      expect(plainHttpWarning('AIRTEL_BASE_URL', url)).toBeUndefined();
    }
  });

  it('does not take a name that only begins like loopback for it', () => {
    expect(plainHttpWarning('MINIBANK_BASE_URL', 'http://127.0.0.1.attacker.example')).toBe(
      'MINIBANK_BASE_URL uses plain http to 127.0.0.1.attacker.example: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
    );
    expect(plainHttpWarning('MINIBANK_BASE_URL', 'http://localhost.example.org')).toBe(
      'MINIBANK_BASE_URL uses plain http to localhost.example.org: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
    );
  });
});
