import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { request } from 'undici';
import { buildApp, type App, type AppOverrides } from '../../src/app.js';
import { SqliteDatabase } from '../../src/adapters/store/sqlite-database.js';
import { loadConfig, type Env } from '../../src/config.js';
import type { Clock } from '../../src/ports/clock.js';
import { startFakeSwitch, type FakeSwitch } from './fake-switch.js';

/**
 * The database of a second replica in this process on the same SQLite file as a harness started
 * on `dataDir`: opened without the lock the connector's own store takes (openDatabase refuses a
 * second opener), for tests that stand two replicas up in one process. Pass it as
 * `overrides.database`; the replica's stop closes it.
 */
export function replicaDatabase(dataDir: string): SqliteDatabase {
  return new SqliteDatabase(join(dataDir, 'connector.db'));
}

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private current: Date = new Date('2026-11-23T10:00:00.000Z')) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: unknown;
}

export interface Harness {
  readonly app: App;
  readonly clock: ManualClock;
  readonly fakeSwitch: FakeSwitch;
  readonly incomingUrl: string;
  readonly outgoingUrl: string;
  readonly operationsUrl: string;
  readonly dataDir: string;
  call(method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, body?: unknown): Promise<HttpAnswer>;
  /** A call to the outgoing server, with the channel's API key unless `headers` says otherwise. */
  callOutgoing(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** A call to the operations server, as operator `alice` unless `token` says otherwise (null: no token). */
  callOperations(method: 'GET' | 'POST', path: string, body?: unknown, token?: string | null): Promise<HttpAnswer>;
  /** Stops the app but keeps the database file, for restart tests. */
  stop(): Promise<void>;
  /** Stops everything and removes the database. */
  close(): Promise<void>;
}

export interface HarnessOptions {
  readonly env?: Env;
  readonly overrides?: Omit<AppOverrides, 'clock'>;
  /** Reuse a data directory (restart on the same database). */
  readonly dataDir?: string;
  readonly clock?: ManualClock;
  readonly fakeSwitch?: FakeSwitch;
}

/** The whole connector on loopback, on a real SQLite file, with the sandbox institution. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'cc-test-'));
  const clock = options.clock ?? new ManualClock();
  const fakeSwitch = options.fakeSwitch ?? (await startFakeSwitch({ now: () => clock.now() }));
  const config = loadConfig({
    DATABASE_URL: join(dataDir, 'connector.db'),
    INCOMING_PORT: '0',
    OUTGOING_PORT: '0',
    OPERATIONS_PORT: '0',
    HOST: '127.0.0.1',
    SDK_BASE_URL: fakeSwitch.url,
    SDK_TIMEOUT_MS: '2000',
    RECOVERY_INTERVAL_MS: '3600000',
    RECOVERY_BASE_BACKOFF_MS: '1000',
    SDK_TRANSFER_TIMEOUT_MS: '1500',
    OUTGOING_API_KEY: TEST_CHANNEL_API_KEY,
    CALLBACK_SECRET: TEST_CALLBACK_SECRET,
    OPERATOR_CREDENTIALS: TEST_OPERATOR_CREDENTIALS,
    ...options.env,
  });
  const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });
  const app = await buildApp(config, logger, { ...options.overrides, clock });
  const { incomingUrl, outgoingUrl, operationsUrl } = await app.start();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await app.stop();
  };
  return {
    app,
    clock,
    fakeSwitch,
    incomingUrl,
    outgoingUrl,
    operationsUrl,
    dataDir,
    call: (method, path, body) => send(incomingUrl, method, path, body, {}),
    callOutgoing: (method, path, body, headers) => send(outgoingUrl, method, path, body, headers ?? { 'x-api-key': TEST_CHANNEL_API_KEY }),
    callOperations: (method, path, body, token) =>
      send(operationsUrl, method, path, body, token === null ? {} : { authorization: `Bearer ${token ?? TEST_OPERATOR_TOKENS.alice}` }),
    stop,
    async close() {
      await stop();
      if (options.fakeSwitch === undefined) await fakeSwitch.close();
      if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The outgoing server's credentials in tests (the demo defaults are only for `npm start`). */
export const TEST_CHANNEL_API_KEY = 'test-channel-key-0123456789';
export const TEST_CALLBACK_SECRET = 'test-callback-secret-0123456789';

/** Two operators, each with a token (OPERATOR_CREDENTIALS). */
export const TEST_OPERATOR_TOKENS = { alice: 'alice-operator-token-0123456789', bob: 'bob-operator-token-0123456789ab' } as const;
export const TEST_OPERATOR_CREDENTIALS = `alice:${TEST_OPERATOR_TOKENS.alice},bob:${TEST_OPERATOR_TOKENS.bob}`;

async function send(baseUrl: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<HttpAnswer> {
  const response = await request(`${baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await response.body.text();
  const type = String(response.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) return { status: response.statusCode, body: text === '' ? undefined : text };
  return { status: response.statusCode, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}
