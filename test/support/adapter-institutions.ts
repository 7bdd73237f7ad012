import { AIRTEL_FIXTURE_DEFAULTS, startAirtelFixture } from '../institutions/airtel/airtel-fixture.js';
import type { FixtureSeed } from '../institutions/fixture-books.js';
import type { FixtureInstitution } from '../institutions/fixture-institution.js';
import { FINERACT_FIXTURE_DEFAULTS, startFineractFixture } from '../institutions/fineract/fineract-fixture.js';
import { MINIBANK_FIXTURE_API_KEY, startMiniBankFixture } from '../institutions/minibank/minibank-fixture.js';
import { startRestFixture } from '../institutions/rest/rest-fixture.js';
import type { Env } from '../../src/config.js';
import type { OutgoingFlow } from '../../src/ports/core-banking.js';
import { ManualClock, startHarness, type Harness, type HarnessOptions } from './harness.js';

/**
 * The institution adapters as end-to-end tests meet them: each one's fixture server (a real HTTP
 * server on loopback that keeps books), the settings that point CBS_ADAPTER at it, and what the
 * institution can and cannot do. startAdapterHarness runs the whole connector against a fresh
 * fixture, sharing the test's ManualClock with fixtures that read time (Airtel's token expiry).
 */

export type AdapterName = 'rest' | 'fineract' | 'airtel' | 'minibank';

export interface AdapterSubject {
  readonly adapter: AdapterName;
  /** For test titles: the adapter, and its flow when a setting chooses it. */
  readonly title: string;
  readonly outgoingFlow: OutgoingFlow;
  /** True when reserve holds float at the institution; false when it only checks the balance. */
  readonly nativeHolds: boolean;
  /** How a payee seeded as barred is refused at quote time (institutions without "barred" report it as blocked). */
  readonly barredRefusal: { readonly statusCode: string; readonly message: string };
  startFixture(seed: FixtureSeed, clock: ManualClock): Promise<FixtureInstitution>;
  /** Exactly the settings the adapter's documentation marks required, pointing at the fixture. */
  documentedEnv(fixture: FixtureInstitution): Env;
  /** Short per-call timeouts, so that tests of hanging institutions finish quickly. */
  readonly shortTimeouts: Env;
}

export const PAYEE_MSISDN = '260971000001';
export const PAYER_MSISDN = '260971000002';
export const BARRED_MSISDN = '260971000003';
export const UNKNOWN_MSISDN = '260971999999';

/** Every test starts from these books: float 1000 ZMW, total 1260. */
export const ADAPTER_SEED: FixtureSeed = {
  currency: 'ZMW',
  floatBalance: '1000',
  accounts: [
    { idType: 'MSISDN', idValue: PAYEE_MSISDN, firstName: 'Chanda', lastName: 'Mwila', balance: '50' },
    { idType: 'MSISDN', idValue: PAYER_MSISDN, firstName: 'Mutale', lastName: 'Banda', balance: '200' },
    { idType: 'MSISDN', idValue: BARRED_MSISDN, firstName: 'Bwalya', lastName: 'Phiri', balance: '10', status: 'barred' },
  ],
};

const BARRED = { statusCode: '5401', message: 'Payee account barred' } as const;
const BLOCKED = { statusCode: '5400', message: 'Payee account blocked' } as const;
const REST_API_KEY = 'e2e-rest-api-key';

function restSubject(outgoingFlow: OutgoingFlow): AdapterSubject {
  return {
    adapter: 'rest',
    title: outgoingFlow === 'bank' ? 'rest' : 'rest (mobile-operator)',
    outgoingFlow,
    nativeHolds: true,
    barredRefusal: BARRED,
    startFixture: (seed, clock) => startRestFixture({ ...seed, port: 0, apiKey: REST_API_KEY, clock }),
    documentedEnv: (fixture) => ({
      CBS_ADAPTER: 'rest',
      REST_CBS_BASE_URL: fixture.url,
      REST_CBS_API_KEY: REST_API_KEY,
      ...(outgoingFlow === 'bank' ? {} : { REST_CBS_OUTGOING_FLOW: outgoingFlow }),
    }),
    shortTimeouts: { REST_CBS_TIMEOUT_MS: '500', REST_CBS_CONNECT_TIMEOUT_MS: '500' },
  };
}

export const REST: AdapterSubject = restSubject('bank');
export const REST_MOBILE: AdapterSubject = restSubject('mobile-operator');

export const FINERACT: AdapterSubject = {
  adapter: 'fineract',
  title: 'fineract',
  outgoingFlow: 'bank',
  nativeHolds: true,
  // Fineract has no "barred": the account is a blocked sub-status.
  barredRefusal: BLOCKED,
  startFixture: (seed, clock) => startFineractFixture({ ...seed, port: 0, clock }),
  documentedEnv: (fixture) => ({
    CBS_ADAPTER: 'fineract',
    FINERACT_BASE_URL: fixture.url,
    FINERACT_USERNAME: FINERACT_FIXTURE_DEFAULTS.username,
    FINERACT_PASSWORD: FINERACT_FIXTURE_DEFAULTS.password,
    FINERACT_FLOAT_ACCOUNT_ID: FINERACT_FIXTURE_DEFAULTS.floatAccountId,
    FINERACT_PAYMENT_TYPE_ID: FINERACT_FIXTURE_DEFAULTS.paymentTypeId,
  }),
  shortTimeouts: { FINERACT_TIMEOUT_MS: '500', FINERACT_CONNECT_TIMEOUT_MS: '500' },
};

export const AIRTEL: AdapterSubject = {
  adapter: 'airtel',
  title: 'airtel',
  outgoingFlow: 'mobile-operator',
  nativeHolds: false,
  barredRefusal: BARRED,
  startFixture: (seed, clock) => startAirtelFixture({ ...seed, port: 0, clock }),
  documentedEnv: (fixture) => ({
    CBS_ADAPTER: 'airtel',
    AIRTEL_BASE_URL: fixture.url,
    AIRTEL_CLIENT_ID: AIRTEL_FIXTURE_DEFAULTS.clientId,
    AIRTEL_CLIENT_SECRET: AIRTEL_FIXTURE_DEFAULTS.clientSecret,
    AIRTEL_COUNTRY: AIRTEL_FIXTURE_DEFAULTS.country,
    AIRTEL_CURRENCY: fixture.currency,
    AIRTEL_PIN_ENCRYPTED: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
  }),
  shortTimeouts: { AIRTEL_TIMEOUT_MS: '500', AIRTEL_CONNECT_TIMEOUT_MS: '500' },
};

export const MINIBANK: AdapterSubject = {
  adapter: 'minibank',
  title: 'minibank',
  outgoingFlow: 'bank',
  nativeHolds: false,
  // MiniBank freezes accounts; it has no "barred".
  barredRefusal: BLOCKED,
  startFixture: (seed) => startMiniBankFixture({ ...seed, port: 0 }),
  documentedEnv: (fixture) => ({ CBS_ADAPTER: 'minibank', MINIBANK_BASE_URL: fixture.url, MINIBANK_API_KEY: MINIBANK_FIXTURE_API_KEY }),
  shortTimeouts: { MINIBANK_TIMEOUT_MS: '500' },
};

/** The HTTP adapters, each in the flow its institution works in. */
export const ADAPTER_SUBJECTS: readonly AdapterSubject[] = [REST, FINERACT, AIRTEL, MINIBANK];

export interface AdapterRun {
  readonly h: Harness;
  readonly fixture: FixtureInstitution;
  close(): Promise<void>;
}

export interface AdapterRunOptions {
  readonly env?: Env;
  /** False: the adapter's documented default timeouts instead of short ones (default true). */
  readonly shortTimeouts?: boolean;
  readonly harness?: Omit<HarnessOptions, 'env' | 'clock'>;
  /** Books other than ADAPTER_SEED (the identifiers the tests use must stay in it). */
  readonly seed?: FixtureSeed;
}

/** A fresh fixture holding ADAPTER_SEED (or `seed`), and the whole connector pointed at it through settings only. */
export async function startAdapterHarness(subject: AdapterSubject, options: AdapterRunOptions = {}): Promise<AdapterRun> {
  const clock = new ManualClock();
  const fixture = await subject.startFixture(options.seed ?? ADAPTER_SEED, clock);
  const timeouts = options.shortTimeouts === false ? {} : subject.shortTimeouts;
  let h: Harness;
  try {
    h = await startHarness({ ...options.harness, clock, env: { ...subject.documentedEnv(fixture), ...timeouts, ...options.env } });
  } catch (error) {
    await fixture.close();
    throw error;
  }
  return {
    h,
    fixture,
    async close() {
      try {
        await h.close();
      } finally {
        await fixture.close();
      }
    },
  };
}

export interface BookFigures {
  readonly float: string;
  /** Float minus what is held for reservations. */
  readonly available: string;
  readonly payee: string;
  readonly payer: string;
  readonly barred: string;
  /** Every balance on the books added up: 1260 while money is conserved. */
  readonly total: string;
}

/** The fixture's books as decimal strings, for exact comparisons. */
export function figures(fixture: FixtureInstitution): BookFigures {
  return {
    float: fixture.floatBalance(),
    available: fixture.floatAvailable(),
    payee: fixture.balanceOf(PAYEE_MSISDN),
    payer: fixture.balanceOf(PAYER_MSISDN),
    barred: fixture.balanceOf(BARRED_MSISDN),
    total: fixture.total(),
  };
}

/** The books as seeded. */
export const SEEDED: BookFigures = { float: '1000', available: '1000', payee: '50', payer: '200', barred: '10', total: '1260' };

/** Requests the fixture received that move money or could (anything but a read), as "METHOD path". */
export function writesTo(fixture: FixtureInstitution, from = 0): string[] {
  return fixture.requests
    .slice(from)
    .filter((request) => request.method !== 'GET' && request.path !== '/auth/oauth2/token')
    .map((request) => `${request.method} ${request.path}`);
}
