import { afterEach, describe, expect, it } from 'vitest';
import { interceptCoreBanking, type CoreBankingOperation } from '../../src/adapters/core-banking/intercept.js';
import { ConnectorError } from '../../src/domain/errors.js';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import { SdkClient } from '../../src/adapters/switch/sdk-client.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';
import type { OutboundTransferRequest, TransferContinuation } from '../../src/ports/outgoing-switch.js';
import type { SwitchConnector } from '../../src/ports/switch-connector.js';
import { hubHasNoSuchTransfer, startFakeSwitch, type FakeSwitch } from '../support/fake-switch.js';
import { ManualClock, replicaDatabase, type Harness } from '../support/harness.js';
import { PAYER_ACCOUNT, channelDebit, initiate, sendMoneyBody } from '../support/outgoing-bodies.js';
import { balances, startHarness } from '../support/sandbox-harness.js';

/**
 * Found by review: a replica's accept still on its way to the switch connector when another
 * replica's recovery worker, past the transfer timeout and on the hub's "no such transfer",
 * refunded the customer. The accept then completed the transfer, and its COMPLETED was dropped
 * without a word: the customer paid back and the payee paid, nobody told. Such a payment is now
 * flagged as a contradiction, which outlives the refund's end.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** The real SdkClient, whose accepts (acceptQuote true) wait before leaving until the test lets them go. */
class AcceptsHeld implements SwitchConnector {
  readonly #client: SdkClient;
  readonly #gate: Promise<void>;
  #open = (): void => undefined;
  #entered = (): void => undefined;
  readonly entered: Promise<void>;

  constructor(baseUrl: string) {
    this.#client = new SdkClient({ baseUrl, timeoutMs: 2000, transferTimeoutMs: 1500 });
    this.#gate = new Promise((resolve) => (this.#open = resolve));
    this.entered = new Promise((resolve) => (this.#entered = resolve));
  }

  letGo(): void {
    this.#open();
  }

  getTransfer(transferId: string) {
    return this.#client.getTransfer(transferId);
  }

  initiateTransfer(request: OutboundTransferRequest) {
    return this.#client.initiateTransfer(request);
  }

  async continueTransfer(transferId: string, continuation: TransferContinuation) {
    if ('acceptQuote' in continuation && continuation.acceptQuote === true) {
      this.#entered();
      await this.#gate;
    }
    return this.#client.continueTransfer(transferId, continuation);
  }

  registerIdentifiers(...args: Parameters<SdkClient['registerIdentifiers']>) {
    return this.#client.registerIdentifiers(...args);
  }

  deregisterIdentifier(...args: Parameters<SdkClient['deregisterIdentifier']>) {
    return this.#client.deregisterIdentifier(...args);
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}

/** Refunds held at the institution until the test lets them through. */
function refundsHeld(): { wrap: (inner: CoreBanking) => CoreBanking; entered: Promise<void>; letThrough: () => void } {
  let letThrough = (): void => undefined;
  const gate = new Promise<void>((resolve) => (letThrough = resolve));
  let signal = (): void => undefined;
  const entered = new Promise<void>((resolve) => (signal = resolve));
  const wrap = (inner: CoreBanking): CoreBanking => ({
    ...interceptCoreBanking(inner, async <T>(name: CoreBankingOperation, call: () => Promise<T>): Promise<T> => {
      if (name !== 'refund') return call();
      signal();
      await gate;
      return call();
    }),
    capabilities: inner.capabilities,
  });
  return { wrap, entered, letThrough: () => letThrough() };
}

async function stateOf(h: Harness, transferId: string): Promise<Record<string, unknown>> {
  return (await h.callOutgoing('GET', `/send-money/${transferId}`)).body as Record<string, unknown>;
}

const CONTRADICTION = 'the switch reported COMPLETED, but the payment is REFUNDED: reconcile by hand';

describe('an accept that completes after another replica refunded the customer', () => {
  async function replicas(options: { wrapSecond?: (inner: CoreBanking) => CoreBanking } = {}): Promise<{ first: Harness; second: Harness; fakeSwitch: FakeSwitch; accepts: AcceptsHeld }> {
    const clock = new ManualClock();
    const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
    const accepts = new AcceptsHeld(fakeSwitch.url);
    const first = await startHarness({ fakeSwitch, clock, overrides: { switchConnector: accepts } });
    const second = await startHarness({ fakeSwitch, clock, dataDir: first.dataDir, overrides: { database: replicaDatabase(first.dataDir), ...(options.wrapSecond === undefined ? {} : { wrapCoreBanking: options.wrapSecond }) } });
    cleanups.push(async () => {
      accepts.letGo();
      await second.stop();
      await first.close();
      await accepts.close();
      await fakeSwitch.close();
    });
    return { first, second, fakeSwitch, accepts };
  }

  /**
   * A debited payment whose accept the first replica holds before it leaves; the hub has no such
   * transfer, and the clock is past the accept's time (1.5 s) and 5 s: the other replica's
   * recovery worker takes it over and refunds.
   */
  async function acceptHeldPastItsTime(first: Harness, fakeSwitch: FakeSwitch, accepts: AcceptsHeld): Promise<{ home: string; transferId: string; accepted: ReturnType<Harness['callOutgoing']> }> {
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    const accepted = first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    await accepts.entered;
    fakeSwitch.setTransferStatus(transferId, hubHasNoSuchTransfer(transferId));
    first.clock.advance(1_500 + 5_001);
    return { home, transferId, accepted };
  }

  it('is flagged as a contradiction on the refunded payment, with the switch\'s word, and logged; before, it was dropped', async () => {
    const { first, second, fakeSwitch, accepts } = await replicas();
    // The accept has not left the first replica: the second replica's recovery worker refunds.
    const { home, transferId, accepted } = await acceptHeldPastItsTime(first, fakeSwitch, accepts);
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    await second.app.outgoingRecovery.runOnce();
    expect(await stateOf(second, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    expect((await balances(second)).of(PAYER_ACCOUNT).balance).toBe('1200.5');

    // Now the accept goes out and the switch completes the transfer.
    accepts.letGo();
    await accepted;
    expect(fakeSwitch.transferOf(home)?.state).toBe('COMPLETED');
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: true, lastError: CONTRADICTION, switchState: 'COMPLETED' });
    // Refunded once: the contradiction moves no money.
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    const detail = (await first.callOperations('GET', `/operations/items/outgoing_payment/${home}`)).body as { history: Array<Record<string, unknown>> };
    expect(detail.history.at(-1)).toMatchObject({ seq: 8, event: 'attempt', fromState: 'REFUNDED', toState: 'REFUNDED', cause: 'request', needsAttention: true });
  });

  it('flags a payment still REFUNDING, and the flag outlives the refund\'s end', async () => {
    const refunds = refundsHeld();
    const { first, second, fakeSwitch, accepts } = await replicas({ wrapSecond: refunds.wrap });
    const { home, transferId, accepted } = await acceptHeldPastItsTime(first, fakeSwitch, accepts);
    const recovery = second.app.outgoingRecovery.runOnce();
    await refunds.entered;
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDING' });

    accepts.letGo();
    await accepted;
    expect(await stateOf(first, transferId)).toMatchObject({
      state: 'REFUNDING',
      needsAttention: true,
      lastError: 'the switch reported COMPLETED, but the payment is REFUNDING: reconcile by hand',
    });

    refunds.letThrough();
    await recovery;
    expect(await stateOf(first, transferId)).toMatchObject({
      state: 'REFUNDED',
      needsAttention: true,
      lastError: 'the switch reported COMPLETED, but the payment is REFUNDING: reconcile by hand',
    });
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('holds back a refund not made yet: not paid by the recovery worker, the channel not told "refunded", resolved COMPLETED by an operator', async () => {
    let refundCalls = 0;
    // The second replica's first refund fails (the institution down): the payment stays REFUNDING.
    const failFirstRefund = (inner: CoreBanking): CoreBanking => ({
      ...interceptCoreBanking(inner, async <T>(name: CoreBankingOperation, call: () => Promise<T>): Promise<T> => {
        if (name !== 'refund') return call();
        refundCalls += 1;
        if (refundCalls === 1) throw new ConnectorError('InstitutionUnavailable', 'down for the test');
        return call();
      }),
      capabilities: inner.capabilities,
    });
    const { first, second, fakeSwitch, accepts } = await replicas({ wrapSecond: failFirstRefund });
    const { home, transferId, accepted } = await acceptHeldPastItsTime(first, fakeSwitch, accepts);
    await second.app.outgoingRecovery.runOnce();
    expect(await stateOf(second, transferId)).toMatchObject({ state: 'REFUNDING', attempts: 1 });
    accepts.letGo();
    await accepted;
    expect(fakeSwitch.transferOf(home)?.state).toBe('COMPLETED');
    const held = 'the switch reported COMPLETED, but the payment is REFUNDING: reconcile by hand';
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDING', needsAttention: true, lastError: held, switchState: 'COMPLETED' });

    // The recovery worker's passes pay nothing: before, the second pass refunded the customer too.
    for (let pass = 0; pass < 3; pass += 1) {
      first.clock.advance(10 * 60_000);
      await second.app.outgoingRecovery.runOnce();
    }
    expect(refundCalls).toBe(1);
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDING', needsAttention: true, lastError: held });
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // The channel's retried accept is not told that the customer is refunded.
    expect(await second.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 504,
      body: { statusCode: '2004', message: 'Switch connector timed out: refund held back: the switch reported COMPLETED after it began; an operator decides' },
    });

    const resolve = `/operations/items/outgoing_payment/${home}/resolve`;
    const resolved = await first.callOperations('POST', resolve, { outcome: 'COMPLETED', reason: 'hub completed it', evidence: 'no refund under the reference in the core banking journal, ticket 42' });
    expect(resolved.status).toBe(200);
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'COMPLETED', needsAttention: false, lastError: null, switchState: 'COMPLETED' });
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    await second.app.outgoingRecovery.runOnce();
    expect(refundCalls).toBe(1);
  });

  it('refuses COMPLETED for a REFUNDING payment whose refund the switch\'s own word called for', async () => {
    const { first } = await replicas();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const transferId = String((await initiate(first, body))['transferId']);
    await channelDebit(first, home, '100');
    // A refund the switch's ABORTED called for, flagged after the institution refused it.
    const store = new SqlOutgoingStore(first.app.database, () => first.clock.now());
    expect(await store.transition(home, ['QUOTED'], 'ACCEPTING')).toMatchObject({ state: 'ACCEPTING' });
    expect(await store.transition(home, ['ACCEPTING'], 'REFUNDING', { needsAttention: true, lastError: 'refund refused', switchState: 'ABORTED' })).toMatchObject({ state: 'REFUNDING' });
    const answer = await first.callOperations('POST', `/operations/items/outgoing_payment/${home}/resolve`, { outcome: 'COMPLETED', reason: 'try', evidence: 'none' });
    expect(answer).toEqual({
      status: 409,
      body: { statusCode: '3106', message: expect.stringContaining('a REFUNDING payment is resolved by hand to REFUNDED; COMPLETED only for a refund held back') as unknown },
    });
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDING' });
  });

  it('an accept waiting for a free connection to the switch gives up at its time and never goes out after the other replica refunded', async () => {
    const clock = new ManualClock();
    const fakeSwitch = await startFakeSwitch({ now: () => clock.now() });
    // One connection stands for the 64 of production, each held by a slow call (a POST /transfers may take 100 s).
    const narrow = new SdkClient({ baseUrl: fakeSwitch.url, timeoutMs: 3000, transferTimeoutMs: 1500, connections: 1 });
    const first = await startHarness({ fakeSwitch, clock, overrides: { switchConnector: narrow } });
    const second = await startHarness({ fakeSwitch, clock, dataDir: first.dataDir, overrides: { database: replicaDatabase(first.dataDir) } });
    cleanups.push(async () => {
      await second.stop();
      await first.close();
      await narrow.close();
      await fakeSwitch.close();
    });
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    const transferId = String((await initiate(second, body))['transferId']);
    await channelDebit(second, home, '100');

    // A question about another transfer holds the first replica's only connection for longer than
    // the accept's time (the switch is slow on it): the accept cannot have it before its deadline.
    fakeSwitch.setTransferStatus('other-transfer', 'hang');
    const hung = narrow.getTransfer('other-transfer').catch((error: unknown) => error);
    const questions = () => fakeSwitch.requests.filter((r) => r.method === 'GET' && r.path === '/transfers/other-transfer');
    for (let i = 0; i < 200 && questions().length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(questions()).toHaveLength(1);
    const accepted = first.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    for (let i = 0; i < 200 && (await stateOf(second, transferId))['state'] !== 'ACCEPTING'; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await stateOf(second, transferId)).toMatchObject({ state: 'ACCEPTING' });

    fakeSwitch.setTransferStatus(transferId, hubHasNoSuchTransfer(transferId));
    clock.advance(1_500 + 5_001);
    await second.app.outgoingRecovery.runOnce();
    expect(await stateOf(second, transferId)).toMatchObject({ state: 'REFUNDED' });

    await accepted;
    expect(await hung).toMatchObject({ errorName: 'SdkTimeout' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Before, the accept went out once the connection was free, and the switch completed the transfer.
    expect(fakeSwitch.requests.filter((r) => r.method === 'PUT' && r.path === `/transfers/${transferId}`)).toEqual([]);
    expect(fakeSwitch.transferOf(home)?.state).toBe('WAITING_FOR_QUOTE_ACCEPTANCE');
    expect(await stateOf(first, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false, lastError: null });
    expect((await balances(first)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });
});
