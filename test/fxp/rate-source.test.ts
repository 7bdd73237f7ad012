import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RestExchange } from '../../src/fxp/adapters/rest-exchange/rest-exchange.js';
import { RateSource, RATES_FUTURE_TOLERANCE_MS } from '../../src/fxp/aggregate/rate-source.js';
import { ManualClock } from '../support/harness.js';
import { startRestExchangeFixture } from './support/rest-exchange-fixture.js';

/** The rate table as RateSource takes it from a real REST exchange on loopback (docs/reference-exchange-api.yaml). */

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const PAIRS = [{ sourceCurrency: 'ZMW', targetCurrency: 'MWK', rate: '64.675', charge: { currency: 'MWK', fixed: '10', percent: '0.5' }, limits: { minSource: '1', maxSource: '100000' } }];

async function source(clock: ManualClock): Promise<{ rates: RateSource; setAsOf: (at: string) => void; requests: () => number; delayNext: (ms: number) => void }> {
  let asOf = new Date('2026-11-23T10:00:00.000Z');
  const exchange = await startRestExchangeFixture({ liquidity: { ZMW: '1000', MWK: '100000' }, pairs: PAIRS, asOf: () => asOf });
  closers.push(() => exchange.close());
  const rest = new RestExchange({ baseUrl: exchange.url, apiKey: undefined, timeoutMs: 2_000 });
  closers.push(() => rest.close());
  const rates = new RateSource(rest, clock, { refreshMs: 30_000, maxAgeMs: 120_000 }, pino({ level: 'silent' }));
  return {
    rates,
    setAsOf: (at) => {
      asOf = new Date(at);
    },
    requests: () => exchange.server.requests.filter((r) => r.path === '/rates').length,
    delayNext: (ms) => exchange.server.inject('slow-before', 'next-request', 1, 0, ms),
  };
}

describe('RateSource', () => {
  it('does not take a table older than the one it holds: quotes keep pricing from the newer one', async () => {
    const clock = new ManualClock(new Date('2026-11-23T10:01:00.000Z'));
    const { rates, setAsOf } = await source(clock);
    expect(await rates.refresh()).toBe(true);
    setAsOf('2026-11-23T09:58:00.000Z');
    expect(await rates.refresh()).toBe(false);
    expect(rates.status()).toEqual({
      asOf: '2026-11-23T10:00:00.000Z',
      ageMs: 60_000,
      stale: false,
      pairs: 1,
      lastError: 'the exchange answered rates of 2026-11-23T09:58:00.000Z, older than those held (2026-11-23T10:00:00.000Z); not taken',
    });
    // The same table again, or a newer one, is taken and clears the error.
    setAsOf('2026-11-23T10:00:30.000Z');
    expect(await rates.refresh()).toBe(true);
    expect(rates.status()).toEqual({ asOf: '2026-11-23T10:00:30.000Z', ageMs: 30_000, stale: false, pairs: 1 });
  });

  it('refuses a table dated past the clock-skew tolerance, which would never age; within it, the table is new', async () => {
    const clock = new ManualClock(new Date('2026-11-23T10:00:00.000Z'));
    const { rates, setAsOf } = await source(clock);
    setAsOf('2099-01-01T00:00:00.000Z');
    expect(await rates.refresh()).toBe(false);
    expect(rates.status()).toMatchObject({ asOf: null, stale: true, pairs: 0 });
    expect(rates.status().lastError).toMatch(/^the exchange dated its rates 2099-01-01T00:00:00.000Z, \d+ s ahead of this clock; not taken$/);
    expect(() => rates.pricing('ZMW', 'MWK')).toThrow('no rates fetched from the exchange yet');

    setAsOf(new Date(clock.now().getTime() + RATES_FUTURE_TOLERANCE_MS).toISOString());
    expect(await rates.refresh()).toBe(true);
    expect(rates.status()).toEqual({ asOf: '2026-11-23T10:01:00.000Z', ageMs: 0, stale: false, pairs: 1 });
    // It ages from its own date: stale once that is FX_RATE_MAX_AGE_MS behind the clock.
    clock.advance(60_000 + 120_001);
    expect(rates.status()).toMatchObject({ ageMs: 120_001, stale: true });
    expect(() => rates.pricing('ZMW', 'MWK')).toThrow('rates are 120 s old (FX_RATE_MAX_AGE_MS 120000)');
  });

  it('one fetch at a time: a refresh asked for while one is on its way shares it', async () => {
    const clock = new ManualClock(new Date('2026-11-23T10:00:10.000Z'));
    const { rates, requests, delayNext } = await source(clock);
    delayNext(300);
    const first = rates.refresh();
    const second = rates.refresh();
    expect(await Promise.all([first, second])).toEqual([true, true]);
    expect(requests()).toBe(1);
    expect(await rates.refresh()).toBe(true);
    expect(requests()).toBe(2);
  });
});
