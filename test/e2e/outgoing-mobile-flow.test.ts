import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../src/domain/errors.js';
import { addMoney, type Money } from '../../src/domain/money.js';
import { TEST_CALLBACK_SECRET, TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { PAYER_ACCOUNT, SETTLEMENT_ACCOUNT, callbackHeaders, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import type { OutboundScript } from '../support/fake-switch.js';
import { interceptOne } from '../support/intercept-one.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const MOBILE = { SANDBOX_OUTGOING_FLOW: 'mobile-operator', CALLBACK_WAIT_MS: '60000' };

function callback(transferId: string, code: string): Promise<{ status: number; body: unknown }> {
  return h.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: code } }, callbackHeaders(TEST_CALLBACK_SECRET));
}

function switchPuts(): unknown[] {
  return h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body);
}

/** Initiates and accepts: the institution is asked to debit the customer, who has not answered yet. */
async function acceptedPending(script: OutboundScript = {}, overrides: Record<string, unknown> = {}): Promise<{ transferId: string; home: string }> {
  const body = sendMoneyBody(overrides);
  const home = String(body['homeTransactionId']);
  h.fakeSwitch.script(home, script);
  const terms = await initiate(h, body);
  const transferId = String(terms['transferId']);
  const accepted = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
  expect(accepted).toEqual({
    status: 202,
    body: { homeTransactionId: home, transferId, state: 'AWAITING_DEBIT', collection: { status: 'pending', institutionReference: `sandbox-collection-${transferId}` } },
  });
  return { transferId, home };
}

async function approve(transferId: string, approved: boolean): Promise<void> {
  await h.app.sandbox?.settleCollection(transferId, approved);
}

describe('outgoing payments, mobile-operator flow', () => {
  it.each(['fspiop', 'iso20022'])('accept prompts the customer; the callback TS tells the switch to proceed; repeated callbacks change nothing (%s)', async (apiType) => {
    h = await startHarness({ env: { ...MOBILE, API_TYPE: apiType } });
    const before = await balances(h);
    const { transferId } = await acceptedPending();
    expect(await balances(h)).toEqual(before);
    expect(switchPuts()).toEqual([]);
    // A repeated accept while the prompt is pending answers the same and prompts once.
    expect((await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);

    await approve(transferId, true);
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    const after = await balances(h);
    expect(after.of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(addMoney(zmw(before.of(SETTLEMENT_ACCOUNT).balance), zmw('100')).amount);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', callbackCode: 'TS', flow: 'mobile-operator' });

    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(await callback(transferId, 'TF')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    expect((await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).body).toMatchObject({ state: 'COMPLETED' });
    expect(await balances(h)).toEqual(after);
  });

  it('any other callback code tells the switch false; nothing was debited, nothing refunded', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId } = await acceptedPending();
    await approve(transferId, false);
    expect(await callback(transferId, 'TF')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'ABORTED',
      callbackCode: 'TF',
      error: { statusCode: '4100', name: 'PayerRejected', message: 'Payer rejected the payment: the customer was not debited' },
    });
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
    expect(await balances(h)).toEqual(before);
  });

  it('acceptQuote false and an expired quote prompt nobody and tell the switch false', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const declined = await initiate(h, sendMoneyBody());
    expect((await h.callOutgoing('PUT', `/send-money/${String(declined['transferId'])}`, { acceptQuote: false })).body).toEqual({
      statusCode: '5101',
      message: 'Quote not accepted: the customer declined the terms',
    });
    const late = await initiate(h, sendMoneyBody());
    h.clock.advance(3_600_000);
    expect((await h.callOutgoing('PUT', `/send-money/${String(late['transferId'])}`, { acceptQuote: true })).status).toBe(422);
    expect(switchPuts()).toEqual([{ acceptQuote: false }, { acceptQuote: false }]);
    expect(await h.app.sandbox?.transactionStatus(String(late['transferId']))).toBe('not-found');
    expect(await balances(h)).toEqual(before);
  });

  it('a payer the institution refuses: the error is answered, the switch told false', async () => {
    h = await startHarness({ env: MOBILE });
    const body = sendMoneyBody({ payer: { name: 'Kondwani Tembo', payerId: '260971000004' } });
    const terms = await initiate(h, body);
    const accepted = await h.callOutgoing('PUT', `/send-money/${String(terms['transferId'])}`, { acceptQuote: true });
    expect(accepted).toEqual({ status: 422, body: { statusCode: '4100', message: 'Payer rejected the payment: the account is blocked' } });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
  });

  it('the callback needs its own secret; an unknown transaction id is 404; a callback before the accept is 409', async () => {
    h = await startHarness({ env: MOBILE });
    const terms = await initiate(h, sendMoneyBody());
    const transferId = String(terms['transferId']);
    const body = { transaction: { id: transferId, status_code: 'TS' } };
    const unauthorized = { status: 401, body: { statusCode: '3000', message: 'Unauthorized: missing or wrong x-callback-secret header' } };
    expect(await h.callOutgoing('PUT', '/callback', body, {})).toEqual(unauthorized);
    expect(await h.callOutgoing('PUT', '/callback', body, callbackHeaders(TEST_CHANNEL_API_KEY))).toEqual(unauthorized);
    expect(await h.callOutgoing('PUT', '/callback', body, { 'x-api-key': TEST_CHANNEL_API_KEY })).toEqual(unauthorized);
    expect((await h.callOutgoing('POST', '/send-money', sendMoneyBody(), { 'x-api-key': TEST_CALLBACK_SECRET })).status).toBe(401);
    expect(await callback('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', 'TS')).toEqual({
      status: 404,
      body: { statusCode: '3208', message: 'Transfer not found: no outgoing payment with transferId 01JDV6M3AZ6XK1B0SPZ8Q4W2RA' },
    });
    expect(await callback(transferId, 'TS')).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Payment is in another state: the customer has not accepted this payment' },
    });
    expect((await h.callOutgoing('PUT', '/callback', { transaction: { id: transferId } }, callbackHeaders(TEST_CALLBACK_SECRET))).body).toEqual({
      statusCode: '3102',
      message: "Missing mandatory element: body/transaction must have required property 'status_code'",
    });
    expect(switchPuts()).toEqual([]);
  });

  it('the switch failing after the debit refunds the collection exactly once', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId } = await acceptedPending({ accept: { status: 500 } });
    await approve(transferId, true);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    h.clock.advance(3_600_000);
    await h.app.outgoingRecovery.runOnce();
    expect(await balances(h)).toEqual(before);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
  });

  it('without a callback the institution is asked after CALLBACK_WAIT_MS, and the payment proceeds as if it had called', async () => {
    h = await startHarness({ env: MOBILE });
    const { transferId } = await acceptedPending();
    h.clock.advance(59_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    h.clock.advance(1_001);
    // Still pending at the institution: asked again later.
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'AWAITING_DEBIT', lastError: 'debit still pending at the institution' });
    await approve(transferId, true);
    h.clock.advance(1_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', callbackCode: null });
    // The callback arriving late changes nothing.
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('a declined prompt found by the status query aborts like a failed callback', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId } = await acceptedPending();
    await approve(transferId, false);
    h.clock.advance(60_001);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
    expect(((await h.callOutgoing('GET', `/send-money/${transferId}`)).body as Body)['state']).toBe('ABORTED');
    expect(await balances(h)).toEqual(before);
  });

  it('a repeated prompt the institution declines, while the first one is live, waits on the institution\'s status instead of aborting', async () => {
    // The first prompt reaches the customer but is answered after the timeout; the institution
    // refuses a second prompt under the same reference.
    let collects = 0;
    h = await startHarness({
      env: MOBILE,
      overrides: {
        wrapCoreBanking: interceptOne('collect', async (call, count) => {
          collects = count;
          if (count === 1) {
            await call();
            throw new ConnectorError('InstitutionTimeout', 'the answer came after the timeout');
          }
          throw new ConnectorError('ModifiedRequest', 'a transaction with this id exists');
        }),
      },
    });
    const body = sendMoneyBody();
    const terms = await initiate(h, body);
    const transferId = String(terms['transferId']);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 202,
      body: { homeTransactionId: body['homeTransactionId'], transferId, state: 'COLLECTING', collection: { status: 'unknown' } },
    });
    // A retry before the failed prompt's next attempt is due prompts nobody: the first may be live.
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 202,
      body: { homeTransactionId: body['homeTransactionId'], transferId, state: 'COLLECTING', collection: { status: 'unknown' } },
    });
    expect(collects).toBe(1);
    // Once it is due, the channel's retry prompts again: declined, the first is still pending.
    h.clock.advance(2_000);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 202,
      body: { homeTransactionId: body['homeTransactionId'], transferId, state: 'AWAITING_DEBIT', collection: { status: 'pending' } },
    });
    expect(collects).toBe(2);
    expect(switchPuts()).toEqual([]);
    // The customer approves the first prompt: the payment completes.
    await approve(transferId, true);
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('a debit the institution confirms for a payment another actor aborted meanwhile is flagged for a refund by hand', async () => {
    let home = '';
    h = await startHarness({
      env: MOBILE,
      overrides: {
        wrapCoreBanking: interceptOne('collect', async (call) => {
          await call();
          // Meanwhile another replica aborted the payment (its own repeated prompt declined).
          await sql`update outgoing_payments set state = 'ABORTED' where home_transaction_id = ${home}`.execute(h.app.database.reader());
          return { status: 'succeeded' };
        }),
      },
    });
    const body = sendMoneyBody();
    home = String(body['homeTransactionId']);
    const terms = await initiate(h, body);
    const transferId = String(terms['transferId']);
    await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'ABORTED',
      needsAttention: true,
      lastError: 'the institution reports the customer debited after the payment was aborted: refund the customer by hand',
    });
    expect(switchPuts()).toEqual([]);
  });

  it('aborted by an operator, a retried accept is 409 (not 500), and a debit the institution confirms afterwards is flagged for a refund by hand', async () => {
    h = await startHarness({ env: { ...MOBILE, RECOVERY_ATTENTION_AFTER_ATTEMPTS: '1' } });
    const { transferId, home } = await acceptedPending();
    // The worker's first status query finds the prompt still pending: flagged, then resolved by an
    // operator as aborted on the institution's word (out of band).
    h.clock.advance(60_001);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'AWAITING_DEBIT', needsAttention: true });
    expect((await h.callOperations('POST', `/operations/items/outgoing_payment/${home}/resolve`, { outcome: 'ABORTED', reason: 'prompt cancelled', evidence: 'call to the operator' })).status).toBe(200);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Payment is in another state: the payment was aborted; see GET /send-money/{transferId}' },
    });
    // The customer approves the prompt after all.
    await approve(transferId, true);
    const debited = await balances(h);
    expect(debited.of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(await callback(transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'ABORTED',
      needsAttention: true,
      lastError: 'the institution reports the customer debited after the payment was aborted: refund the customer by hand',
    });
    expect(switchPuts()).toEqual([]);
    expect(await balances(h)).toEqual(debited);
    // Once the customer is refunded by hand, the operator clears the flag; the payment stays ABORTED.
    const cleared = await h.callOperations('POST', `/operations/items/outgoing_payment/${home}/resolve`, { outcome: 'ABORTED', reason: 'refunded at the counter', evidence: 'receipt 88' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ state: 'ABORTED', needsAttention: false });
  });
});

describe('outgoing payments, mobile-operator flow: the sandbox\'s prompts', () => {
  function answer(reference: string, outcome: string, token?: string | null): Promise<{ status: number; body: unknown }> {
    return h.callOperations('POST', `/operations/sandbox/collections/${reference}`, { outcome, reason: 'customer answered at the branch' }, token);
  }

  it('an operator approves the prompt: the customer is debited and the payment completes, audited; a second answer is 409', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId, home } = await acceptedPending();
    expect((await answer(transferId, 'approve', null)).status).toBe(401);
    const approved = await answer(transferId, 'approve');
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ reference: transferId, collection: 'succeeded', payment: { subject: 'outgoing_payment', id: home, transferId, state: 'COMPLETED' } });
    expect(switchPuts()).toEqual([{ acceptQuote: true }]);
    const after = await balances(h);
    expect(after.of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(addMoney(zmw(before.of(SETTLEMENT_ACCOUNT).balance), zmw('100')).amount);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', flow: 'mobile-operator' });

    expect(await answer(transferId, 'approve')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Transfer already finished differently: the collection already succeeded' } });
    expect(await answer(transferId, 'decline')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Transfer already finished differently: the collection already succeeded' } });
    expect(await answer('01JDV6M3AZ6XK1B0SPZ8Q4W2RA', 'approve')).toEqual({ status: 404, body: { statusCode: '3208', message: 'Transfer not found: no collection under this reference' } });
    expect((await h.callOperations('POST', `/operations/sandbox/collections/${transferId}`, { outcome: 'maybe', reason: 'x' })).status).toBe(400);
    expect(await balances(h)).toEqual(after);
    const history = await h.app.audit.history('outgoing_payment', home);
    expect(history.filter((event) => event.cause === 'operator').map((event) => [event.fromState, event.toState, event.operator, event.reason])).toEqual([
      ['AWAITING_DEBIT', 'ACCEPTING', 'alice', 'answer-prompt approve: customer answered at the branch'],
      ['ACCEPTING', 'COMPLETED', 'alice', 'answer-prompt approve: customer answered at the branch'],
    ]);
  });

  it('an operator declines the prompt: the payment is aborted, nothing debited', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId } = await acceptedPending();
    const declined = await answer(transferId, 'decline');
    expect(declined).toMatchObject({ status: 200, body: { collection: 'failed', payment: { state: 'ABORTED' } } });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
    expect(await balances(h)).toEqual(before);
  });

  it('a prompt unanswered for 5 minutes expires: the status query aborts the payment, a late approval is 409 and debits nobody', async () => {
    h = await startHarness({ env: MOBILE });
    const before = await balances(h);
    const { transferId } = await acceptedPending();
    h.clock.advance(5 * 60_000);
    await h.app.outgoingRecovery.runOnce();
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'ABORTED',
      error: { statusCode: '4100', name: 'PayerRejected', message: 'Payer rejected the payment: the customer was not debited' },
    });
    expect(switchPuts()).toEqual([{ acceptQuote: false }]);
    expect(await answer(transferId, 'approve')).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Transfer already finished differently: the collection already failed (the prompt expired)' },
    });
    expect(await h.app.sandbox?.transactionStatus(transferId)).toBe('failed');
    expect(await balances(h)).toEqual(before);
  });
});

/** An amount of the demo institution's currency, for the money helpers. */
function zmw(amount: string): Money {
  return { amount, currency: 'ZMW' };
}
