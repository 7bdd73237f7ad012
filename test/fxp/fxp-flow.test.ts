import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';
import { AuditTrail } from '../../src/adapters/store/audit-trail.js';

/**
 * FX provider mode end to end: the whole connector (CONNECTOR_MODE=fxp) on loopback with the
 * sandbox exchange, on a real SQLite file and on a real PostgreSQL database, driven with the
 * switch connector's FXP backend calls; the exchange's books are read back after each step.
 */

let h: FxpHarness | undefined;
let database: TestDatabase | undefined;
let storeKind: 'sqlite' | 'postgres' = 'sqlite';
afterEach(async () => {
  await h?.close();
  h = undefined;
  await database?.drop();
  database = undefined;
});

async function start(env: Record<string, string> = {}): Promise<FxpHarness> {
  if (storeKind === 'postgres') database = await createTestDatabase();
  h = await startFxpHarness({ env: { ...env, ...(database === undefined ? {} : { DATABASE_URL: database.url }) } });
  return h;
}

async function balances(harness: FxpHarness): Promise<Record<string, string>> {
  const rows = await harness.app.ledger.balances();
  return Object.fromEntries(rows.filter((row) => row.balance !== '0' || row.held !== '0').map((row) => [row.accountId, row.held === '0' ? row.balance : `${row.balance} (held ${row.held})`]));
}

describe.each(['sqlite', 'postgres'] as const)('on %s', (kind) => {
beforeEach(() => {
  storeKind = kind;
});

describe('FX provider mode: quote, reserve, commit', () => {
  it('SEND 100 ZMW to MWK: complete terms, RESERVED, then COMMITTED moves exactly the quoted amounts', async () => {
    const fx = await start();
    const quote = fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' });
    const quoted = await fx.call('POST', '/fxQuotes', quote);
    const terms = quote['conversionTerms'] as Record<string, unknown>;
    // Demo pair: mid 65, spread 0.5% -> rate 64.675; 100 ZMW -> 6467.5 MWK; charge 10 + 0.5% (32.3375 -> 32.34) = 42.34 MWK
    expect(quoted).toEqual({
      status: 200,
      body: {
        homeTransactionId: terms['conversionId'],
        conversionTerms: {
          ...terms,
          sourceAmount: { currency: 'ZMW', amount: '100' },
          targetAmount: { currency: 'MWK', amount: '6425.16' },
          expiration: '2026-11-23T10:01:00.000Z',
          charges: [{ chargeType: 'CONVERSION_FEE', sourceAmount: { currency: 'ZMW', amount: '0.66' }, targetAmount: { currency: 'MWK', amount: '42.34' } }],
        },
      },
    });
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: terms['conversionId'] } });
    expect(await balances(fx)).toMatchObject({ 'liquidity-mwk': '50000000 (held 6425.16)', 'liquidity-zmw': '1000000' });

    expect(await fx.call('PUT', `/fxTransfers/${String(terms['conversionId'])}`, { conversionState: 'COMMITTED', completedTimestamp: '2026-11-23T10:00:30.000Z' })).toEqual({ status: 200, body: {} });
    expect(await balances(fx)).toEqual({
      'clearing-mwk': '6425.16',
      'clearing-zmw': '-100',
      'liquidity-mwk': '49993574.84',
      'liquidity-zmw': '1000100',
      'liquidity-usd': '250000',
      'liquidity-kes': '5000000',
      'liquidity-ugx': '500000000',
      'liquidity-kwd': '50000',
    });
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
    // The audit trail has the conversion's every change, in the transaction of each.
    const history = await new AuditTrail(fx.app.database).history('fx_conversion', String(transfer['commitRequestId']));
    expect(history.map((event) => [event.event, event.fromState, event.toState, event.cause, event.institutionReference])).toEqual([
      ['created', null, 'RESERVING', 'request', transfer['commitRequestId']],
      ['transition', 'RESERVING', 'RESERVED', 'request', transfer['commitRequestId']],
      ['transition', 'RESERVED', 'COMMITTING', 'request', transfer['commitRequestId']],
      ['transition', 'COMMITTING', 'COMMITTED', 'request', transfer['commitRequestId']],
    ]);
  });

  it('RECEIVE 10000 UGX from KES (no minor unit in UGX): the source is rounded up, the charge added', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'RECEIVE', source: 'KES', target: 'UGX', amount: '10000' }));
    expect(quoted.status).toBe(200);
    const terms = (quoted.body as Record<string, Record<string, unknown>>)['conversionTerms'] ?? {};
    // rate 28.62 x 0.994 = 28.44828; 10000 / 28.44828 = 351.5152... -> 351.52 KES; charge 500 UGX -> 17.5757... -> 17.58 KES
    expect(terms['sourceAmount']).toEqual({ currency: 'KES', amount: '369.1' });
    expect(terms['targetAmount']).toEqual({ currency: 'UGX', amount: '10000' });
    expect(terms['charges']).toEqual([{ chargeType: 'CONVERSION_FEE', sourceAmount: { currency: 'KES', amount: '17.58' }, targetAmount: { currency: 'UGX', amount: '500' } }]);
  });
});

/** Quotes and reserves a SEND of `amount` ZMW to MWK; answers the commitRequestId and the transfer body. */
async function reserved(fx: FxpHarness, amount = '100'): Promise<{ id: string; transfer: Record<string, unknown> }> {
  const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount }));
  expect(quoted.status).toBe(200);
  const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
  expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(200);
  return { id: String(transfer['commitRequestId']), transfer };
}

const LIQUIDITY_AT_START = {
  'liquidity-kes': '5000000',
  'liquidity-kwd': '50000',
  'liquidity-mwk': '50000000',
  'liquidity-ugx': '500000000',
  'liquidity-usd': '250000',
  'liquidity-zmw': '1000000',
};

describe('FX provider mode: idempotency', () => {
  it('4 identical quote POSTs answer the same terms; the same id with another body is 3106', async () => {
    const fx = await start();
    const quote = fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '250.5' });
    const answers = await Promise.all([1, 2, 3, 4].map(() => fx.call('POST', '/fxQuotes', quote)));
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect(answers[0]?.status).toBe(200);
    const changed = { ...quote, conversionTerms: { ...(quote['conversionTerms'] as object), sourceAmount: { currency: 'ZMW', amount: '250.6' } } };
    expect(await fx.call('POST', '/fxQuotes', changed)).toEqual({ status: 409, body: { statusCode: '3106', message: 'Modified request: this conversionRequestId was quoted with another body' } });
    const reusedConversion = { ...quote, conversionRequestId: '01JDV6M3AZ6XK1B0SPZ8Q4W2RA' };
    expect((await fx.call('POST', '/fxQuotes', reusedConversion)).body).toEqual({ statusCode: '3106', message: `Modified request: conversionId ${String((quote['conversionTerms'] as Record<string, unknown>)['conversionId'])} was quoted under another conversionRequestId` });
  });

  it('4 identical fxTransfers at once hold once; 6 identical commits move money once; a later abort is 409', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    const posts = await Promise.all([1, 2, 3, 4].map(() => fx.call('POST', '/fxTransfers', transfer)));
    expect(posts.map((answer) => answer.body)).toEqual(Array.from({ length: 4 }, () => ({ conversionState: 'RESERVED', homeTransactionId: id })));
    expect((await balances(fx))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
    const commit = { conversionState: 'COMMITTED', completedTimestamp: '2026-11-23T10:00:30.000Z' };
    const puts = await Promise.all([1, 2, 3, 4, 5, 6].map(() => fx.call('PUT', `/fxTransfers/${id}`, commit)));
    expect(puts).toEqual(Array.from({ length: 6 }, () => ({ status: 200, body: {} })));
    expect(await balances(fx)).toEqual({ ...LIQUIDITY_AT_START, 'clearing-mwk': '6425.16', 'clearing-zmw': '-100', 'liquidity-mwk': '49993574.84', 'liquidity-zmw': '1000100' });
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'COMMITTED', homeTransactionId: id } });
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED' })).body).toMatchObject({ statusCode: '3106' });
    expect((await fx.call('POST', '/fxTransfers', { ...transfer, condition: 'x'.repeat(43) })).body).toEqual({ statusCode: '3106', message: `Modified request: commitRequestId ${id} was used with another body` });
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });
});

describe('FX provider mode: abort and doubtful words', () => {
  it('ABORTED releases the hold once; a later COMMITTED is refused and moves nothing', async () => {
    const fx = await start();
    const { id } = await reserved(fx);
    for (let i = 0; i < 3; i += 1) expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED' })).toEqual({ status: 200, body: {} });
    expect(await balances(fx)).toEqual(LIQUIDITY_AT_START);
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).status).toBe(409);
    expect(await balances(fx)).toEqual(LIQUIDITY_AT_START);
    // The hub's settlement and the exchange now disagree: flagged for an operator.
    expect(await fx.app.store.findConversion(id)).toMatchObject({
      state: 'ABORTED',
      needsAttention: true,
      lastError: 'the switch reported COMMITTED, but the conversion is ABORTED: reconcile by hand',
    });
  });

  it('RESERVED, a word in another case, or a contradiction moves nothing: 400, flagged', async () => {
    const fx = await start();
    const { id } = await reserved(fx);
    for (const body of [{ conversionState: 'RESERVED' }, { conversionState: 'committed' }, { conversionState: 'COMMITTED ' }, {}]) {
      expect((await fx.call('PUT', `/fxTransfers/${id}`, body)).body).toMatchObject({ statusCode: '3100' });
    }
    const contradiction = { currentState: 'COMPLETED', finalNotification: { conversionState: 'ABORTED', completedTimestamp: '2026-11-23T10:00:30.000Z' } };
    expect((await fx.call('PATCH', `/fxTransfers/${id}`, contradiction)).status).toBe(400);
    expect((await balances(fx))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVED', needsAttention: true, lastError: expect.stringMatching(/^notification not applied: currentState "COMPLETED" contradicts/) });
    // The genuine word still works after them.
    const agreed = { currentState: 'COMPLETED', finalNotification: { conversionState: 'COMMITTED', completedTimestamp: '2026-11-23T10:00:30.000Z' } };
    expect(await fx.call('PATCH', `/fxTransfers/${id}`, agreed)).toEqual({ status: 200, body: {} });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED', needsAttention: false });
  });

  it('a notification for a conversion never quoted nor reserved is 404 3208', async () => {
    const fx = await start();
    expect(await fx.call('PUT', '/fxTransfers/01JDV6M3AZ6XK1B0SPZ8Q4W2RA', { conversionState: 'COMMITTED' })).toEqual({ status: 404, body: { statusCode: '3208', message: 'Conversion not found: no conversion 01JDV6M3AZ6XK1B0SPZ8Q4W2RA' } });
    expect(await fx.call('PUT', '/fxTransfers/01JDV6M3AZ6XK1B0SPZ8Q4W2RA', { conversionState: 'ABORTED' })).toEqual({ status: 404, body: { statusCode: '3208', message: 'Conversion not found: no conversion 01JDV6M3AZ6XK1B0SPZ8Q4W2RA' } });
  });

  it("the hub's abort that arrives before its fxTransfer is remembered: the late fxTransfer reserves nothing and is refused", async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    // A commit for it cannot be applied: nothing was reserved.
    expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).toEqual({ status: 404, body: { statusCode: '3208', message: `Conversion not found: no conversion ${id}` } });
    expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED', completedTimestamp: '2026-11-23T10:00:05.000Z' })).toEqual({ status: 200, body: {} });
    expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED', completedTimestamp: '2026-11-23T10:00:05.000Z' })).toEqual({ status: 200, body: {} });
    const refused = { status: 409, body: { statusCode: '3106', message: `Transfer already finished differently: the hub aborted ${id} before it arrived; nothing held` } };
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual(refused);
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual(refused);
    expect((await balances(fx))['liquidity-mwk']).toBe('50000000');
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'ABORTED', needsAttention: false, targetAmount: '6425.16' });
    expect(await fx.app.exchange.status(id)).toBe('released');
  });
});

describe('FX provider mode: the sandbox exchange file', () => {
  it('a currency added to FX_SANDBOX_FILE after the first start is opened at the next: its conversion commits; a currency already open keeps its balances', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cc-fxp-file-'));
    try {
      if (storeKind === 'postgres') database = await createTestDatabase();
      const file = join(dataDir, 'exchange.json');
      const pair = (source: string, target: string) => ({ source, target, rate: '2', charge: { currency: target, fixed: '0', percent: '0' }, limits: { min: '1', max: '100000' } });
      const env = { FX_SANDBOX_FILE: file, ...(database === undefined ? {} : { DATABASE_URL: database.url }) };
      writeFileSync(file, JSON.stringify({ liquidity: { ZMW: '1000', MWK: '100000' }, pairs: [pair('ZMW', 'MWK')] }));
      const first = await startFxpHarness({ dataDir, env });
      expect(await balances(first)).toEqual({ 'liquidity-mwk': '100000', 'liquidity-zmw': '1000' });
      await first.close();
      // USD and a USD -> MWK pair added; ZMW's liquidity changed in the file, which opens nothing.
      writeFileSync(file, JSON.stringify({ liquidity: { ZMW: '5000', MWK: '100000', USD: '5000' }, pairs: [pair('ZMW', 'MWK'), pair('USD', 'MWK')] }));
      const fx = await startFxpHarness({ dataDir, env });
      h = fx;
      expect(await balances(fx)).toEqual({ 'liquidity-mwk': '100000', 'liquidity-usd': '5000', 'liquidity-zmw': '1000' });
      const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'USD', target: 'MWK', amount: '10' }));
      expect((quoted.body as { conversionTerms: { targetAmount: unknown } }).conversionTerms.targetAmount).toEqual({ currency: 'MWK', amount: '20' });
      const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
      const id = String(transfer['commitRequestId']);
      expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
      expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED', completedTimestamp: '2026-11-23T10:00:01.000Z' })).toEqual({ status: 200, body: {} });
      expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED', needsAttention: false, lastError: null });
      expect(await balances(fx)).toEqual({ 'clearing-mwk': '20', 'clearing-usd': '-10', 'liquidity-mwk': '99980', 'liquidity-usd': '5010', 'liquidity-zmw': '1000' });
      expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('FX provider mode: refusals, each a distinct 4xx', () => {
  it('unsupported pair 5106, out of limits 5200, too small after charges 5200, expired request 3302', async () => {
    const fx = await start();
    expect(await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'KES', amount: '100' }))).toEqual({ status: 422, body: { statusCode: '5106', message: 'Currency pair not supported: ZMW to KES is not converted here' } });
    const refusal = async (body: Record<string, unknown>): Promise<unknown> => (await fx.call('POST', '/fxQuotes', body)).body;
    expect(await refusal(fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100000.01' }))).toEqual({ statusCode: '5200', message: 'Amount outside the conversion limits: 100000.01 ZMW is outside 1-100000' });
    expect(await refusal(fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '0.99' }))).toEqual({ statusCode: '5200', message: 'Amount outside the conversion limits: 0.99 ZMW is outside 1-100000' });
    // 5 MWK and 10 MWK of fixed charge: 0.08 + 0.16 ZMW, below the minimum of 1 ZMW.
    expect(await refusal(fxQuoteBody({ amountType: 'RECEIVE', source: 'ZMW', target: 'MWK', amount: '5' }))).toEqual({ statusCode: '5200', message: 'Amount outside the conversion limits: 0.24 ZMW is outside 1-100000' });
    // 0.15 ZMW is 9.7 MWK, less than the fixed charge of 10 MWK, before the limits are even read.
    expect(await refusal({ ...fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '0.15' }) })).toEqual({ statusCode: '5200', message: 'Amount outside the conversion limits: 0.15 ZMW converts to nothing after charges' });
    expect(await refusal(fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100', expiration: '2026-11-23T09:59:59.999Z' }))).toEqual({ statusCode: '3302', message: 'Quote expired: the request expired before it was quoted' });
  });

  it('the quote\'s expiration is never later than the request\'s', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100', expiration: '2026-11-23T10:00:20.000Z' }));
    expect((quoted.body as { conversionTerms: { expiration: string } }).conversionTerms.expiration).toBe('2026-11-23T10:00:20.000Z');
  });

  it('stale rates refuse quotes with 5100 and /health says so; a refresh brings them back', async () => {
    const fx = await start({ FX_RATE_MAX_AGE_MS: '60000' });
    const first = fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100', expiration: '2026-11-23T11:00:00.000Z' });
    const firstAnswer = await fx.call('POST', '/fxQuotes', first);
    expect(firstAnswer.status).toBe(200);
    const health = await fx.call('GET', '/health');
    expect(health).toEqual({ status: 200, body: { status: 'ok', checks: { store: 'ok', exchange: 'ok', rates: 'ok' }, rates: { asOf: '2026-11-23T10:00:00.000Z', ageMs: 0, stale: false, pairs: 6 } } });
    fx.clock.advance(60_001);
    expect(await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100', expiration: '2026-11-23T11:00:00.000Z' }))).toEqual({ status: 422, body: { statusCode: '5100', message: 'Exchange rates unavailable: rates are 60 s old (FX_RATE_MAX_AGE_MS 60000)' } });
    expect(await fx.call('GET', '/health')).toEqual({ status: 503, body: { statusCode: '2003', message: 'unhealthy: rates failed' } });
    // A repeat of a request quoted before the rates went stale gets its first answer.
    expect(await fx.call('POST', '/fxQuotes', first)).toEqual(firstAnswer);
    expect(await fx.app.rates.refresh()).toBe(true);
    expect((await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }))).status).toBe(200);
  });

  it('an fxTransfer must follow a live quote exactly: unknown 3205, changed amount 5101, expired 3302, short liquidity 5001', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    expect((await fx.call('POST', '/fxTransfers', { ...transfer, commitRequestId: '01JDV6M3AZ6XK1B0SPZ8Q4W2RA' })).body).toEqual({ statusCode: '3205', message: 'Conversion quote not found: no conversion quote with conversionId 01JDV6M3AZ6XK1B0SPZ8Q4W2RA' });
    expect((await fx.call('POST', '/fxTransfers', { ...transfer, targetAmount: { currency: 'MWK', amount: '6425.17' } })).body).toEqual({ statusCode: '5101', message: "Transfer inconsistent with its quote: targetAmount 6425.17 MWK differs from the quote's 6425.16 MWK" });
    expect((await fx.call('POST', '/fxTransfers', { ...transfer, sourceAmount: { currency: 'USD', amount: '100' } })).body).toEqual({ statusCode: '5101', message: "Transfer inconsistent with its quote: sourceAmount 100 USD differs from the quote's 100 ZMW" });
    // An fxTransfer whose own expiration has passed reserves nothing.
    expect(await fx.call('POST', '/fxTransfers', { ...transfer, expiration: '2026-11-23T09:59:59.000Z' })).toEqual({ status: 422, body: { statusCode: '3303', message: 'Transfer expired: the fxTransfer expired at 2026-11-23T09:59:59.000Z' } });
    expect((await balances(fx))['liquidity-mwk']).toBe('50000000');
    expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(200);
    const late = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    fx.clock.advance(60_000);
    expect((await fx.call('POST', '/fxTransfers', fxTransferBody(late.body as Record<string, unknown>))).body).toEqual({ statusCode: '3302', message: 'Quote expired: the conversion quote expired at 2026-11-23T10:01:00.000Z' });
  });

  it('an expiration outside the years 0001-9999 in UTC is 400 3100, for a quote and an fxTransfer, and nothing is stored', async () => {
    const fx = await start();
    // The switch's DateTime pattern lets this through; in UTC it is in the year 10000.
    const far = '9999-12-31T23:59:59.999-19:59';
    const quote = fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100', expiration: far });
    expect(await fx.call('POST', '/fxQuotes', quote)).toEqual({
      status: 400,
      body: { statusCode: '3100', message: `Generic validation error: conversionTerms.expiration ${far} is outside the years 0001 to 9999 in UTC` },
    });
    expect(await fx.app.store.findQuoteByRequest(String(quote['conversionRequestId']))).toBeUndefined();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    expect(await fx.call('POST', '/fxTransfers', { ...transfer, expiration: far })).toEqual({
      status: 400,
      body: { statusCode: '3100', message: `Generic validation error: expiration ${far} is outside the years 0001 to 9999 in UTC` },
    });
    expect(await fx.app.store.findConversion(id)).toBeUndefined();
    expect((await balances(fx))['liquidity-mwk']).toBe('50000000');
    // The last millisecond of 9999 in UTC is taken, and stored as it sorts.
    expect(await fx.call('POST', '/fxTransfers', { ...transfer, expiration: '9999-12-31T23:59:59.999Z' })).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVED', expiration: '9999-12-31T23:59:59.999Z' });
  });

  it('a reservation beyond the liquidity is 5001 and is answered the same on a retry', async () => {
    const fx = await start();
    await fx.app.ledger.reserve('drain', { amount: '49999999', currency: 'MWK' });
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const refused = { status: 422, body: { statusCode: '5001', message: 'FXP insufficient liquidity' } };
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual(refused);
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual(refused);
    expect(await fx.app.store.findConversion(String(transfer['commitRequestId']))).toMatchObject({ state: 'FAILED' });
  });
});
});

describe('FX provider mode metrics', () => {
  it('GET /metrics counts FX requests, quotes and conversions by state', async () => {
    const fx = await startFxpHarness({});
    try {
      const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
      const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
      await fx.call('POST', '/fxTransfers', transfer);
      const answer = await fetch(`${fx.url}/metrics`);
      const text = await answer.text();
      const lines = text.split('\n').filter((line) => /^connector_(fx_conversions|fx_quotes|http_requests_total)[{ ]/.test(line));
      expect(lines).toEqual([
        'connector_http_requests_total{server="fxp",route="/fxQuotes",method="POST",status="200"} 1',
        'connector_http_requests_total{server="fxp",route="/fxTransfers",method="POST",status="200"} 1',
        'connector_fx_conversions{state="RESERVED"} 1',
        'connector_fx_quotes 1',
      ]);
    } finally {
      await fx.close();
    }
  });
});
