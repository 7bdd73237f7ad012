import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import { SdkClient } from '../../src/adapters/switch/sdk-client.js';
import { OutgoingSettlement } from '../../src/aggregate/outgoing-settlement.js';
import { intentHold } from '../../src/shared/held-while.js';
import { startFakeSwitch } from '../support/fake-switch.js';
import { ManualClock, TEST_CALLBACK_SECRET, replicaDatabase, type Harness } from '../support/harness.js';
import { PAYER_ACCOUNT, callbackHeaders, channelDebit, initiate, sendMoneyBody } from '../support/outgoing-bodies.js';
import { balances, startHarness } from '../support/sandbox-harness.js';
import { interceptCoreBanking, type CoreBankingOperation } from '../../src/adapters/core-banking/intercept.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';

/**
 * Found by the two-replica test (test/replicas/replicas.test.ts): a replica that lost the race
 * to move an outgoing payment to ACCEPTING re-read it, found it ACCEPTING, and told the switch
 * to accept a second time. The switch answers a second accept with an error, and that error
 * started a refund, so a customer whose transfer went through could be paid back as well.
 * Here each interleaving is played out deterministically: the first accept hangs at the switch
 * while the second actor comes in.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function switchPuts(h: Harness, transferId: string): unknown[] {
  return h.fakeSwitch.requests.filter((r) => r.method === 'PUT' && r.path === `/transfers/${transferId}`).map((r) => r.body);
}

async function untilSwitchGot(h: Harness, transferId: string): Promise<void> {
  for (let i = 0; i < 200 && switchPuts(h, transferId).length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(switchPuts(h, transferId)).toEqual([{ acceptQuote: true }]);
}

/**
 * An institution whose collects (payment prompts) the test counts on every replica, and whose
 * first `held` collects wait at the institution until the test lets them through (`sent` once the
 * last of them is out); it declares how long a collect may take, as an HTTP adapter does from its
 * timeouts.
 */
function promptsHeld(collectTakesUpToMs: number, held = 1): { wrap: (inner: CoreBanking) => CoreBanking; sent: Promise<void>; letThrough: () => void; readonly collects: number } {
  let letThrough = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    letThrough = resolve;
  });
  let signalSent = (): void => undefined;
  const sent = new Promise<void>((resolve) => {
    signalSent = resolve;
  });
  let collects = 0;
  const wrap = (inner: CoreBanking): CoreBanking => ({
    ...interceptCoreBanking(inner, async <T>(name: CoreBankingOperation, call: () => Promise<T>): Promise<T> => {
      if (name !== 'collect') return call();
      collects += 1;
      if (collects === held) signalSent();
      if (collects <= held) await gate;
      return call();
    }),
    capabilities: { ...inner.capabilities, collectTakesUpToMs },
  });
  return {
    wrap,
    sent,
    letThrough: () => letThrough(),
    get collects() {
      return collects;
    },
  };
}

describe('a payment prompt still on its way is not sent again by another replica', () => {
  async function twoReplicas(prompts: ReturnType<typeof promptsHeld>): Promise<{ first: Harness; second: Harness; transferId: string }> {
    const clock = new ManualClock();
    const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
    const env = { SANDBOX_OUTGOING_FLOW: 'mobile-operator', CALLBACK_WAIT_MS: '600000' };
    const first = await startHarness({ fakeSwitch, clock, env, overrides: { wrapCoreBanking: prompts.wrap } });
    const second = await startHarness({ fakeSwitch, clock, env, dataDir: first.dataDir, overrides: { database: replicaDatabase(first.dataDir), wrapCoreBanking: prompts.wrap } });
    cleanups.push(async () => {
      prompts.letThrough();
      await second.stop();
      await first.close();
      await fakeSwitch.close();
    });
    const transferId = String((await initiate(first, sendMoneyBody()))['transferId']);
    return { first, second, transferId };
  }

  it("the other replica's recovery worker leaves a COLLECTING payment alone while its prompt may be out (collectTakesUpToMs), then takes it over", async () => {
    const prompts = promptsHeld(30_000);
    const { first, second, transferId } = await twoReplicas(prompts);
    const accepted = first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    await prompts.sent;
    // Older than the intents' 5 s, younger than the prompt's 30 s (+ 5 s).
    first.clock.advance(10_000);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(prompts.collects).toBe(1);
    // Past 35 s the first replica's call must have ended (its process may be gone): the
    // institution has no such prompt, so the recovery worker prompts.
    first.clock.advance(26_000);
    expect(await second.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 0 });
    expect(prompts.collects).toBe(2);
    expect((await second.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'AWAITING_DEBIT' });
    prompts.letThrough();
    expect((await accepted).status).toBe(202);
  });

  it('a retried accept on the other replica waits for the prompt under way instead of prompting again', async () => {
    const prompts = promptsHeld(30_000);
    const { first, second, transferId } = await twoReplicas(prompts);
    const accepted = first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    await prompts.sent;
    setTimeout(() => prompts.letThrough(), 300);
    const retried = await second.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    expect(retried).toMatchObject({ status: 202, body: { state: 'AWAITING_DEBIT', collection: { status: 'pending' } } });
    expect(await accepted).toMatchObject({ status: 202, body: { state: 'AWAITING_DEBIT' } });
    expect(prompts.collects).toBe(1);
  });
});

describe('a prompt sent again is out as long as the first: nobody prompts a third time', () => {
  it("a retried accept on a third replica while the recovery worker's repeat prompt is out waits for it (found by review)", async () => {
    // Prompts 1 and 2 stay on their way.
    const prompts = promptsHeld(30_000, 2);
    const { wrap } = prompts;
    const open = prompts.letThrough;
    const clock = new ManualClock();
    const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
    const env = { SANDBOX_OUTGOING_FLOW: 'mobile-operator', CALLBACK_WAIT_MS: '600000' };
    const a = await startHarness({ fakeSwitch, clock, env, overrides: { wrapCoreBanking: wrap } });
    const b = await startHarness({ fakeSwitch, clock, env, dataDir: a.dataDir, overrides: { database: replicaDatabase(a.dataDir), wrapCoreBanking: wrap } });
    const c = await startHarness({ fakeSwitch, clock, env, dataDir: a.dataDir, overrides: { database: replicaDatabase(a.dataDir), wrapCoreBanking: wrap } });
    cleanups.push(async () => {
      open();
      await c.stop();
      await b.stop();
      await a.close();
      await fakeSwitch.close();
    });
    const transferId = String((await initiate(a, sendMoneyBody()))['transferId']);
    // Replica a sends prompt 1, and is not heard of again.
    const first = a.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    for (let waited = 0; prompts.collects === 0 && waited < 2000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
    clock.advance(36_000);
    // Replica b's recovery worker takes it over: not found at the institution, prompt 2 (still out).
    const recovered = b.app.outgoingRecovery.runOnce();
    await prompts.sent;
    clock.advance(1_000);
    // The channel retries its accept on replica c: prompt 2 is out, so it waits and prompts nobody.
    setTimeout(() => open(), 300);
    const retried = await c.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    expect(retried).toMatchObject({ status: 202, body: { state: 'AWAITING_DEBIT' } });
    expect(prompts.collects).toBe(2);
    await recovered;
    expect((await first).status).toBe(202);
    expect(prompts.collects).toBe(2);
  });
});

describe('an outgoing payment is accepted at the switch once, whoever else comes in meanwhile', () => {
  it('bank flow: a retried accept on another replica while the first is at the switch sends no second accept and refunds nobody', async () => {
    const clock = new ManualClock();
    const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
    // Two replicas: two connectors on one database and one switch.
    const first = await startHarness({ fakeSwitch, clock });
    const second = await startHarness({ fakeSwitch, clock, dataDir: first.dataDir, overrides: { database: replicaDatabase(first.dataDir) } });
    cleanups.push(async () => {
      await second.stop();
      await first.close();
      await fakeSwitch.close();
    });
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    fakeSwitch.script(home, { accept: 'hang' });
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    const firstAccept = first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    await untilSwitchGot(first, transferId);

    // The channel retries on the other replica: it waits for the first one's outcome (unknown,
    // after the 1.5 s switch timeout) instead of accepting again.
    const retried = await second.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    expect(retried).toEqual({ status: 504, body: { statusCode: '2004', message: `Switch connector timed out: outcome not known yet; see GET /send-money/${transferId}` } });
    expect((await firstAccept).status).toBe(504);
    expect(switchPuts(first, transferId)).toEqual([{ acceptQuote: true }]);
    expect((await first.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING' });
    // The customer's debit stands until the switch says what happened: nothing refunded.
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('mobile-operator flow: a second replica holding the payment from before the first accepted sends no second accept', async () => {
    const h = await startHarness({ env: { SANDBOX_OUTGOING_FLOW: 'mobile-operator', CALLBACK_WAIT_MS: '60000' } });
    cleanups.push(() => h.close());
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    h.fakeSwitch.script(home, { accept: 'hang' });
    const transferId = String((await initiate(h, body))['transferId']);
    expect((await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    await h.app.sandbox?.settleCollection(transferId, true);
    // The other replica read the payment while it still awaited its debit...
    const store = new SqlOutgoingStore(h.app.database, () => h.clock.now());
    const stale = await store.findByHomeTransactionId(home);
    expect(stale?.state).toBe('AWAITING_DEBIT');
    // ...then this replica's callback moved it to ACCEPTING and is at the switch with it.
    const callback = h.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, callbackHeaders(TEST_CALLBACK_SECRET));
    await untilSwitchGot(h, transferId);

    // The other replica now learns the debit succeeded (its callback, or its recovery worker).
    const sdk = new SdkClient({ baseUrl: h.fakeSwitch.url, timeoutMs: 2000, transferTimeoutMs: 1500 });
    cleanups.push(() => sdk.close());
    const otherReplica = new OutgoingSettlement(store, h.app.coreBanking, sdk, h.clock, pino({ level: 'silent' }), h.app.config.recovery, intentHold(5000));
    if (stale === undefined) throw new Error('no payment');
    const outcome = await otherReplica.debitSucceeded(stale, { callbackCode: 'TS' });
    expect(outcome.state).toBe('ACCEPTING');
    expect(switchPuts(h, transferId)).toEqual([{ acceptQuote: true }]);
    expect(await callback).toEqual({ status: 200, body: {} });
    expect(switchPuts(h, transferId)).toEqual([{ acceptQuote: true }]);
    expect(await h.app.sandbox?.transactionStatus(transferId)).toBe('succeeded');
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING' });
  });
});
