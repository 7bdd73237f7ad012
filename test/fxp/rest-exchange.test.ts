import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../src/domain/errors.js';
import { RestExchange } from '../../src/fxp/adapters/rest-exchange/rest-exchange.js';
import { expectConnectorError } from '../institutions/core-banking-contract.js';
import { startFixtureServer, type FixtureReply, type FixtureServer } from '../institutions/fixture-server.js';
import { ManualClock } from '../support/harness.js';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';
import { startRestExchangeFixture, type RestExchangeFixture } from './support/rest-exchange-fixture.js';

/** FX_EXCHANGE_ADAPTER=rest against a fixture exchange written from docs/reference-exchange-api.yaml. */

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const PAIRS = [
  {
    sourceCurrency: 'ZMW',
    targetCurrency: 'MWK',
    rate: '64.675',
    charge: { currency: 'MWK', fixed: '10', percent: '0.5' },
    limits: { minSource: '1', maxSource: '100000' },
  },
];

async function fixture(clock: ManualClock, apiKey?: string): Promise<RestExchangeFixture> {
  const started = await startRestExchangeFixture({ liquidity: { ZMW: '1000', MWK: '100000' }, pairs: PAIRS, asOf: () => clock.now(), ...(apiKey === undefined ? {} : { apiKey }) });
  closers.push(() => started.close());
  return started;
}

function adapter(url: string, apiKey?: string): RestExchange {
  const exchange = new RestExchange({ baseUrl: url, apiKey, timeoutMs: 500 });
  closers.push(() => exchange.close());
  return exchange;
}

describe('RestExchange', () => {
  it('reads the rate table, holds, commits and releases, each once per reference', async () => {
    const clock = new ManualClock();
    const exchange = await fixture(clock, 'fx-key');
    const rest = adapter(exchange.url, 'fx-key');
    expect(await rest.rates()).toEqual({ asOf: new Date('2026-11-23T10:00:00.000Z'), pairs: [{ sourceCurrency: 'ZMW', targetCurrency: 'MWK', rate: '64.675', charge: { currency: 'MWK', fixed: '10', percent: '0.5' }, minSource: '1', maxSource: '100000' }] });
    await rest.reserve('R-1', { amount: '6425.16', currency: 'MWK' });
    await rest.reserve('R-1', { amount: '6425.16', currency: 'MWK' });
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '6425.16' });
    await rest.commit('R-1', { amount: '100', currency: 'ZMW' }, { amount: '6425.16', currency: 'MWK' });
    await rest.commit('R-1', { amount: '100', currency: 'ZMW' }, { amount: '6425.16', currency: 'MWK' });
    expect([exchange.liquidity('MWK'), exchange.liquidity('ZMW')]).toEqual([{ balance: '93574.84', held: '0' }, { balance: '1100', held: '0' }]);
    expect(await rest.status('R-1')).toBe('committed');
    await expectConnectorError(rest.release('R-1'), 'TransferStateConflict', /HOLD_COMMITTED/);
    // A release that overtakes its hold: done, and the late hold is refused.
    await rest.release('R-2');
    await expectConnectorError(rest.reserve('R-2', { amount: '1', currency: 'MWK' }), 'TransferStateConflict', /HOLD_RELEASED/);
    expect(await rest.status('R-3')).toBe('not-found');
    expect(exchange.server.requests[0]?.headers.authorization).toBe('Bearer fx-key');
  });

  it('maps each documented 4xx to the catalogue', async () => {
    const clock = new ManualClock();
    const exchange = await fixture(clock, 'fx-key');
    const rest = adapter(exchange.url, 'fx-key');
    await expectConnectorError(rest.reserve('R-1', { amount: '100000.01', currency: 'MWK' }), 'FxInsufficientLiquidity', /HTTP 422 INSUFFICIENT_LIQUIDITY/);
    await expectConnectorError(rest.reserve('R-2', { amount: '1', currency: 'USD' }), 'FxPairNotSupported', /CURRENCY_NOT_SUPPORTED/);
    await rest.reserve('R-3', { amount: '1', currency: 'MWK' });
    await expectConnectorError(rest.reserve('R-3', { amount: '2', currency: 'MWK' }), 'ModifiedRequest', /REFERENCE_CONFLICT/);
    await expectConnectorError(rest.commit('R-9', { amount: '1', currency: 'ZMW' }, { amount: '1', currency: 'MWK' }), 'FxConversionNotFound', /HOLD_NOT_FOUND/);
    await expectConnectorError(adapter(exchange.url, 'wrong').rates(), 'InstitutionUnavailable', /credentials refused/);
  });

  it('a hold applied but answered after the timeout is an unknown outcome; the retry holds nothing more', async () => {
    const clock = new ManualClock();
    const exchange = await fixture(clock);
    const rest = adapter(exchange.url);
    exchange.server.inject('slow-after', 'next-write', 1, 0, 1500);
    await expectConnectorError(rest.reserve('R-1', { amount: '50', currency: 'MWK' }), 'InstitutionTimeout');
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '50' });
    await rest.reserve('R-1', { amount: '50', currency: 'MWK' });
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '50' });
    exchange.server.inject('applied-then-5xx', 'next-write');
    await expectConnectorError(rest.commit('R-1', { amount: '1', currency: 'ZMW' }, { amount: '50', currency: 'MWK' }), 'InstitutionUnavailable');
    await rest.commit('R-1', { amount: '1', currency: 'ZMW' }, { amount: '50', currency: 'MWK' });
    expect([exchange.liquidity('MWK'), exchange.liquidity('ZMW')]).toEqual([{ balance: '99950', held: '0' }, { balance: '1001', held: '0' }]);
  });
});

/** What a gateway or framework answers for a path it does not route (Spring Boot's default body). */
const GATEWAY_404: FixtureReply = { status: 404, body: { timestamp: '2026-01-01T00:00:00Z', status: '404', error: 'Not Found', path: '/x' } };

async function canned(reply: FixtureReply): Promise<FixtureServer> {
  const server = await startFixtureServer({ handle: () => reply, isWrite: () => true });
  closers.push(() => server.close());
  return server;
}

describe('RestExchange reads a 404 as the API\'s answer only with HOLD_NOT_FOUND', () => {
  it('release: 404 HOLD_NOT_FOUND is done; a gateway\'s 404 is an outage, not "nothing held"', async () => {
    await expect(adapter((await canned({ status: 404, body: { code: 'HOLD_NOT_FOUND', message: 'none' } })).url).release('R-1')).resolves.toBeUndefined();
    await expectConnectorError(adapter((await canned(GATEWAY_404)).url).release('R-1'), 'InstitutionUnavailable', /exchange release: HTTP 404, not the API's HOLD_NOT_FOUND/);
  });

  it('status: 404 HOLD_NOT_FOUND is not-found; a gateway\'s 404 or an empty 404 is an outage', async () => {
    expect(await adapter((await canned({ status: 404, body: { code: 'HOLD_NOT_FOUND', message: 'none' } })).url).status('R-1')).toBe('not-found');
    await expectConnectorError(adapter((await canned(GATEWAY_404)).url).status('R-1'), 'InstitutionUnavailable', /exchange holdStatus: HTTP 404, not the API's HOLD_NOT_FOUND/);
    await expectConnectorError(adapter((await canned({ status: 404 })).url).status('R-1'), 'InstitutionUnavailable', /exchange holdStatus: HTTP 404, not the API's HOLD_NOT_FOUND/);
  });

  it('commit: a gateway\'s 404 is an outage, not a decline', async () => {
    await expectConnectorError(
      adapter((await canned(GATEWAY_404)).url).commit('R-1', { amount: '1', currency: 'ZMW' }, { amount: '1', currency: 'MWK' }),
      'InstitutionUnavailable',
      /exchange commit: HTTP 404: not an answer of the API/,
    );
  });

  it('the fixture answers a route outside the document 400 INVALID_REQUEST, as the document says', async () => {
    const exchange = await fixture(new ManualClock());
    const response = await fetch(`${exchange.url}/conversions/R-1`);
    expect([response.status, await response.json()]).toEqual([400, { code: 'INVALID_REQUEST', message: 'no such route' }]);
  });
});

describe('CONNECTOR_MODE=fxp with FX_EXCHANGE_ADAPTER=rest', () => {
  it('quotes from the exchange\'s table, reserves and commits through it; stale rates from it refuse quotes', async () => {
    const clock = new ManualClock();
    const exchange = await fixture(clock);
    const fx: FxpHarness = await startFxpHarness({ clock, env: { FX_EXCHANGE_ADAPTER: 'rest', FX_REST_BASE_URL: exchange.url, FX_RATE_MAX_AGE_MS: '60000' } });
    closers.push(() => fx.close());
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    expect((quoted.body as { conversionTerms: { targetAmount: unknown } }).conversionTerms.targetAmount).toEqual({ currency: 'MWK', amount: '6425.16' });
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    expect((await fx.call('POST', '/fxTransfers', transfer)).body).toEqual({ conversionState: 'RESERVED', homeTransactionId: transfer['commitRequestId'] });
    expect(await fx.call('PUT', `/fxTransfers/${String(transfer['commitRequestId'])}`, { conversionState: 'COMMITTED' })).toEqual({ status: 200, body: {} });
    expect([exchange.liquidity('MWK'), exchange.liquidity('ZMW')]).toEqual([{ balance: '93574.84', held: '0' }, { balance: '1100', held: '0' }]);
    // The exchange's table is as old as its asOf: with the exchange unreachable, the table ages out.
    await exchange.close();
    clock.advance(60_001);
    expect(await fx.app.rates.refresh()).toBe(false);
    expect((await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }))).body).toMatchObject({ statusCode: '5100' });
  });

  /**
   * An exchange that is not idempotent on the reference (outside the reference document): its
   * first hold is applied and answered 500, the retry is refused as a repeated reference.
   */
  async function declinedAfterUnknown(releaseFault?: 'server-error'): Promise<{ fx: FxpHarness; exchange: RestExchangeFixture; id: string; transfer: Record<string, unknown> }> {
    const clock = new ManualClock();
    const exchange = await fixture(clock);
    const seen = new Set<string>();
    const fx = await startFxpHarness({
      clock,
      env: { FX_EXCHANGE_ADAPTER: 'rest', FX_REST_BASE_URL: exchange.url },
      overrides: {
        wrapExchange: (inner) => ({
          name: inner.name,
          rates: () => inner.rates(),
          reserve: async (reference, target) => {
            if (seen.has(reference)) throw new ConnectorError('ModifiedRequest', 'HTTP 409 REFERENCE_CONFLICT: the reference was used before');
            seen.add(reference);
            return inner.reserve(reference, target);
          },
          commit: (reference, source, target) => inner.commit(reference, source, target),
          release: (reference) => inner.release(reference),
          status: (reference) => inner.status(reference),
          health: () => inner.health(),
          close: () => inner.close?.() ?? Promise.resolve(),
        }),
      },
    });
    closers.push(() => fx.close());
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    exchange.server.inject('applied-then-5xx', 'next-write');
    expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(503);
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '6425.16' });
    if (releaseFault !== undefined) exchange.server.inject(releaseFault, 'next-write', 1, 0);
    expect((await fx.call('POST', '/fxTransfers', transfer)).body).toMatchObject({ statusCode: '3106' });
    return { fx, exchange, id, transfer };
  }

  it('a reservation declined after an attempt whose outcome was unknown releases the hold that attempt may have made', async () => {
    const { fx, exchange, id, transfer } = await declinedAfterUnknown();
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '0' });
    expect(exchange.server.requests.filter((request) => request.method === 'POST').map((request) => request.path)).toEqual(['/holds', `/holds/${id}/release`]);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'FAILED', errorName: 'ModifiedRequest', needsAttention: false });
    // A retry is answered as the first refusal, calling nothing.
    expect((await fx.call('POST', '/fxTransfers', transfer)).body).toMatchObject({ statusCode: '3106' });
    expect(exchange.server.requests.filter((request) => request.method === 'POST')).toHaveLength(2);
  });

  it('a release after such a decline that fails flags the conversion: target may still be held for it', async () => {
    const { fx, exchange, id } = await declinedAfterUnknown('server-error');
    expect(exchange.liquidity('MWK')).toEqual({ balance: '100000', held: '6425.16' });
    expect(await fx.app.store.findConversion(id)).toMatchObject({
      state: 'FAILED',
      errorName: 'ModifiedRequest',
      needsAttention: true,
      lastError: expect.stringMatching(/^declined after an attempt whose outcome was unknown, and the release failed: /),
    });
  });

  it('refuses to start without FX_REST_BASE_URL', async () => {
    await expect(startFxpHarness({ env: { FX_EXCHANGE_ADAPTER: 'rest' } })).rejects.toThrow(/FX_REST_BASE_URL: required with FX_EXCHANGE_ADAPTER=rest/);
  });
});
