import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import type { OutgoingState } from '../../src/domain/outgoing-payment.js';
import { requestHash } from '../../src/domain/request-hash.js';
import { hubAnswer, startFakeSwitch, type FakeSwitch } from '../support/fake-switch.js';
import { ManualClock, TEST_CALLBACK_SECRET, TEST_CHANNEL_API_KEY, type Harness } from '../support/harness.js';
import { PAYER_ACCOUNT, callbackHeaders, channelDebit, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { balances, startHarness } from '../support/sandbox-harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Restartable {
  readonly first: Harness;
  restart(): Promise<Harness>;
  readonly fakeSwitch: FakeSwitch;
  readonly clock: ManualClock;
}

async function restartable(env: Record<string, string> = {}): Promise<Restartable> {
  const clock = new ManualClock();
  const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
  const first = await startHarness({ fakeSwitch, clock, env });
  cleanups.push(async () => {
    await first.close();
    await fakeSwitch.close();
  });
  return {
    first,
    fakeSwitch,
    clock,
    async restart() {
      await first.stop();
      const second = await startHarness({ fakeSwitch, clock, env, dataDir: first.dataDir });
      cleanups.push(() => second.close());
      return second;
    },
  };
}

function switchPuts(fakeSwitch: FakeSwitch, transferId: string): unknown[] {
  return fakeSwitch.requests.filter((r) => r.method === 'PUT' && r.path === `/transfers/${transferId}`).map((r) => r.body);
}

/** Waits until the switch has received the accept (as in test/replicas/outgoing-accept-once.test.ts). */
async function untilSwitchGot(fakeSwitch: FakeSwitch, transferId: string): Promise<void> {
  for (let i = 0; i < 200 && switchPuts(fakeSwitch, transferId).length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(switchPuts(fakeSwitch, transferId)).toEqual([{ acceptQuote: true }]);
}

/** Leaves a payment in `state` as a process that died right after that transition would. */
async function crashIn(h: Harness, homeTransactionId: string, from: OutgoingState, to: OutgoingState): Promise<void> {
  const moved = await new SqlOutgoingStore(h.app.database, () => h.clock.now()).transition(homeTransactionId, [from], to);
  expect(moved?.state).toBe(to);
}

describe('outgoing payments survive a restart', () => {
  it('mobile-operator: a payment waiting for its debit at the restart is finished by the callback afterwards', async () => {
    const env = { SANDBOX_OUTGOING_FLOW: 'mobile-operator' };
    const { first, restart, fakeSwitch } = await restartable(env);
    const before = await balances(first);
    const terms = await initiate(first, sendMoneyBody());
    const transferId = String(terms['transferId']);
    expect((await first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    const second = await restart();
    await second.app.sandbox?.settleCollection(transferId, true);
    const answer = await second.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, callbackHeaders(TEST_CALLBACK_SECRET));
    expect(answer).toEqual({ status: 200, body: {} });
    expect(fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: true }]);
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // One account model: the collected 100 landed in the float.
    expect(before.float).toEqual({ balance: '1000000', held: '0' });
    expect((await balances(second)).float).toEqual({ balance: '1000100', held: '0' });
    // A retried POST after the restart answers the stored terms, with the state the payment is in now, and starts nothing.
    const retried = await second.callOutgoing('POST', '/send-money', sendMoneyBody({ homeTransactionId: terms['homeTransactionId'] }));
    expect(retried).toEqual({ status: 200, body: { ...terms, state: 'COMPLETED' } });
    expect(fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('bank flow: cut off after deciding to accept, the worker asks the switch; COMPLETED is never refunded', async () => {
    const { first, restart, fakeSwitch, clock } = await restartable();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const terms = await initiate(first, body);
    const transferId = String(terms['transferId']);
    await channelDebit(first, home, '100');
    await crashIn(first, home, 'QUOTED', 'ACCEPTING');
    const second = await restart();
    fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'COMMITTED'));
    // Within the switch's own time limit the accept may still be running elsewhere: left alone.
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    clock.advance(1_500 + 5_001);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await second.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', needsAttention: false });
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // The channel's retried accept now learns the outcome.
    expect((await second.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).body).toMatchObject({ state: 'COMPLETED' });
  });

  it('bank flow: cut off after deciding to accept, the switch says ABORTED: the customer is refunded once', async () => {
    const { first, restart, fakeSwitch, clock } = await restartable();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    await crashIn(first, home, 'QUOTED', 'ACCEPTING');
    const second = await restart();
    fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    clock.advance(10_000);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    clock.advance(600_000);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect((await second.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED' });
  });

  it('a stop waits for a request still running after its client hung up: its writes land before the database closes', async () => {
    const { first, restart, fakeSwitch } = await restartable();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    fakeSwitch.script(home, { accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE' });
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    // The channel gives up on the accept once it is at the switch, long before the switch's time
    // limit (1.5 s here).
    const hangUp = new AbortController();
    const abandoned = request(`${first.outgoingUrl}/send-money/${transferId}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_CHANNEL_API_KEY },
      body: JSON.stringify({ acceptQuote: true }),
      signal: hangUp.signal,
    });
    await untilSwitchGot(fakeSwitch, transferId);
    hangUp.abort();
    await expect(abandoned).rejects.toThrow();
    const second = await restart();
    // The accept's handler ran to its end during the stop: the timeout moved the payment on and
    // the switch was asked once, rather than the database closing under it in ACCEPTING.
    expect((await second.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'CONFIRMING',
      attempts: 1,
      lastError: 'the hub has no such transfer yet (3208)',
    });
    expect(fakeSwitch.requests.filter((r) => r.method === 'GET').map((r) => r.path)).toEqual([`/transfers/${transferId}`]);
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('a refund pending at the restart is made by the worker afterwards', async () => {
    const { first, restart, clock } = await restartable();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    first.fakeSwitch.script(home, { accept: { status: 500 } });
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    await crashIn(first, home, 'QUOTED', 'ACCEPTING');
    await crashIn(first, home, 'ACCEPTING', 'REFUNDING');
    const second = await restart();
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    clock.advance(5_001);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect((await second.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED' });
  });

  it('mobile-operator: cut off before the prompt, the worker prompts once the institution says it never saw it', async () => {
    const env = { SANDBOX_OUTGOING_FLOW: 'mobile-operator' };
    const { first, restart, clock } = await restartable(env);
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const transferId = String((await initiate(first, body))['transferId']);
    await crashIn(first, home, 'QUOTED', 'COLLECTING');
    const second = await restart();
    clock.advance(5_001);
    await second.app.outgoingRecovery.runOnce();
    expect(((await second.callOutgoing('GET', `/send-money/${transferId}`)).body as Body)['state']).toBe('AWAITING_DEBIT');
    expect(await second.app.sandbox?.transactionStatus(transferId)).toBe('pending');
  });

  it('an initiation cut off by a crash ends as failed once the switch could no longer be working on it', async () => {
    const { first, restart, fakeSwitch, clock } = await restartable();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    // What the process stored before it died inside POST /transfers.
    await new SqlOutgoingStore(first.app.database).insert({
      homeTransactionId: home,
      requestHash: requestHash({ kind: 'SEND_MONEY', body }),
      kind: 'SEND_MONEY',
      amountType: 'SEND',
      flow: 'bank',
      payerId: '260971000002',
      payeeIdType: 'MSISDN',
      payeeId: String(body['payeeId']),
      sendAmount: '100',
      sendCurrency: 'ZMW',
      receiveCurrency: 'ZMW',
      createdAt: clock.now().toISOString(),
    });
    const second = await restart();
    const retried = await second.callOutgoing('POST', '/send-money', body);
    expect(retried).toEqual({ status: 409, body: { statusCode: '3106', message: `Payment is in another state: payment ${home} is being initiated; ask again shortly` } });
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    clock.advance(1_500 + 5_001);
    // An initiation may hold two blocking calls (transfer and conversion): not yet.
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    clock.advance(1_500);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await second.callOutgoing('POST', '/send-money', body)).toEqual({
      status: 504,
      body: { statusCode: '2004', message: 'Switch connector timed out: initiation interrupted; no money moved, start again with a new homeTransactionId' },
    });
    expect(fakeSwitch.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });
});
