import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { request } from 'undici';
import { DEMO_OPERATOR_TOKEN, loadConfig, type Env } from '../../../src/config.js';
import { buildFxpApp, type FxpApp, type FxpOverrides } from '../../../src/fxp/fxp-app.js';
import { ManualClock, type HttpAnswer } from '../../support/harness.js';

/** The connector in FX provider mode on loopback, on a real SQLite file (or DATABASE_URL), with the sandbox exchange. */
export interface FxpHarness {
  readonly app: FxpApp;
  readonly clock: ManualClock;
  readonly url: string;
  /** The operations server (OPERATIONS_PORT). */
  readonly operationsUrl: string;
  readonly dataDir: string;
  call(method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, body?: unknown): Promise<HttpAnswer>;
  /** A call to the operations server, with an operator's token (the demo operator's unless given; null sends none). */
  callOperations(method: 'GET' | 'POST', path: string, body?: unknown, token?: string | null): Promise<HttpAnswer>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export async function startFxpHarness(options: { env?: Env; dataDir?: string; clock?: ManualClock; overrides?: Omit<FxpOverrides, 'clock'> } = {}): Promise<FxpHarness> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'cc-fxp-'));
  const clock = options.clock ?? new ManualClock();
  const config = loadConfig({
    CONNECTOR_MODE: 'fxp',
    DATABASE_URL: join(dataDir, 'connector.db'),
    INCOMING_PORT: '0',
    OUTGOING_PORT: '0',
    OPERATIONS_PORT: '0',
    RECOVERY_INTERVAL_MS: '3600000',
    RECOVERY_BASE_BACKOFF_MS: '1000',
    ...options.env,
  });
  const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });
  const app = await buildFxpApp(config, logger, { ...options.overrides, clock });
  const { url, operationsUrl } = await app.start();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await app.stop();
  };
  const send = async (base: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<HttpAnswer> => {
    const answer = await request(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  return {
    app,
    clock,
    url,
    operationsUrl,
    dataDir,
    call: (method, path, body) => send(url, method, path, body, {}),
    callOperations: (method, path, body, token = DEMO_OPERATOR_TOKEN) => send(operationsUrl, method, path, body, token === null ? {} : { authorization: `Bearer ${token}` }),
    stop,
    async close() {
      await stop();
      if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** POST /fxQuotes as the switch connector sends it. */
export function fxQuoteBody(terms: { amountType: 'SEND' | 'RECEIVE'; source: string; target: string; amount: string; expiration?: string; conversionId?: string }): Record<string, unknown> {
  const fixed = terms.amountType === 'SEND';
  return {
    conversionRequestId: randomUUID(),
    conversionTerms: {
      conversionId: terms.conversionId ?? randomUUID(),
      determiningTransferId: randomUUID(),
      initiatingFsp: 'payerfsp',
      counterPartyFsp: 'fxp',
      amountType: terms.amountType,
      sourceAmount: fixed ? { currency: terms.source, amount: terms.amount } : { currency: terms.source },
      targetAmount: fixed ? { currency: terms.target } : { currency: terms.target, amount: terms.amount },
      expiration: terms.expiration ?? '2026-11-23T11:00:00.000Z',
    },
  };
}

/** POST /fxTransfers for a quote's answer. */
export function fxTransferBody(answer: Record<string, unknown>, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const terms = answer['conversionTerms'] as Record<string, unknown>;
  return {
    commitRequestId: terms['conversionId'],
    determiningTransferId: terms['determiningTransferId'],
    initiatingFsp: terms['initiatingFsp'],
    counterPartyFsp: terms['counterPartyFsp'],
    sourceAmount: terms['sourceAmount'],
    targetAmount: terms['targetAmount'],
    condition: 'GRzLaTP7DJ9t4P-a_BA0WA9wzzlsugf00-Tn6kESAfM',
    expiration: terms['expiration'],
    ...overrides,
  };
}
