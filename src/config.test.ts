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
    expect(config.store).toEqual({ kind: 'sqlite', location: './data/connector.db', poolMax: 10, preparedStatements: true });
    expect(config.apiType).toBe('fspiop');
    expect(config.coreBanking.adapter).toBe('sandbox');
    expect(config.sdkBaseUrl).toBe('http://localhost:4001');
    // Above the switch connector's timeouts (SDK_TIMEOUT_MS, SDK_TRANSFER_TIMEOUT_MS): a recovery
    // step that waits on one does not outlast its lease.
    expect(config.recovery.leaseMs).toBe(120_000);
    expect(config.reconciliationMaxRecords).toBe(100_000);
    expect(config.metricsDatabaseIntervalMs).toBe(5000);
    expect(loadConfig({ METRICS_DATABASE_INTERVAL_MS: '60000' }).metricsDatabaseIntervalMs).toBe(60_000);
    expect(() => loadConfig({ METRICS_DATABASE_INTERVAL_MS: '0' })).toThrow('METRICS_DATABASE_INTERVAL_MS: "0" is not a whole number from 100 to 600000');
    expect(config.recovery.leaseMs).toBeGreaterThan(Math.max(config.sdkTimeoutMs, config.outgoing.transferTimeoutMs));
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
    expect(config.store).toEqual({ kind: 'postgres', location: 'postgres://u:p@db:5432/cc', poolMax: 10, preparedStatements: true, statementGroups: true });
    expect(config.iso.requiredPayerKeys).toEqual(['CdtTrfTxInf.Dbtr.Nm', 'CdtTrfTxInf.DbtrAcct.Id.Othr.Id']);
  });

  it('runs PostgreSQL statements unprepared when DATABASE_PREPARED_STATEMENTS is off, and refuses any other word', () => {
    const off = loadConfig({ DATABASE_URL: 'postgres://db/cc', DATABASE_PREPARED_STATEMENTS: 'off' });
    expect(off.store).toEqual({ kind: 'postgres', location: 'postgres://db/cc', poolMax: 10, preparedStatements: false, statementGroups: true });
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'no' })).toThrow(
      'DATABASE_PREPARED_STATEMENTS: "no" is not one of on, off',
    );
  });

  it('sends PostgreSQL statements one by one when DATABASE_STATEMENT_GROUPS is off, and refuses any other word', () => {
    const off = loadConfig({ DATABASE_URL: 'postgres://db/cc', DATABASE_STATEMENT_GROUPS: 'off' });
    expect(off.store).toEqual({ kind: 'postgres', location: 'postgres://db/cc', poolMax: 10, preparedStatements: true, statementGroups: false });
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/cc', DATABASE_STATEMENT_GROUPS: 'yes' })).toThrow(
      'DATABASE_STATEMENT_GROUPS: "yes" is not one of on, off',
    );
  });

  it('refuses a PostgreSQL URL that does not parse, without showing any of it', () => {
    const refusal = 'DATABASE_URL: the postgres:// URL does not parse (percent-encode spaces and reserved characters; the value is not shown)';
    for (const url of ['postgres://cc:s3cret@db host:5432/cc', 'postgres://a b', 'postgres://cc:p@ss@db host/cc', 'postgres://cc:s3cret@[db/cc?password=s3cret']) {
      expect(() => loadConfig({ DATABASE_URL: url })).toThrow(refusal);
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://cc:my%20secret@db:5432/cc' }).store.location).toBe('postgres://cc:my%20secret@db:5432/cc');
    expect(loadConfig({ DATABASE_URL: 'postgres:///cc?host=/var/run/postgresql' }).store.location).toBe('postgres:///cc?host=/var/run/postgresql');
    expect(loadConfig({ DATABASE_URL: 'postgres://cc@[::1]:5432/cc?sslmode=require' }).store.location).toBe('postgres://cc@[::1]:5432/cc?sslmode=require');
  });

  it('refuses a DATABASE_URL of another scheme, showing only the scheme (found by review)', () => {
    // Before, a scheme with a + (or without //) was taken for a SQLite path: a new empty store,
    // its password in the directory names and the log.
    for (const [url, scheme] of [
      ['mysql+pymysql://app:hunter2@db.example/app', 'mysql+pymysql'],
      ['jdbc:postgresql://db.example/app?password=hunter2', 'jdbc'],
      ['mysql://db.example/app?password=hunter2', 'mysql'],
      ['mysql://u:p@ssw0rd-secret@db.example/app', 'mysql'],
      ['postgres:db.example/app', 'postgres'],
    ]) {
      let problems: readonly string[] = [];
      try {
        loadConfig({ DATABASE_URL: url });
      } catch (error) {
        if (error instanceof ConfigError) problems = error.problems;
      }
      expect(problems, url).toEqual([`DATABASE_URL: unsupported scheme "${scheme}" (use a file path or postgres://; the value is not shown)`]);
    }
    expect(loadConfig({ DATABASE_URL: 'sqlite:./data/x.db' }).store).toMatchObject({ kind: 'sqlite', location: './data/x.db' });
    expect(loadConfig({ DATABASE_URL: 'file:///var/lib/cc/x.db' }).store).toMatchObject({ kind: 'sqlite', location: '/var/lib/cc/x.db' });
    expect(loadConfig({ DATABASE_URL: '/var/lib/cc/x.db' }).store).toMatchObject({ kind: 'sqlite', location: '/var/lib/cc/x.db' });
  });

  it('does not echo a header written with its secret into CALLBACK_SECRET_HEADER (found by review)', () => {
    expect(() => loadConfig({ CALLBACK_SECRET_HEADER: 'x-callback-secret: prov1der-shared-secret-xyz' })).toThrow(
      'CALLBACK_SECRET_HEADER: the value (not shown: it holds a colon, and may hold the secret) is not a header name',
    );
    expect(() => loadConfig({ CALLBACK_SECRET_HEADER: 'x callback' })).toThrow('CALLBACK_SECRET_HEADER: "x callback" is not a header name');
  });

  it('derives the recovery lease from the switch timeouts, and refuses one set shorter (found by review)', () => {
    expect(loadConfig({ SDK_TRANSFER_TIMEOUT_MS: '300000' }).recovery.leaseMs).toBe(320_000);
    expect(loadConfig({ SDK_TIMEOUT_MS: '110000' }).recovery.leaseMs).toBe(130_000);
    expect(loadConfig({ SDK_TRANSFER_TIMEOUT_MS: '300000', RECOVERY_LEASE_MS: '400000' }).recovery.leaseMs).toBe(400_000);
    // Before, a lease shorter than the switch's time was accepted: another replica could take an item still being worked.
    expect(() => loadConfig({ SDK_TRANSFER_TIMEOUT_MS: '600000', RECOVERY_LEASE_MS: '100' })).toThrow(
      'RECOVERY_LEASE_MS: 100 must be above SDK_TIMEOUT_MS and SDK_TRANSFER_TIMEOUT_MS (600000), so that no step outlasts its lease',
    );
    expect(() => loadConfig({ RECOVERY_LEASE_MS: '100000' })).toThrow('RECOVERY_LEASE_MS: 100000 must be above SDK_TIMEOUT_MS and SDK_TRANSFER_TIMEOUT_MS (100000)');
  });

  it('reads the stop deadline and drain, and refuses a drain at or above the deadline', () => {
    expect(loadConfig({}).shutdown).toEqual({ timeoutMs: 25_000, drainMs: 0 });
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '40000', SHUTDOWN_DRAIN_MS: '5000' }).shutdown).toEqual({ timeoutMs: 40_000, drainMs: 5000 });
    expect(() => loadConfig({ SHUTDOWN_DRAIN_MS: '25000' })).toThrow('SHUTDOWN_DRAIN_MS: 25000 must be below SHUTDOWN_TIMEOUT_MS (25000), which counts the drain');
    expect(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: '50' })).toThrow('SHUTDOWN_TIMEOUT_MS: "50" is not a whole number from 100 to 3600000');
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

  it('never echoes a credential written into SDK_BASE_URL, and refuses one', () => {
    const problemsOf = (value: string): readonly string[] => {
      try {
        loadConfig({ SDK_BASE_URL: value });
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
      }
      return [];
    };
    expect(problemsOf('ftp://sdk:s3cret-pass@sdk.example:4001')).toEqual(['SDK_BASE_URL: is not an http(s) URL (scheme "ftp:"; the value is not shown)']);
    expect(problemsOf('https://sdk:s3cret-pass@sdk.example:4001/')).toEqual(['SDK_BASE_URL: must not carry credentials (user:password@ in "https://sdk.example:4001/")']);
    expect(problemsOf('https://sdk:s3cret-pass@sdk.example:4001/?token=s3cret-too#s3cret')).toEqual(['SDK_BASE_URL: must not carry credentials (user:password@ in "https://sdk.example:4001/")']);
    expect(problemsOf('sdk:s3cret-pass@sdk.example 4001')).toEqual(['SDK_BASE_URL: is not an http(s) URL (scheme "sdk:"; the value is not shown)']);
    expect(problemsOf('http://[sdk:s3cret-pass')).toEqual(['SDK_BASE_URL: is not an http(s) URL (the value is not shown: it may carry a credential)']);
    expect(loadConfig({ SDK_BASE_URL: 'https://sdk.example:4001/' }).sdkBaseUrl).toBe('https://sdk.example:4001');
  });

  it('reads list settings: unset gives the default, set but empty gives no items (a policy turned off)', () => {
    expect(loadConfig({}).iso.requiredPayerKeys).toEqual(['CdtTrfTxInf.Dbtr.Nm']);
    expect(loadConfig({ ISO_REQUIRED_PAYER_KEYS: '' }).iso.requiredPayerKeys).toEqual([]);
    expect(loadConfig({ ISO_REQUIRED_PAYER_KEYS: '  ' }).iso.requiredPayerKeys).toEqual([]);
    expect(loadConfig({ ISO_ANY_OF_PAYER_KEYS: '' }).iso.anyOfPayerKeys).toEqual([]);
    expect(loadConfig({ ISO_ANY_OF_PAYER_KEYS: ' a , ,b ' }).iso.anyOfPayerKeys).toEqual(['a', 'b']);
  });

  it('shares no personal data beyond the name by default; PARTY_SHARE names what to add', () => {
    expect(loadConfig({}).partyShare).toEqual([]);
    expect(loadConfig({ PARTY_SHARE: 'kycInformation, dateOfBirth,kycInformation' }).partyShare).toEqual(['kycInformation', 'dateOfBirth']);
    expect(() => loadConfig({ PARTY_SHARE: 'dateOfBirth,nationalId' })).toThrow('PARTY_SHARE: "nationalId" is not one of dateOfBirth, kycInformation');
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

describe('fault injection settings', () => {
  it('are refused: fault injection is test code, not part of the connector', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({ CBS_FAULT_RATE: '1', CBS_FAULT_SEED: '42', CBS_FAULT_KINDS: '' });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'CBS_FAULT_RATE: fault injection is test-only and not part of the connector; unset it',
      'CBS_FAULT_SEED: fault injection is test-only and not part of the connector; unset it',
    ]);
  });
});

describe('outgoing settings', () => {
  it('default to the documented demo credentials, flagged as such, and a 100 s transfer timeout', () => {
    expect(loadConfig({}).outgoing).toEqual({
      channelApiKey: 'demo-channel-key-change-me',
      callbackSecret: 'demo-callback-secret-change-me',
      callbackSecretHeader: 'x-callback-secret',
      callbackAuth: 'secret',
      demoCredentials: true,
      transferTimeoutMs: 100_000,
      callbackWaitMs: 300_000,
      birthKeys: 'spec',
      sandboxFlow: 'bank',
    });
  });

  it('reads every outgoing setting', () => {
    const outgoing = loadConfig({
      OUTGOING_API_KEY: 'channel-key-0123456789',
      CALLBACK_SECRET: 'callback-secret-0123456789',
      CALLBACK_SECRET_HEADER: 'X-Provider-Signature',
      CALLBACK_AUTH: 'confirm',
      SDK_TRANSFER_TIMEOUT_MS: '120000',
      CALLBACK_WAIT_MS: '90000',
      OUTGOING_BIRTH_KEYS: 'both',
      SANDBOX_OUTGOING_FLOW: 'mobile-operator',
    }).outgoing;
    expect(outgoing).toEqual({
      channelApiKey: 'channel-key-0123456789',
      callbackSecret: 'callback-secret-0123456789',
      callbackSecretHeader: 'x-provider-signature',
      callbackAuth: 'confirm',
      demoCredentials: false,
      transferTimeoutMs: 120_000,
      callbackWaitMs: 90_000,
      birthKeys: 'both',
      sandboxFlow: 'mobile-operator',
    });
  });

  it('confirm callbacks without the secret with the operator by default when the institution is Airtel', () => {
    const airtel = { CBS_ADAPTER: 'airtel', AIRTEL_BASE_URL: 'http://127.0.0.1:9', AIRTEL_CLIENT_ID: 'client', AIRTEL_CLIENT_SECRET: 'client-secret', AIRTEL_COUNTRY: 'ZM', AIRTEL_CURRENCY: 'ZMW', AIRTEL_PIN_ENCRYPTED: 'ZW5jcnlwdGVkLXBpbg==' };
    expect(loadConfig(airtel).outgoing.callbackAuth).toBe('confirm');
    expect(loadConfig({ ...airtel, CALLBACK_AUTH: 'secret' }).outgoing.callbackAuth).toBe('secret');
  });

  it('refuse Airtel wallets in another currency than the scheme\'s', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({ CBS_ADAPTER: 'airtel', AIRTEL_BASE_URL: 'http://127.0.0.1:9', AIRTEL_CLIENT_ID: 'client', AIRTEL_CLIENT_SECRET: 'client-secret', AIRTEL_COUNTRY: 'ZM', AIRTEL_CURRENCY: 'KES', AIRTEL_PIN_ENCRYPTED: 'ZW5jcnlwdGVkLXBpbg==', X_CURRENCY: 'ZMW' });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual(['AIRTEL_CURRENCY: "KES" differs from X_CURRENCY "ZMW"; the wallets must hold the scheme currency']);
  });

  it('list every problem with them, without printing a secret', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({
        OUTGOING_API_KEY: 'short',
        CALLBACK_SECRET: 'short',
        CALLBACK_SECRET_HEADER: 'x-api-key',
        CALLBACK_AUTH: 'trust',
        SDK_TRANSFER_TIMEOUT_MS: '10',
        OUTGOING_BIRTH_KEYS: 'all',
        SANDBOX_OUTGOING_FLOW: 'wallet',
      });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'OUTGOING_API_KEY: must be at least 16 characters',
      'CALLBACK_SECRET: must be at least 16 characters',
      'OUTGOING_API_KEY and CALLBACK_SECRET: must differ',
      "CALLBACK_SECRET_HEADER: must differ from the channel's x-api-key",
      'CALLBACK_AUTH: "trust" is not one of secret, confirm',
      'SDK_TRANSFER_TIMEOUT_MS: "10" is not a whole number from 1000 to 600000',
      'OUTGOING_BIRTH_KEYS: "all" is not one of spec, iso-exact, both',
      'SANDBOX_OUTGOING_FLOW: "wallet" is not one of bank, mobile-operator',
    ]);
  });
});

describe('operations settings', () => {
  it('default to the documented demo operator on port 3005, flagged as such', () => {
    expect(loadConfig({}).operations).toEqual({
      port: 3005,
      listen: { host: '127.0.0.1', tls: undefined },
      operators: [{ name: 'demo-operator', token: 'demo-operator-token-change-me' }],
      demoOperator: true,
      consoleDir: undefined,
    });
  });

  it('read operators as name:token pairs, and list every problem with them without printing a token', () => {
    expect(loadConfig({ OPERATOR_CREDENTIALS: 'alice:alice-token-0123456789abcdef, bob:bob-token-0123456789abcdefgh' }).operations.operators).toEqual([
      { name: 'alice', token: 'alice-token-0123456789abcdef' },
      { name: 'bob', token: 'bob-token-0123456789abcdefgh' },
    ]);
    let problems: readonly string[] = [];
    try {
      loadConfig({ OPERATOR_CREDENTIALS: 'alice:short,bob:same-token-0123456789abcdef,carol:same-token-0123456789abcdef,bob:other-token-0123456789abcdef,no name:x', OPERATIONS_PORT: '3004' });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'OPERATOR_CREDENTIALS: entry 1: the token must be at least 24 characters without spaces or commas',
      'OPERATOR_CREDENTIALS: entry 3 (carol) shares the token of entry 2',
      'OPERATOR_CREDENTIALS: entry 4 (bob) repeats the name of entry 2',
      'OPERATOR_CREDENTIALS: entry 5: the name is not an operator name (letters, digits, . _ -, at most 64)',
      'INCOMING_PORT, OUTGOING_PORT and OPERATIONS_PORT: must differ',
    ]);
    expect(problems.join(' ')).not.toContain('token-0123456789');
  });

  it('name a malformed entry by its position, never echoing what may be a token pasted whole or in the name\'s place', () => {
    const secret = 'Zq8vN3kR7tY2wP5mL9xC4bH6jD1fG0sA';
    let problems: readonly string[] = [];
    try {
      loadConfig({ OPERATOR_CREDENTIALS: `${secret}, alice=${secret},,${secret}:short,${secret}x:also short,ok:ok-token-0123456789abcdefgh` });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'OPERATOR_CREDENTIALS: entry 1 is not name:token (no colon)',
      'OPERATOR_CREDENTIALS: entry 2 is not name:token (no colon)',
      'OPERATOR_CREDENTIALS: entry 4: the token must be at least 24 characters without spaces or commas',
      'OPERATOR_CREDENTIALS: entry 5: the token must be at least 24 characters without spaces or commas',
    ]);
    expect(problems.join(' ')).not.toContain('Zq8vN3kR7tY2');
  });
});
