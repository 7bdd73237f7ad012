import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Env } from '../../src/config.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { ConnectorChild, freePort } from '../crash/support/connector-child.js';
import {
  ADAPTER_SEED,
  ADAPTER_SUBJECTS,
  FINERACT,
  startAdapterHarness,
  type AdapterName,
  type AdapterRun,
} from '../support/adapter-institutions.js';
import { runUntilExit } from '../support/adapter-process.js';
import { ManualClock } from '../support/harness.js';

/**
 * Start-up with CBS_ADAPTER=rest, fineract, airtel and minibank: with exactly the settings
 * docs/adding-an-institution.md marks required, the connector builds and its health check asks
 * the institution for real; a missing or malformed setting stops start-up with every problem
 * listed, in-process (ConfigError) and as an operator sees it (exit code 2, the list on stderr).
 */

/** The settings the guide's tables mark "required", in the order each adapter's schema reads them. */
const REQUIRED: Readonly<Record<AdapterName, readonly string[]>> = {
  rest: ['REST_CBS_BASE_URL'],
  fineract: ['FINERACT_BASE_URL', 'FINERACT_USERNAME', 'FINERACT_PASSWORD', 'FINERACT_FLOAT_ACCOUNT_ID', 'FINERACT_PAYMENT_TYPE_ID'],
  airtel: ['AIRTEL_BASE_URL', 'AIRTEL_CLIENT_ID', 'AIRTEL_CLIENT_SECRET', 'AIRTEL_COUNTRY', 'AIRTEL_CURRENCY', 'AIRTEL_PIN_ENCRYPTED'],
  minibank: ['MINIBANK_BASE_URL', 'MINIBANK_API_KEY'],
};

const CAPABILITIES: Readonly<Record<AdapterName, unknown>> = {
  // The documented settings' default timeouts: a collect may take REST 3 + 10 s, Airtel 8 x (5 + 30 s).
  rest: { outgoingFlow: 'bank', nativeHolds: true, collectTakesUpToMs: 13_000 },
  fineract: { outgoingFlow: 'bank', nativeHolds: true },
  airtel: { outgoingFlow: 'mobile-operator', nativeHolds: false, collectTakesUpToMs: 280_000 },
  minibank: { outgoingFlow: 'bank', nativeHolds: false },
};

const HEALTHY = { status: 200, body: { status: 'ok', checks: { store: 'ok', institution: 'ok' } } };
/** The error contract's body only; the message says which check failed and why. */
const INSTITUTION_FAILING = { status: 503, body: { statusCode: '2003', message: 'unhealthy: institution unavailable' } };
const INSTITUTION_DOWN = { status: 503, body: { statusCode: '2003', message: 'unhealthy: institution unreachable' } };

function configErrorOf(env: Env): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('loadConfig accepted the settings');
}

function problemsOf(env: Env): readonly string[] {
  return configErrorOf(env).problems;
}

let run: AdapterRun | undefined;
afterEach(async () => {
  const current = run;
  run = undefined;
  await current?.close();
});

describe.each(ADAPTER_SUBJECTS)('CBS_ADAPTER=$title at start-up', (subject) => {
  it('starts with its documented settings; /health asks the institution: 200, then 503 while it fails or is down', async () => {
    run = await startAdapterHarness(subject, { shortTimeouts: false });
    const { h, fixture } = run;
    expect(h.app.coreBanking.name).toBe(subject.adapter);
    expect(h.app.coreBanking.capabilities).toEqual(CAPABILITIES[subject.adapter]);
    expect(h.app.sandbox).toBeUndefined();
    const health = { incoming: () => h.call('GET', '/health'), outgoing: () => h.callOutgoing('GET', '/health') };
    expect(await health.incoming()).toEqual(HEALTHY);
    expect(await health.outgoing()).toEqual(HEALTHY);

    fixture.inject('server-error');
    expect(await health.incoming()).toEqual(INSTITUTION_FAILING);
    expect(await health.incoming()).toEqual(HEALTHY);

    await fixture.close();
    expect(await health.incoming()).toEqual(INSTITUTION_DOWN);
    expect(await health.outgoing()).toEqual(INSTITUTION_DOWN);
  });

  it('needs every documented setting: each one left out is named, all left out are all named', async () => {
    const clock = new ManualClock();
    const fixture = await subject.startFixture(ADAPTER_SEED, clock);
    try {
      const documented = subject.documentedEnv(fixture);
      expect(() => loadConfig(documented)).not.toThrow();
      for (const name of REQUIRED[subject.adapter]) {
        const { [name]: _left, ...without } = documented;
        expect({ name, problems: problemsOf(without) }).toEqual({ name, problems: [`${name}: required (set ${name})`] });
      }
      const problems = problemsOf({ CBS_ADAPTER: subject.adapter, X_CURRENCY: 'ZMK', LEI: 'not-a-lei' });
      expect(problems).toEqual([
        'X_CURRENCY: "ZMK" is not an ISO 4217 code',
        'LEI: "not-a-lei" is not a valid ISO 17442 Legal Entity Identifier',
        ...REQUIRED[subject.adapter].map((name) => `${name}: required (set ${name})`),
      ]);
    } finally {
      await fixture.close();
    }
  });
});

describe('the built connector as an operator runs it', () => {
  let build: ConnectorBuild;
  let workDir: string;
  beforeAll(async () => {
    build = await buildConnector();
    workDir = mkdtempSync(join(tmpdir(), 'cc-adapters-'));
  }, 120_000);
  afterAll(() => {
    build.remove();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('CBS_ADAPTER=airtel with settings missing and malformed: exit code 2, every problem on stderr, no secret shown', async () => {
    const secret = 'plain-pin-1234!';
    const outcome = await runUntilExit(build.mainPath, workDir, {
      DATABASE_URL: join(workDir, 'never-opened.db'),
      CBS_ADAPTER: 'airtel',
      AIRTEL_BASE_URL: 'http://127.0.0.1:9',
      AIRTEL_COUNTRY: 'Zambia',
      AIRTEL_PIN_ENCRYPTED: secret,
    });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        'invalid configuration:',
        '  - AIRTEL_CLIENT_ID: required (set AIRTEL_CLIENT_ID)',
        '  - AIRTEL_CLIENT_SECRET: required (set AIRTEL_CLIENT_SECRET)',
        '  - AIRTEL_COUNTRY: "Zambia" is not an ISO 3166 alpha-2 code',
        '  - AIRTEL_CURRENCY: required (set AIRTEL_CURRENCY)',
        "  - AIRTEL_PIN_ENCRYPTED: is not base64 text (encrypt the PIN with Airtel's public key first) (value not shown)",
        '',
      ].join('\n'),
    });
  });

  it('a PostgreSQL DATABASE_URL that does not parse: exit code 2 with the other problems, none of the URL shown', async () => {
    const outcome = await runUntilExit(build.mainPath, workDir, { DATABASE_URL: 'postgres://cc:s3cret@db host:5432/cc', DATABASE_POOL_MAX: '0' });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        'invalid configuration:',
        '  - DATABASE_POOL_MAX: "0" is not a whole number from 1 to 1000',
        '  - DATABASE_URL: the postgres:// URL does not parse (percent-encode spaces and reserved characters; the value is not shown)',
        '',
      ].join('\n'),
    });
  });

  it('a second connector on the same SQLite file is refused at start (exit 1, naming the file and its lock), and starts once the first is killed', async () => {
    const database = join(workDir, 'one-process.db');
    const first = await ConnectorChild.start({ mainPath: build.mainPath, cwd: workDir, incomingPort: await freePort(), env: { DATABASE_URL: database, OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'warn' } });
    try {
      const second = await runUntilExit(build.mainPath, workDir, { DATABASE_URL: database, INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'warn' });
      expect(second).toEqual({
        code: 1,
        stdout: '',
        stderr: `core connector failed to start: the SQLite file ${database} is in use by another connector process (it holds ${database}.lock): one process per SQLite file; stop the other, or run several replicas on PostgreSQL\n`,
      });
      // Killed outright, the first leaves no lock behind: the operating system drops it.
      expect(await first.kill()).toBe(true);
      const third = await ConnectorChild.start({ mainPath: build.mainPath, cwd: workDir, incomingPort: await freePort(), env: { DATABASE_URL: database, OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'warn' } });
      await third.stop();
    } finally {
      await first.kill();
    }
  });

  it('SANDBOX_ACCOUNTS_FILE that cannot be read: the start stops, naming the setting and the file', async () => {
    const missing = join(workDir, 'no-such-dir', 'accounts.json');
    const outcome = await runUntilExit(build.mainPath, workDir, { DATABASE_URL: join(workDir, 'accounts-missing.db'), SANDBOX_ACCOUNTS_FILE: missing, INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'warn' });
    expect(outcome).toEqual({
      code: 1,
      stdout: '',
      stderr: `core connector failed to start: SANDBOX_ACCOUNTS_FILE: cannot read "${missing}" (ENOENT: no such file or directory, open '${missing}')\n`,
    });
  });

  it('CBS_ADAPTER=fineract with its documented settings starts, answers /health against the fixture, and stops cleanly', async () => {
    const fixture = await FINERACT.startFixture(ADAPTER_SEED, new ManualClock());
    let child: ConnectorChild | undefined;
    try {
      const incomingPort = await freePort();
      child = await ConnectorChild.start({
        mainPath: build.mainPath,
        cwd: workDir,
        incomingPort,
        env: { ...FINERACT.documentedEnv(fixture), DATABASE_URL: join(workDir, 'fineract.db'), OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'warn' },
      });
      const health = await request(`${child.url}/health`, { headersTimeout: 5000, bodyTimeout: 5000 });
      expect({ status: health.statusCode, body: await health.body.json() }).toEqual(HEALTHY);
      await fixture.close();
      const down = await request(`${child.url}/health`, { headersTimeout: 5000, bodyTimeout: 5000 });
      expect({ status: down.statusCode, body: await down.body.json() }).toEqual(INSTITUTION_DOWN);
      await child.stop();
    } finally {
      await child?.kill();
      await fixture.close();
    }
  });
});
