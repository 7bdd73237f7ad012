import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../src/domain/errors.js';
import type { Exchange } from '../../src/fxp/ports/exchange.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FxStore } from '../../src/fxp/store/fx-store.js';
import { ManualClock } from '../support/harness.js';
import { FaultyExchange } from './support/faulty-exchange.js';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';

/**
 * Conversions cut off by an exchange outage, a lost answer or a crash between two steps are
 * finished by the recovery worker or by the switch connector's retry, moving money once.
 */

const harnesses: FxpHarness[] = [];
afterEach(async () => {
  while (harnesses.length > 0) await harnesses.pop()?.close();
});

async function start(options: Parameters<typeof startFxpHarness>[0] = {}): Promise<{ fx: FxpHarness; faults: FaultyExchange }> {
  let faults: FaultyExchange | undefined;
  const fx = await startFxpHarness({
    ...options,
    overrides: {
      wrapExchange: (exchange) => {
        faults = new FaultyExchange(exchange);
        return faults;
      },
    },
  });
  harnesses.push(fx);
  if (faults === undefined) throw new Error('no exchange wrapped');
  return { fx, faults };
}

async function quoteAndTransfer(fx: FxpHarness, amount = '100'): Promise<{ id: string; transfer: Record<string, unknown> }> {
  const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount }));
  expect(quoted.status).toBe(200);
  const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
  return { id: String(transfer['commitRequestId']), transfer };
}

/** A reserved conversion whose commit the exchange refused (503), then the hub's ABORTED: flagged as a contradiction (409). */
async function commitContradicted(fx: FxpHarness, faults: FaultyExchange): Promise<{ id: string; flag: { needsAttention: true; lastError: string } }> {
  const { id, transfer } = await quoteAndTransfer(fx);
  await fx.call('POST', '/fxTransfers', transfer);
  faults.fail('commit', 'before');
  expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).status).toBe(503);
  expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED' })).status).toBe(409);
  return { id, flag: { needsAttention: true, lastError: 'the switch reported ABORTED, but the conversion is COMMITTING: reconcile by hand' } };
}

async function figures(fx: FxpHarness): Promise<Record<string, string>> {
  const rows = await fx.app.ledger.balances();
  return Object.fromEntries(rows.filter((row) => ['zmw', 'mwk'].some((c) => row.accountId.endsWith(c))).map((row) => [row.accountId, row.held === '0' ? row.balance : `${row.balance} (held ${row.held})`]));
}

const COMMITTED = { 'clearing-mwk': '6425.16', 'clearing-zmw': '-100', 'liquidity-mwk': '49993574.84', 'liquidity-zmw': '1000100' };
const UNTOUCHED = { 'clearing-mwk': '0', 'clearing-zmw': '0', 'liquidity-mwk': '50000000', 'liquidity-zmw': '1000000' };

describe('FX conversions under exchange faults', () => {
  it('a commit still at the exchange after its intent would be stale is held from the worker: one commit call, then the worker takes over once it failed', async () => {
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    let commits = 0;
    const fx = await startFxpHarness({
      // Intents untouched for 5 x 60 ms are the worker's; a slow call renews its hold every 100 ms.
      env: { RECOVERY_BASE_BACKOFF_MS: '60' },
      overrides: {
        wrapExchange: (exchange): Exchange => ({
          name: exchange.name,
          rates: () => exchange.rates(),
          reserve: (reference, target) => exchange.reserve(reference, target),
          commit: async (reference, source, target) => {
            commits += 1;
            if (commits > 1) return exchange.commit(reference, source, target);
            await gate;
            throw new ConnectorError('InstitutionUnavailable', 'the first commit failed after a long wait');
          },
          release: (reference) => exchange.release(reference),
          status: (reference) => exchange.status(reference),
          health: () => exchange.health(),
        }),
      },
    });
    harnesses.push(fx);
    const { id, transfer } = await quoteAndTransfer(fx);
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
    const notified = fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' });
    while (commits === 0) await sleep(5);
    // Long past the staleness by the conversion's own clock; the hold is renewed by the clock of then.
    fx.clock.advance(10_000);
    await sleep(350);
    // A worker that claimed it would wait here for the request's turn on the conversion (another replica's would commit beside it).
    const pass = fx.app.recovery.runOnce();
    expect(await Promise.race([pass, sleep(3000).then(() => 'the worker claimed the conversion and waits')])).toEqual({ claimed: 0, finished: 0, failed: 0, flagged: 0 });
    expect(commits).toBe(1);
    letGo();
    expect(await notified).toEqual({ status: 503, body: { statusCode: '2003', message: 'Institution unavailable' } });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTING', attempts: 1 });
    // The failure's record ends the hold: the retry is due by its backoff (60 ms), not by the hold's end (300 ms after its last renewal).
    fx.clock.advance(61);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(commits).toBe(2);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED', attempts: 1 });
    expect(await figures(fx)).toEqual(COMMITTED);
  });

  it('a reserve refused by an outage answers 503; the switch\'s retry reserves once', async () => {
    const { fx, faults } = await start();
    const { id, transfer } = await quoteAndTransfer(fx);
    faults.fail('reserve', 'before');
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 503, body: { statusCode: '2003', message: 'Institution unavailable' } });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVING', attempts: 1 });
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
    expect((await figures(fx))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
  });

  it.each([
    ['refused by an outage each time', 'before', UNTOUCHED],
    ['applied, then its answers lost', 'after', { ...UNTOUCHED, 'liquidity-mwk': '50000000 (held 6425.16)' }],
  ] as const)('a reserve %s, until the switch gives up, is never reserved by the worker; it is released at its expiration', async (_how, fault, during) => {
    const { fx, faults } = await start();
    const { id, transfer } = await quoteAndTransfer(fx);
    faults.fail('reserve', fault, fault, fault, fault);
    // The switch connector's four tries all fail: it tells the hub, which never commits or aborts this one.
    for (let attempt = 0; attempt < 4; attempt += 1) expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(fault === 'before' ? 503 : 504);
    const { expiration } = (await fx.app.store.findConversion(id)) ?? { expiration: '' };
    fx.clock.advance(10_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVING', nextAttemptAt: expiration });
    expect(await figures(fx)).toEqual(during);
    // Not looked at again before its expiration; then released, whatever the exchange holds.
    fx.clock.advance(5_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0, flagged: 0 });
    fx.clock.advance(Date.parse(expiration) + 1 - fx.clock.now().getTime());
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'ABORTED' });
    expect(await figures(fx)).toEqual(UNTOUCHED);
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('a reserve whose answer was lost holds once: the retry finds the hold', async () => {
    const { fx, faults } = await start();
    const { id, transfer } = await quoteAndTransfer(fx);
    faults.fail('reserve', 'after');
    expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(504);
    expect((await figures(fx))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
    expect((await figures(fx))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('a commit whose answer was lost: 504, then the recovery worker finishes it without paying twice; later PUTs change nothing', async () => {
    const { fx, faults } = await start();
    const { id, transfer } = await quoteAndTransfer(fx);
    await fx.call('POST', '/fxTransfers', transfer);
    faults.fail('commit', 'after');
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).status).toBe(504);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTING', attempts: 1 });
    expect(await figures(fx)).toEqual(COMMITTED);
    fx.clock.advance(1_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED' });
    expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).toEqual({ status: 200, body: {} });
    expect(await figures(fx)).toEqual(COMMITTED);
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('ABORTED while the commit is still being retried moves nothing; its flag outlives the commit', async () => {
    const { fx, faults } = await start();
    const { id, flag } = await commitContradicted(fx, faults);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTING', ...flag });
    fx.clock.advance(10_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED', ...flag });
    expect(await figures(fx)).toEqual(COMMITTED);
  });

  it('a doubtful word after a contradiction leaves the contradiction flagged, and it outlives the commit', async () => {
    const { fx, faults } = await start();
    const { id, flag } = await commitContradicted(fx, faults);
    for (const body of [{ conversionState: 'RESERVED' }, { conversionState: 'aborted' }]) {
      expect((await fx.call('PUT', `/fxTransfers/${id}`, body)).body).toMatchObject({ statusCode: '3100' });
      expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTING', ...flag });
    }
    fx.clock.advance(10_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED', ...flag });
    expect(await figures(fx)).toEqual(COMMITTED);
  });

  it('a conversion held to the end of 9999 is not taken for expired: one worker taking one conversion a pass finishes a commit', async () => {
    const { fx, faults } = await start({ env: { RECOVERY_BATCH_SIZE: '1' } });
    const held = await quoteAndTransfer(fx);
    expect((await fx.call('POST', '/fxTransfers', { ...held.transfer, expiration: '9999-12-31T23:59:59.999Z' })).status).toBe(200);
    // Past year 9999 in UTC it is refused (its ISO text would sort before every date and be claimed on every pass).
    const far = await quoteAndTransfer(fx);
    expect((await fx.call('POST', '/fxTransfers', { ...far.transfer, expiration: '9999-12-31T23:59:59.999-19:59' })).status).toBe(400);
    const { id, transfer } = await quoteAndTransfer(fx);
    await fx.call('POST', '/fxTransfers', transfer);
    faults.fail('commit', 'before');
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).status).toBe(503);
    fx.clock.advance(120_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'COMMITTED' });
    expect(await fx.app.store.findConversion(held.id)).toMatchObject({ state: 'RESERVED', needsAttention: false, expiration: '9999-12-31T23:59:59.999Z' });
    expect(await fx.app.store.findConversion(far.id)).toBeUndefined();
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0, flagged: 0 });
  });

  it('a release refused twice is retried with backoff and ends released once', async () => {
    const { fx, faults } = await start();
    const { id, transfer } = await quoteAndTransfer(fx);
    await fx.call('POST', '/fxTransfers', transfer);
    faults.fail('release', 'before', 'before');
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED' })).status).toBe(503);
    fx.clock.advance(1_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RELEASING', attempts: 2, nextAttemptAt: '2026-11-23T10:00:03.000Z' });
    fx.clock.advance(2_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'ABORTED' });
    expect(await figures(fx)).toEqual(UNTOUCHED);
  });
});

describe('FX conversions across a crash and a restart', () => {
  it('a crash between marking COMMITTING and the exchange commit: after the restart the recovery worker commits once', async () => {
    const clock = new ManualClock();
    const first = await startFxpHarness({ clock });
    const { id, transfer } = await quoteAndTransfer(first);
    await first.call('POST', '/fxTransfers', transfer);
    // The process dies right after recording its intent, before the exchange heard of it.
    expect(await new FxStore(first.app.database, () => clock.now()).transition(id, ['RESERVED'], 'COMMITTING', { nextAttemptAt: clock.now().toISOString() })).toMatchObject({ state: 'COMMITTING' });
    await first.stop();
    const second = await startFxpHarness({ clock, dataDir: first.dataDir });
    harnesses.push(second, first);
    expect(await second.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0, flagged: 0 });
    expect(await figures(second)).toEqual(COMMITTED);
    // The switch connector's own retry of the notification after the restart changes nothing.
    expect(await second.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).toEqual({ status: 200, body: {} });
    expect(await figures(second)).toEqual(COMMITTED);
    expect(await second.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('a crash after the exchange held but before RESERVED was recorded: the retry after the restart answers RESERVED, held once', async () => {
    const clock = new ManualClock();
    const first = await startFxpHarness({ clock });
    const { id, transfer } = await quoteAndTransfer(first);
    // The intent and the hold exist; the answer never left.
    await first.app.store.insertConversion({ commitRequestId: id, requestHash: (await import('../../src/domain/request-hash.js')).requestHash(transfer), sourceCurrency: 'ZMW', sourceAmount: '100', targetCurrency: 'MWK', targetAmount: '6425.16', expiration: '2026-11-23T10:01:00.000Z', nextAttemptAt: clock.now().toISOString() });
    await first.app.exchange.reserve(id, { amount: '6425.16', currency: 'MWK' });
    await first.stop();
    const second = await startFxpHarness({ clock, dataDir: first.dataDir });
    harnesses.push(second, first);
    expect(await second.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: id } });
    expect((await figures(second))['liquidity-mwk']).toBe('50000000 (held 6425.16)');
  });

  it('a conversion never answered RESERVED is released once it expires; one answered RESERVED is flagged, never released on a timer', async () => {
    const { fx, faults } = await start();
    const cutOff = await quoteAndTransfer(fx);
    faults.fail('reserve', 'after');
    expect((await fx.call('POST', '/fxTransfers', cutOff.transfer)).status).toBe(504);
    const answered = await quoteAndTransfer(fx, '200');
    expect((await fx.call('POST', '/fxTransfers', answered.transfer)).status).toBe(200);
    fx.clock.advance(60_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 2, finished: 1, failed: 0, flagged: 1 });
    expect(await fx.app.store.findConversion(cutOff.id)).toMatchObject({ state: 'ABORTED' });
    expect(await fx.app.store.findConversion(answered.id)).toMatchObject({ state: 'RESERVED', needsAttention: true });
    // The cut-off one is released; only the answered one (200 ZMW -> 12860.32 MWK) stays held.
    expect((await figures(fx))['liquidity-mwk']).toBe('50000000 (held 12860.32)');
    // Flagged once; the hub's later word still settles it.
    fx.clock.advance(60_000);
    expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0, flagged: 0 });
    expect(await fx.call('PUT', `/fxTransfers/${answered.id}`, { conversionState: 'COMMITTED' })).toEqual({ status: 200, body: {} });
    expect(await fx.app.store.findConversion(answered.id)).toMatchObject({ state: 'COMMITTED', needsAttention: false });
  });
});

describe('FX amounts: 18 digits, and currencies with 0, 2 and 3 decimals', () => {
  it('converts and commits exactly at the edges of the Amount pattern', async () => {
    const clock = new ManualClock();
    const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'cc-fx-file-'));
    const file = join(dir, 'exchange.json');
    writeFileSync(file, JSON.stringify({
      liquidity: { USD: '1', ZMW: '999999999999999999.99', KWD: '999999999999999.999', UGX: '999999999999999999' },
      pairs: [
        { source: 'USD', target: 'ZMW', rate: '1', charge: { currency: 'ZMW', fixed: '0', percent: '0' }, limits: { min: '0.01', max: '999999999999999999.99' } },
        { source: 'USD', target: 'KWD', rate: '0.30741', charge: { currency: 'USD', fixed: '1', percent: '0' }, limits: { min: '1', max: '999999999999999999.99' } },
        { source: 'USD', target: 'UGX', rate: '3712.5', charge: { currency: 'UGX', fixed: '100', percent: '0.1' }, limits: { min: '1', max: '1000000' } },
      ],
    }));
    const fx = await startFxpHarness({ clock, env: { FX_SANDBOX_FILE: file } });
    harnesses.push(fx);
    const convert = async (amountType: 'SEND' | 'RECEIVE', target: string, amount: string): Promise<Record<string, unknown>> => {
      const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType, source: 'USD', target, amount }));
      expect(quoted.status).toBe(200);
      const terms = (quoted.body as { conversionTerms: Record<string, unknown> }).conversionTerms;
      const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
      expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(200);
      expect((await fx.call('PUT', `/fxTransfers/${String(transfer['commitRequestId'])}`, { conversionState: 'COMMITTED' })).status).toBe(200);
      return terms;
    };
    expect((await convert('SEND', 'ZMW', '999999999999999999.99'))['targetAmount']).toEqual({ currency: 'ZMW', amount: '999999999999999999.99' });
    // 3 decimals: 1234.56 USD x 0.30741 = 379.5160... KWD -> 379.516; the 1 USD charge = 0.30741 -> 0.308 KWD off: 379.208
    expect((await convert('SEND', 'KWD', '1234.56'))['targetAmount']).toEqual({ currency: 'KWD', amount: '379.208' });
    // 0 decimals: 1000000 UGX received; gross source 1000000 / 3712.5 = 269.3602... -> 269.37; charge 100 + 0.1% of 1000000 = 1100 UGX -> 0.2963 -> 0.30 USD
    const ugx = await convert('RECEIVE', 'UGX', '1000000');
    expect([ugx['sourceAmount'], ugx['targetAmount']]).toEqual([{ currency: 'USD', amount: '269.67' }, { currency: 'UGX', amount: '1000000' }]);
    const balances = Object.fromEntries((await fx.app.ledger.balances()).map((row) => [row.accountId, row.balance]));
    expect(balances).toEqual({
      'clearing-kwd': '379.208',
      'clearing-ugx': '1000000',
      // 999999999999999999.99 + 1234.56 + 269.67 USD received: past 18 digits in the books, exact.
      'clearing-usd': '-1000000000000001504.22',
      'clearing-zmw': '999999999999999999.99',
      'liquidity-kwd': '999999999999620.791',
      'liquidity-ugx': '999999999998999999',
      'liquidity-usd': '1000000000000001505.22',
      'liquidity-zmw': '0',
    });
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });
});
