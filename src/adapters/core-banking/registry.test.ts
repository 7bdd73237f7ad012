import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../ports/clock.js';
import type { CoreBanking } from '../../ports/core-banking.js';
import { ADAPTERS, ADAPTER_NAMES, createCoreBanking, readAdapterOptions, type HttpAdapterOptions } from './registry.js';

const ENV = {
  REST_CBS_BASE_URL: 'http://127.0.0.1:9/api',
  FINERACT_BASE_URL: 'http://127.0.0.1:9/fineract-provider/api/v1',
  FINERACT_USERNAME: 'connector',
  FINERACT_PASSWORD: 'fineract-password-value',
  FINERACT_FLOAT_ACCOUNT_ID: '1',
  FINERACT_PAYMENT_TYPE_ID: '4',
  AIRTEL_BASE_URL: 'http://127.0.0.1:9',
  AIRTEL_CLIENT_ID: 'client',
  AIRTEL_CLIENT_SECRET: 'airtel-secret-value',
  AIRTEL_COUNTRY: 'ZM',
  AIRTEL_CURRENCY: 'ZMW',
  AIRTEL_PIN_ENCRYPTED: 'S2V5RW5jcnlwdGVkUElOMTIzNA==',
  MINIBANK_BASE_URL: 'http://127.0.0.1:9',
  MINIBANK_API_KEY: 'minibank-key-value',
};

const built: CoreBanking[] = [];
afterEach(async () => {
  for (const coreBanking of built.splice(0)) await coreBanking.close?.();
});

function build(name: string): CoreBanking {
  const read = readAdapterOptions(name, ENV);
  if (!('options' in read) || read.options.adapter === 'sandbox') throw new Error(`no HTTP options for ${name}`);
  const coreBanking = createCoreBanking(read.options satisfies HttpAdapterOptions, { clock: systemClock });
  built.push(coreBanking);
  return coreBanking;
}

describe('core-banking registry', () => {
  it('builds each HTTP adapter with its declared capabilities', () => {
    expect(['rest', 'fineract', 'airtel', 'minibank'].map((name) => [build(name).name, build(name).capabilities])).toEqual([
      // A collect may take (connect + answer timeout) per call: REST one call, 3 + 10 s by default;
      // Airtel an enquiry and a push, each after a token and again after a refreshed one, 8 x (5 + 30 s).
      ['rest', { outgoingFlow: 'bank', nativeHolds: true, collectTakesUpToMs: 13_000 }],
      ['fineract', { outgoingFlow: 'bank', nativeHolds: true }],
      ['airtel', { outgoingFlow: 'mobile-operator', nativeHolds: false, collectTakesUpToMs: 280_000 }],
      ['minibank', { outgoingFlow: 'bank', nativeHolds: false }],
    ]);
  });

  it('leaves the sandbox to the composition root', () => {
    expect(readAdapterOptions('sandbox', {})).toEqual({ options: { adapter: 'sandbox' } });
  });

  it('names the adapters it knows when CBS_ADAPTER is wrong', () => {
    expect(readAdapterOptions('mpesa', ENV)).toEqual({ problems: ['CBS_ADAPTER: "mpesa" is not one of sandbox, rest, fineract, airtel, minibank'] });
  });

  it('lists every missing setting of the chosen adapter at once, and no secret values', () => {
    const result = readAdapterOptions('fineract', { FINERACT_PASSWORD: 'fineract-password-value', FINERACT_TENANT: 'bad tenant' });
    expect(result).toEqual({
      problems: [
        'FINERACT_BASE_URL: required (set FINERACT_BASE_URL)',
        'FINERACT_TENANT: "bad tenant" is not a tenant identifier',
        'FINERACT_USERNAME: required (set FINERACT_USERNAME)',
        'FINERACT_FLOAT_ACCOUNT_ID: required (set FINERACT_FLOAT_ACCOUNT_ID)',
        'FINERACT_PAYMENT_TYPE_ID: required (set FINERACT_PAYMENT_TYPE_ID)',
      ],
    });
    expect(JSON.stringify(result)).not.toContain('fineract-password-value');
  });

  it('does not echo a user:password pasted into a user name (found by review)', () => {
    const result = readAdapterOptions('fineract', { ...ENV, FINERACT_USERNAME: 'mifos:Sup3rSecretPassw0rd' });
    // Before: 'FINERACT_USERNAME: "mifos:Sup3rSecretPassw0rd" is not a user name ...'.
    expect(result).toEqual({ problems: ['FINERACT_USERNAME: the value (not shown: it holds a colon, and may hold a credential) is not a user name without spaces or colons'] });
    expect(readAdapterOptions('fineract', { ...ENV, FINERACT_USERNAME: 'mifos admin' })).toEqual({ problems: ['FINERACT_USERNAME: "mifos admin" is not a user name without spaces or colons'] });
  });

  it('marks credentials as secret in the settings it describes', () => {
    const secrets = Object.values(ADAPTERS).flatMap((adapter) => adapter.settings.filter((setting) => setting.secret).map((setting) => setting.env));
    expect(secrets).toEqual(['REST_CBS_API_KEY', 'FINERACT_PASSWORD', 'AIRTEL_CLIENT_SECRET', 'AIRTEL_PIN_ENCRYPTED', 'MINIBANK_API_KEY']);
  });

  it('is documented: the guide names every adapter and every setting', () => {
    const guide = readFileSync(new URL('../../../docs/adding-an-institution.md', import.meta.url), 'utf8');
    const missing = ADAPTER_NAMES.flatMap((name) => [`\`${name}\``, ...ADAPTERS[name].settings.map((setting) => setting.env)]).filter((word) => !guide.includes(word));
    expect(missing).toEqual([]);
  });
});
