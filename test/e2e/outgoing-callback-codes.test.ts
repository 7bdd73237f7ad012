import { afterEach, describe, expect, it } from 'vitest';
import { subtractMoney } from '../../src/domain/money.js';
import { TEST_CALLBACK_SECRET } from '../support/harness.js';
import { PAYER_ACCOUNT, callbackHeaders, initiate, sendMoneyBody } from '../support/outgoing-bodies.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const MOBILE = { SANDBOX_OUTGOING_FLOW: 'mobile-operator', CALLBACK_WAIT_MS: '60000' };

describe('a callback whose code decides nothing yet (TA ambiguous, TIP in progress)', () => {
  it.each(['TA', 'TIP'])('%s is confirmed with the institution: still pending changes nothing; once debited, the payment completes', async (code) => {
    h = await startHarness({ env: MOBILE });
    const harness = h;
    const before = await balances(harness);
    const terms = await initiate(harness, sendMoneyBody());
    const transferId = String(terms['transferId']);
    expect((await harness.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    const callback = (statusCode: string) =>
      harness.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: statusCode } }, callbackHeaders(TEST_CALLBACK_SECRET));
    const puts = (): unknown[] => harness.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body);

    // The customer has not answered: the institution says pending, so nothing is decided.
    expect(await callback(code)).toEqual({ status: 200, body: {} });
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'AWAITING_DEBIT', callbackCode: null });
    expect(puts()).toEqual([]);

    // The debit goes through after all: the same code now finds it done, and the switch is told to proceed.
    await harness.app.sandbox?.settleCollection(transferId, true);
    expect(await callback(code)).toEqual({ status: 200, body: {} });
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', callbackCode: code });
    expect(puts()).toEqual([{ acceptQuote: true }]);
    expect(terms['debitAmount']).toEqual({ amount: '100', currency: 'ZMW' });
    const debited = subtractMoney({ amount: before.of(PAYER_ACCOUNT).balance, currency: 'ZMW' }, { amount: '100', currency: 'ZMW' });
    expect((await balances(harness)).of(PAYER_ACCOUNT).balance).toBe(debited.amount);
  });
});

describe('a callback with the secret is still only a hint: the institution decides', () => {
  async function prompted(harness: Harness): Promise<string> {
    const terms = await initiate(harness, sendMoneyBody());
    const transferId = String(terms['transferId']);
    expect((await harness.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    return transferId;
  }

  it('TS with the right secret for a prompt the customer never answered moves nothing and tells the switch nothing', async () => {
    h = await startHarness({ env: MOBILE });
    const harness = h;
    const before = await balances(harness);
    const transferId = await prompted(harness);
    const forged = await harness.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, callbackHeaders(TEST_CALLBACK_SECRET));
    expect(forged).toEqual({ status: 200, body: {} });
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'AWAITING_DEBIT', callbackCode: null });
    expect(harness.fakeSwitch.requests.filter((r) => r.method === 'PUT')).toEqual([]);
    expect(await balances(harness)).toEqual(before);
  });

  it('TS with the right secret for a prompt the customer declined aborts (the institution says failed): the switch is told false', async () => {
    h = await startHarness({ env: MOBILE });
    const harness = h;
    const before = await balances(harness);
    const transferId = await prompted(harness);
    await harness.app.sandbox?.settleCollection(transferId, false);
    const contradicting = await harness.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, callbackHeaders(TEST_CALLBACK_SECRET));
    expect(contradicting).toEqual({ status: 200, body: {} });
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'ABORTED', callbackCode: 'TS', error: { statusCode: '4100' } });
    expect(harness.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: false }]);
    expect(await balances(harness)).toEqual(before);
  });
});
