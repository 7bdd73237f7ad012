import { afterEach, describe, expect, it } from 'vitest';
import { interceptCoreBanking } from '../../src/adapters/core-banking/intercept.js';
import { addMoney } from '../../src/domain/money.js';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { balances, customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';
import { hubAnswer } from '../support/fake-switch.js';

type Body = Record<string, unknown>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const payee = customerWith((customer) => customer.status === 'active');

/** The flag, the reason and when the recovery worker takes the transfer up. */
async function attentionOf(harness: Harness, transferId: string): Promise<unknown> {
  return harness.app.database
    .reader<{ inbound_transfers: { transfer_id: string; needs_attention: number; last_error: string | null; next_attempt_at: string | null } }>()
    .selectFrom('inbound_transfers')
    .select(['needs_attention', 'last_error', 'next_attempt_at'])
    .where('transfer_id', '=', transferId)
    .executeTakeFirst();
}

async function quoted(harness: Harness, amount: string): Promise<Body> {
  const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount });
  const quote = await harness.call('POST', '/quoterequests', quoteBody);
  expect(quote.status).toBe(200);
  return transferRequest(quoteBody, quote.body as Body);
}

describe('incoming notifications name their outcome', () => {
  it("the hub's COMMITTED alone (no currentState) credits the payee once", async () => {
    h = await startHarness();
    const before = await balances(h);
    const body = await quoted(h, '100');
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    const transferId = String(body['transferId']);
    const answer = await h.call('PUT', `/transfers/${transferId}`, { finalNotification: { transferState: 'COMMITTED' } });
    expect(answer).toEqual({ status: 200, body: {} });
    expect(((await h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']).toBe('COMMITTED');
    const after = await balances(h);
    expect(after.float.held).toBe('0');
    // 100 sent, 1% fee: the payee receives 99.
    expect(after.of(payee.accountId).balance).toBe(addMoney({ amount: before.of(payee.accountId).balance, currency: 'ZMW' }, { amount: '99', currency: 'ZMW' }).amount);
  });

  it.each([
    [{ currentState: 'COMPLETED', finalNotification: { transferState: 'ABORTED' } }, "currentState COMPLETED contradicts the hub's ABORTED"],
    [{ currentState: 'ERROR_OCCURRED', finalNotification: { transferState: 'COMMITTED' } }, "currentState ERROR_OCCURRED contradicts the hub's COMMITTED"],
    [{ currentState: 'RESERVED' }, 'currentState "RESERVED" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    [{ currentState: 'completed' }, 'currentState "completed" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    [{ currentState: 'COMPLETED ' }, 'currentState "COMPLETED " is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    [{ currentState: 'COMPLETED', finalNotification: { transferState: 'RESERVED' } }, 'finalNotification.transferState "RESERVED" is not COMMITTED or ABORTED'],
  ])('%j moves nothing: 400, flagged, and the genuine COMPLETED that follows still credits the payee', async (doubtful, reason) => {
    h = await startHarness();
    const before = await balances(h);
    const body = await quoted(h, '100');
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    const transferId = String(body['transferId']);
    const reserved = await balances(h);
    expect(await h.call('PUT', `/transfers/${transferId}`, doubtful)).toEqual({
      status: 400,
      body: { statusCode: '3100', message: `Notification not applied: ${reason}; nothing moved` },
    });
    expect(((await h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']).toBe('RESERVED');
    expect(await balances(h)).toEqual(reserved);
    expect(await attentionOf(h, transferId)).toEqual({ needs_attention: 1, last_error: `doubtful notification: ${reason}`, next_attempt_at: '2026-11-23T10:00:00.000Z' });

    expect(await h.call('PUT', `/transfers/${transferId}`, { currentState: 'COMPLETED', finalNotification: { transferState: 'COMMITTED' } })).toEqual({ status: 200, body: {} });
    const after = await balances(h);
    expect(after.float.held).toBe('0');
    expect(after.of(payee.accountId).balance).toBe(addMoney({ amount: before.of(payee.accountId).balance, currency: 'ZMW' }, { amount: '99', currency: 'ZMW' }).amount);
    expect(await attentionOf(h, transferId)).toEqual({ needs_attention: 0, last_error: null, next_attempt_at: null });
  });

  it('after a doubtful notification the recovery worker asks the switch connector at once, and its answer decides', async () => {
    h = await startHarness();
    const before = await balances(h);
    const committed = await quoted(h, '100');
    const aborted = await quoted(h, '50');
    for (const body of [committed, aborted]) {
      expect((await h.call('POST', '/transfers', body)).status).toBe(200);
      expect((await h.call('PUT', `/transfers/${String(body['transferId'])}`, { currentState: 'COMPLETED', finalNotification: { transferState: 'ABORTED' } })).status).toBe(400);
    }
    h.fakeSwitch.setTransferStatus(String(committed['transferId']), hubAnswer(String(committed['transferId']), 'COMMITTED'));
    h.fakeSwitch.setTransferStatus(String(aborted['transferId']), hubAnswer(String(aborted['transferId']), 'ABORTED'));
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 2, finished: 2, failed: 0 });
    expect(((await h.call('GET', `/transfers/${String(committed['transferId'])}`)).body as Body)['transferState']).toBe('COMMITTED');
    expect(((await h.call('GET', `/transfers/${String(aborted['transferId'])}`)).body as Body)['transferState']).toBe('ABORTED');
    const after = await balances(h);
    expect(after.float.held).toBe('0');
    expect(after.of(payee.accountId).balance).toBe(addMoney({ amount: before.of(payee.accountId).balance, currency: 'ZMW' }, { amount: '99', currency: 'ZMW' }).amount);
  });

  it('a notification that names no state at all moves nothing: 400, the reservation stays for the switch to be asked', async () => {
    h = await startHarness();
    const body = await quoted(h, '100');
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    const transferId = String(body['transferId']);
    const held = (await balances(h)).float.held;
    expect(await h.call('PUT', `/transfers/${transferId}`, {})).toEqual({ status: 400, body: { statusCode: '3102', message: 'Missing mandatory element: currentState' } });
    expect(((await h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']).toBe('RESERVED');
    expect((await balances(h)).float.held).toBe(held);
  });
});

describe('an abort that overtakes its own reservation', () => {
  it('gives back the hold the late reserve made, at an institution whose release finds nothing to release yet', async () => {
    let reserveEntered: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => {
      reserveEntered = resolve;
    });
    let letReserveFinish: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      letReserveFinish = resolve;
    });
    let reserveInFlight = false;
    h = await startHarness({
      overrides: {
        // Like an institution without tombstones: a release of an unknown reference does nothing.
        wrapCoreBanking: (inner) =>
          interceptCoreBanking(inner, async (operation, call) => {
            if (operation === 'release' && reserveInFlight) return undefined as never;
            if (operation !== 'reserve') return call();
            reserveInFlight = true;
            reserveEntered();
            await gate;
            try {
              return await call();
            } finally {
              reserveInFlight = false;
            }
          }),
      },
    });
    const harness = h;
    const before = await balances(harness);
    const body = await quoted(harness, '100');
    const transferId = String(body['transferId']);
    const post = harness.call('POST', '/transfers', body);
    await entered;
    expect(await harness.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).toEqual({
      status: 422,
      body: { statusCode: '5104', message: 'Transfer not completed: switch reported ABORTED' },
    });
    letReserveFinish();
    expect((await post).body).toMatchObject({ statusCode: '3106' });
    expect(((await harness.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']).toBe('ABORTED');
    expect(await balances(harness)).toEqual(before);
  });
});
