import { afterEach, describe, expect, it } from 'vitest';
import { contradictionNote } from '../../src/domain/contradiction.js';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';

/**
 * FX provider mode's operations server (OPERATIONS_PORT): a conversion answered RESERVED whose
 * notification never came is flagged at its expiration and held; an operator settles it with the
 * hub's outcome, through the exchange, once, with the evidence in the audit trail.
 */

const harnesses: FxpHarness[] = [];
afterEach(async () => {
  while (harnesses.length > 0) await harnesses.pop()?.close();
});

const OPERATORS = 'ana:ana-token-0123456789abcdefghij,ben:ben-token-0123456789abcdefghij';

async function start(): Promise<FxpHarness> {
  const fx = await startFxpHarness({ env: { OPERATOR_CREDENTIALS: OPERATORS } });
  harnesses.push(fx);
  return fx;
}

/** A conversion of 200 ZMW (12,860.32 MWK held), answered RESERVED, flagged at its expiration. */
async function flaggedConversion(fx: FxpHarness): Promise<string> {
  const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '200' }));
  const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
  expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(200);
  fx.clock.advance(60 * 60_000);
  expect(await fx.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 0, flagged: 1 });
  return String(transfer['commitRequestId']);
}

async function liquidity(fx: FxpHarness): Promise<Record<string, string>> {
  const rows = await fx.app.ledger.balances();
  return Object.fromEntries(rows.filter((row) => ['liquidity-mwk', 'liquidity-zmw'].includes(row.accountId)).map((row) => [row.accountId, `${row.balance} held ${row.held}`]));
}

const ANA = 'ana-token-0123456789abcdefghij';

describe('FX provider operations server', () => {
  it('lists the flagged conversion; ABORTED by an operator releases the held target once, audited with the evidence', async () => {
    const fx = await start();
    const id = await flaggedConversion(fx);
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '50000000 held 12860.32', 'liquidity-zmw': '1000000 held 0' });

    const listed = await fx.callOperations('GET', '/operations/fx-conversions?attention=true', undefined, ANA);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      conversions: [
        {
          commitRequestId: id,
          state: 'RESERVED',
          sourceAmount: { amount: '200', currency: 'ZMW' },
          targetAmount: { amount: '12860.32', currency: 'MWK' },
          expiration: '2026-11-23T10:01:00.000Z',
          needsAttention: true,
          lastError: "no commit or abort notification by the expiration; held until the hub's word arrives",
          attempts: 0,
          createdAt: '2026-11-23T10:00:00.000Z',
          updatedAt: '2026-11-23T11:00:00.000Z',
        },
      ],
      truncated: false,
    });

    const body = { outcome: 'ABORTED', reason: 'hub aborted it', evidence: 'hub settlement report 2026-11-23, line 14' };
    const resolved = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, body, ANA);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ commitRequestId: id, state: 'ABORTED', needsAttention: false, lastError: null });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '50000000 held 0', 'liquidity-zmw': '1000000 held 0' });

    // Done: a second resolution is refused and moves nothing.
    const again = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, body, ANA);
    expect(again).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the conversion is ABORTED and not flagged: nothing to resolve' } });
    expect((await fx.callOperations('GET', '/operations/fx-conversions?attention=true', undefined, ANA)).body).toEqual({ conversions: [], truncated: false });

    const detail = await fx.callOperations('GET', `/operations/fx-conversions/${id}`, undefined, ANA);
    const history = (detail.body as { history: Array<Record<string, unknown>> }).history;
    expect(history.map((event) => [event['toState'], event['cause'], event['operator'] ?? null])).toEqual([
      ['RESERVING', 'request', null],
      ['RESERVED', 'request', null],
      ['RESERVED', 'recovery', null],
      ['RELEASING', 'operator', 'ana'],
      ['ABORTED', 'operator', 'ana'],
    ]);
    expect(history.at(-1)).toMatchObject({ reason: 'resolve: hub aborted it', evidence: 'hub settlement report 2026-11-23, line 14' });
  });

  it('COMMITTED by an operator commits at the exchange once: source credited, held target paid out', async () => {
    const fx = await start();
    const id = await flaggedConversion(fx);
    const resolved = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'COMMITTED', reason: 'hub committed it', evidence: 'hub query 11:05' }, ANA);
    expect(resolved.body).toMatchObject({ state: 'COMMITTED', needsAttention: false });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '49987139.68 held 0', 'liquidity-zmw': '1000200 held 0' });
    // The hub's notification arriving afterwards finds it done.
    expect(await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).toEqual({ status: 200, body: {} });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '49987139.68 held 0', 'liquidity-zmw': '1000200 held 0' });
  });

  it('a contradiction another replica flags while the operator\'s commit runs at the exchange outlives the commit', async () => {
    let during: (() => Promise<void>) | undefined;
    const fx = await startFxpHarness({
      env: { OPERATOR_CREDENTIALS: OPERATORS },
      overrides: {
        wrapExchange: (exchange) => ({
          ...exchange,
          name: exchange.name,
          rates: () => exchange.rates(),
          reserve: (reference, target) => exchange.reserve(reference, target),
          release: (reference) => exchange.release(reference),
          status: (reference) => exchange.status(reference),
          health: () => exchange.health(),
          commit: async (reference, source, target) => {
            await during?.();
            await exchange.commit(reference, source, target);
          },
        }),
      },
    });
    harnesses.push(fx);
    const id = await flaggedConversion(fx);
    const contradiction = contradictionNote('ABORTED', 'conversion', 'COMMITTING');
    // The hub's ABORTED, reaching another replica while this one commits: it flags the conversion.
    during = async () => fx.app.store.note(id, 'COMMITTING', { needsAttention: true, lastError: contradiction });
    const resolved = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'COMMITTED', reason: 'hub committed it', evidence: 'hub query' }, ANA);
    expect(resolved.body).toMatchObject({ state: 'COMMITTED', needsAttention: true, lastError: contradiction });
    expect(((await fx.callOperations('GET', '/operations/fx-conversions?attention=true', undefined, ANA)).body as { conversions: unknown[] }).conversions).toHaveLength(1);
  });

  it('a RESERVED conversion flagged early by a doubtful word is not resolved before its expiration; after it, it is', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '200' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    expect((await fx.call('POST', '/fxTransfers', transfer)).status).toBe(200);
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'RESERVED' })).status).toBe(400);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVED', needsAttention: true, expiration: '2026-11-23T10:01:00.000Z' });
    const body = { outcome: 'ABORTED', reason: 'hub aborted it', evidence: 'hub settlement report' };
    const early = {
      status: 409,
      body: {
        statusCode: '3106',
        message: 'Operator action refused: the hub may still settle it until its expiration at 2026-11-23T10:01:00.000Z: resolve it after that',
      },
    };
    expect(await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, body, ANA)).toEqual(early);
    fx.clock.advance(59_999);
    expect(await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { ...body, outcome: 'COMMITTED' }, ANA)).toEqual(early);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'RESERVED', needsAttention: true });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '50000000 held 12860.32', 'liquidity-zmw': '1000000 held 0' });
    fx.clock.advance(1);
    const resolved = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, body, ANA);
    expect(resolved.body).toMatchObject({ state: 'ABORTED', needsAttention: false, lastError: null });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '50000000 held 0', 'liquidity-zmw': '1000000 held 0' });
  });

  it('a contradiction on a final conversion is cleared by resolving it to its own state, and only that', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    await fx.call('POST', '/fxTransfers', transfer);
    await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' });
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'ABORTED' })).status).toBe(409);
    const wrong = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'ABORTED', reason: 'r', evidence: 'e' }, ANA);
    expect(wrong).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the conversion is COMMITTED: it can only be resolved to COMMITTED (clearing its flag), not ABORTED' } });
    const cleared = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'COMMITTED', reason: 'hub confirms the commit', evidence: 'ticket 77' }, ANA);
    expect(cleared.body).toMatchObject({ state: 'COMMITTED', needsAttention: false, lastError: null });
  });

  it('a FAILED conversion flagged for a contradiction is cleared by resolving it to FAILED, and only that', async () => {
    const fx = await start();
    const id = '01JDV6M3AZ6XK1B0SPZ8Q4W2RB';
    await fx.app.store.insertConversion({ commitRequestId: id, requestHash: 'h', sourceCurrency: 'ZMW', sourceAmount: '1', targetCurrency: 'MWK', targetAmount: '64.67', expiration: '2026-11-23T10:01:00.000Z', nextAttemptAt: '2026-11-23T10:00:05.000Z' });
    await fx.app.store.transition(id, ['RESERVING'], 'FAILED', { errorName: 'FxInsufficientLiquidity', lastError: 'refused by the exchange' });
    expect((await fx.call('PUT', `/fxTransfers/${id}`, { conversionState: 'COMMITTED' })).status).toBe(409);
    expect(await fx.app.store.findConversion(id)).toMatchObject({ state: 'FAILED', needsAttention: true });
    const wrong = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'COMMITTED', reason: 'r', evidence: 'e' }, ANA);
    expect(wrong.status).toBe(409);
    const cleared = await fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'FAILED', reason: 'hub refused it too', evidence: 'hub report' }, ANA);
    expect(cleared.body).toMatchObject({ state: 'FAILED', needsAttention: false, lastError: null });
  });

  it('every route takes an operator token; bad input is a clear 4xx', async () => {
    const fx = await start();
    expect(await fx.callOperations('GET', '/operations/fx-conversions', undefined, null)).toEqual({
      status: 401,
      body: { statusCode: '3000', message: 'Unauthorized: missing or wrong operator token (Authorization: Bearer ...)' },
    });
    expect((await fx.callOperations('GET', '/operations/fx-conversions')).status).toBe(401);
    expect(await fx.callOperations('GET', '/operations/whoami', undefined, 'ben-token-0123456789abcdefghij')).toEqual({ status: 200, body: { operator: 'ben' } });
    expect((await fx.callOperations('GET', '/operations/fx-conversions?state=HELD', undefined, ANA)).status).toBe(400);
    expect((await fx.callOperations('GET', '/operations/fx-conversions?state=RESERVED&state=ABORTED', undefined, ANA)).status).toBe(400);
    expect((await fx.callOperations('GET', '/operations/fx-conversions?attention=yes', undefined, ANA)).status).toBe(400);
    const unknown = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';
    expect((await fx.callOperations('GET', `/operations/fx-conversions/${unknown}`, undefined, ANA)).status).toBe(404);
    expect((await fx.callOperations('POST', `/operations/fx-conversions/${unknown}/resolve`, { outcome: 'COMMITTED', reason: 'r' }, ANA)).status).toBe(400);
    expect((await fx.callOperations('POST', `/operations/fx-conversions/${unknown}/resolve`, { outcome: 'COMMITTED', reason: 'r', evidence: 'e' }, ANA)).status).toBe(404);
  });

  it('a reason or evidence of spaces only is refused (400 3100) and nothing changes', async () => {
    const fx = await start();
    const id = await flaggedConversion(fx);
    const resolve = (reason: string, evidence: string): ReturnType<FxpHarness['callOperations']> =>
      fx.callOperations('POST', `/operations/fx-conversions/${id}/resolve`, { outcome: 'ABORTED', reason, evidence }, ANA);
    expect(await resolve('   ', 'hub report 14')).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: body/reason is blank; say why (it goes into the audit trail)' } });
    expect(await resolve('hub aborted it', '\u00a0\u2003')).toEqual({
      status: 400,
      body: { statusCode: '3100', message: 'Generic validation error: body/evidence is blank; say what the institution or the hub confirmed, and its reference' },
    });
    expect(await liquidity(fx)).toEqual({ 'liquidity-mwk': '50000000 held 12860.32', 'liquidity-zmw': '1000000 held 0' });
    const detail = (await fx.callOperations('GET', `/operations/fx-conversions/${id}`, undefined, ANA)).body as { conversion: Record<string, unknown>; history: Array<{ cause: string }> };
    expect(detail.conversion).toMatchObject({ state: 'RESERVED', needsAttention: true });
    expect(detail.history.filter((event) => event.cause === 'operator')).toEqual([]);
    // Words around spaces are kept as written.
    expect((await resolve('  hub aborted it ', 'hub report 14')).status).toBe(200);
  });
});
