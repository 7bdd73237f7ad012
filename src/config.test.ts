import { describe, expect, it } from 'vitest';
import { ConfigError, isValidLei, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('has demo defaults so that no configuration is needed', () => {
    const config = loadConfig({});
    expect(config.supportedIdType).toBe('MSISDN');
    expect(config.currency).toBe('ZMW');
    expect(config.sendingServiceCharge).toBe('1');
    expect(config.expirationMs).toBe(3_600_000);
    expect(config.incomingPort).toBe(3003);
    expect(config.outgoingPort).toBe(3004);
    expect(config.store).toEqual({ kind: 'sqlite', location: './data/connector.db', poolMax: 10 });
    expect(config.apiType).toBe('fspiop');
    expect(config.cbsAdapter).toBe('sandbox');
    expect(config.sdkBaseUrl).toBe('http://localhost:4001');
  });

  it('reads every setting', () => {
    const config = loadConfig({
      SUPPORTED_ID_TYPE: 'ACCOUNT_ID',
      X_CURRENCY: 'USD',
      SENDING_SERVICE_CHARGE: '2.75',
      EXPIRATION_DURATION: '0.5',
      SDK_BASE_URL: 'http://sdk:4001/',
      INCOMING_PORT: '4003',
      OUTGOING_PORT: '4004',
      DATABASE_URL: 'postgres://u:p@db:5432/cc',
      API_TYPE: 'iso20022',
      ISO_REQUIRED_PAYER_KEYS: 'CdtTrfTxInf.Dbtr.Nm, CdtTrfTxInf.DbtrAcct.Id.Othr.Id',
    });
    expect(config.supportedIdType).toBe('ACCOUNT_ID');
    expect(config.expirationMs).toBe(1_800_000);
    expect(config.sdkBaseUrl).toBe('http://sdk:4001');
    expect(config.store).toEqual({ kind: 'postgres', location: 'postgres://u:p@db:5432/cc', poolMax: 10 });
    expect(config.iso.requiredPayerKeys).toEqual(['CdtTrfTxInf.Dbtr.Nm', 'CdtTrfTxInf.DbtrAcct.Id.Othr.Id']);
  });

  it('lists every problem at once', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({
        SUPPORTED_ID_TYPE: 'PHONE',
        X_CURRENCY: 'XYZ',
        SENDING_SERVICE_CHARGE: '-1',
        EXPIRATION_DURATION: 'soon',
        SDK_BASE_URL: 'ftp://x',
        LEI: 'NOTALEI',
        INCOMING_PORT: '70000',
        API_TYPE: 'soap',
      });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems.map((problem) => problem.split(':')[0])).toEqual([
      'SUPPORTED_ID_TYPE',
      'X_CURRENCY',
      'SENDING_SERVICE_CHARGE',
      'EXPIRATION_DURATION',
      'SDK_BASE_URL',
      'LEI',
      'API_TYPE',
      'INCOMING_PORT',
    ]);
  });

  it('refuses a fee above 100% and equal ports', () => {
    expect(() => loadConfig({ SENDING_SERVICE_CHARGE: '100.5' })).toThrow('SENDING_SERVICE_CHARGE: must be a percentage from 0 to 100');
    expect(() => loadConfig({ INCOMING_PORT: '5000', OUTGOING_PORT: '5000' })).toThrow('must differ');
  });
});

describe('isValidLei', () => {
  it('checks the ISO 17442 check digits', () => {
    expect(isValidLei('9845000DEMOCC0NNEC85')).toBe(true);
    expect(isValidLei('9845000DEMOCC0NNEC86')).toBe(false);
    expect(isValidLei('9845000democc0nnec85')).toBe(false);
  });
});
