import { afterEach, describe, expect, it } from 'vitest';
import { refundReference } from '../../src/domain/outgoing-references.js';
import type { OutboundScript } from '../support/fake-switch.js';
import { TEST_CALLBACK_SECRET } from '../support/harness.js';
import { callbackHeaders, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import {
  AIRTEL,
  FINERACT,
  MINIBANK,
  PAYER_MSISDN,
  REST,
  REST_MOBILE,
  SEEDED,
  figures,
  startAdapterHarness,
  writesTo,
  type AdapterRun,
  type AdapterSubject,
} from '../support/adapter-institutions.js';

/**
 * Outgoing payments (port 3004) through the whole connector with CBS_ADAPTER set to each HTTP
 * adapter, in the flow its institution works in: the bank flow (the channel debits the payer
 * at the institution itself) and the mobile-operator flow (the connector asks the institution to
 * collect, and the institution's callback decides). The switch is the fake outbound API; the
 * payer's money is checked on the fixture institution's books after every step.
 */

let run: AdapterRun | undefined;
afterEach(async () => {
  const current = run;
  run = undefined;
  await current?.close();
});

async function start(subject: AdapterSubject, env: Record<string, string> = {}): Promise<AdapterRun> {
  run = await startAdapterHarness(subject, { env });
  return run;
}

function switchPuts(r: AdapterRun): unknown[] {
  return r.h.fakeSwitch.requests.filter((request) => request.method === 'PUT').map((request) => request.body);
}

async function statusOf(r: AdapterRun, transferId: string): Promise<Body> {
  const answer = await r.h.callOutgoing('GET', `/send-money/${transferId}`);
  expect(answer.status).toBe(200);
  return answer.body as Body;
}

/** The payer sent 100 ZMW: it left the payer's account for the float (where customer debits land). */
const DEBITED = { ...SEEDED, float: '1100', available: '1100', payer: '100' };

/** POST /send-money for 100 ZMW from the seeded payer; the switch is scripted first. */
async function quoted(r: AdapterRun, script: OutboundScript = {}): Promise<{ home: string; transferId: string }> {
  const body = sendMoneyBody();
  const home = String(body['homeTransactionId']);
  r.h.fakeSwitch.script(home, script);
  const terms = await initiate(r.h, body);
  expect(terms).toMatchObject({
    homeTransactionId: home,
    state: 'QUOTED',
    amountType: 'SEND',
    transferAmount: { amount: '100', currency: 'ZMW' },
    payeeReceiveAmount: { amount: '99', currency: 'ZMW' },
    fees: { amount: '1', currency: 'ZMW' },
    debitAmount: { amount: '100', currency: 'ZMW' },
  });
  return { home, transferId: String(terms['transferId']) };
}

describe.each([REST, FINERACT, MINIBANK])('outgoing payments, bank flow, through CBS_ADAPTER=$title', (subject) => {
  it('the channel debits the payer at the institution; accept completes at the switch and the connector moves no money', async () => {
    const r = await start(subject);
    const { home, transferId } = await quoted(r);
    r.fixture.debitByChannel(home, PAYER_MSISDN, '100');
    expect(figures(r.fixture)).toEqual(DEBITED);

    const mark = r.fixture.requests.length;
    expect(await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 200,
      body: { homeTransactionId: home, transferId, state: 'COMPLETED' },
    });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(r.fixture.requests.slice(mark)).toEqual([]);
    expect(figures(r.fixture)).toEqual(DEBITED);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', flow: 'bank', needsAttention: false, switchState: 'COMPLETED' });
  });

  it('the switch failing after the accept refunds the channel\'s debit from the float exactly once', async () => {
    const r = await start(subject);
    const { home, transferId } = await quoted(r, { accept: { status: 500 } });
    r.fixture.debitByChannel(home, PAYER_MSISDN, '100');
    const failed = {
      status: 503,
      body: {
        statusCode: '2001',
        message: 'Switch connector request failed: the switch did not complete the transfer (HTTP 500, statusCode 5000); the customer is refunded',
      },
    };
    expect(await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual(failed);
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false });

    // The channel's retry and later recovery passes answer from the record and refund nothing more.
    const mark = r.fixture.requests.length;
    expect(await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual(failed);
    r.h.clock.advance(600_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(writesTo(r.fixture, mark)).toEqual([]);
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });

  it('a refund the institution cannot make yet stays REFUNDING; recovery pays it once when the institution is back', async () => {
    const r = await start(subject);
    const { home, transferId } = await quoted(r, { accept: { status: 500 } });
    r.fixture.debitByChannel(home, PAYER_MSISDN, '100');
    r.fixture.inject('server-error', 'next-write');
    expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(503);
    expect(figures(r.fixture)).toEqual(DEBITED);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDING', attempts: 1, needsAttention: false, nextAttemptAt: '2026-11-23T10:00:01.000Z' });

    r.h.clock.advance(1_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    r.h.clock.advance(600_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(figures(r.fixture)).toEqual(SEEDED);
  });
});

/** What each adapter says of a refund its institution applied then answered 500, as the record keeps it. */
const REFUND_APPLIED_THEN_500: Record<AdapterSubject['adapter'], string> = {
  rest: 'Institution unavailable: rest refund: HTTP 500',
  minibank: 'Institution unavailable: minibank refund: HTTP 500',
  airtel: 'Institution unavailable: airtel refund: disburse: HTTP 500',
  fineract: 'Institution unavailable: fineract refund: deposit and withdraw as one transaction: HTTP 500',
};

describe.each([REST, FINERACT, MINIBANK, AIRTEL, REST_MOBILE])('outgoing payments through CBS_ADAPTER=$title: a refund whose answer is lost', (subject) => {
  /** Quote, accept refused by the switch, the payer's debit: the refund's first attempt meets `fault`. */
  async function refundMeets(r: AdapterRun, fault: 'hang-after' | 'applied-then-5xx'): Promise<string> {
    const { home, transferId } = await quoted(r, { accept: { status: 500 } });
    if (subject.outgoingFlow === 'bank') {
      r.fixture.debitByChannel(home, PAYER_MSISDN, '100');
      r.fixture.inject(fault, 'next-write');
      expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(503);
    } else {
      // The first write is the payment prompt; the refund is the second.
      r.fixture.inject(fault, 'next-write', 1, 1);
      expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
      r.fixture.approveCollection(transferId);
      const answer = await r.h.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, callbackHeaders(TEST_CALLBACK_SECRET));
      expect(answer).toEqual({ status: 200, body: {} });
    }
    return transferId;
  }

  it('the institution paid the payer back but never answered: REFUNDING; recovery repeats the refund and the payer is paid once', async () => {
    const r = await start(subject, { CALLBACK_WAIT_MS: '60000' });
    const transferId = await refundMeets(r, 'hang-after');
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDING', attempts: 1, lastError: expect.stringMatching(new RegExp(`^Institution timed out: ${subject.adapter} refund: .*outcome unknown$`)) });
    expect(figures(r.fixture).payer).toBe('200');

    r.h.clock.advance(1_001);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });

  it('the institution paid the payer back then answered 500: REFUNDING; recovery repeats the refund and the payer is paid once', async () => {
    const r = await start(subject, { CALLBACK_WAIT_MS: '60000' });
    const transferId = await refundMeets(r, 'applied-then-5xx');
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDING', attempts: 1, lastError: REFUND_APPLIED_THEN_500[subject.adapter] });
    expect(figures(r.fixture)).toEqual(SEEDED);

    r.h.clock.advance(1_001);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });
});

describe.each([AIRTEL, REST_MOBILE])('outgoing payments, mobile-operator flow, through CBS_ADAPTER=$title', (subject) => {
  const env = { CALLBACK_WAIT_MS: '60000' };

  function callback(r: AdapterRun, transferId: string, code: string): Promise<{ status: number; body: unknown }> {
    return r.h.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: code } }, callbackHeaders(TEST_CALLBACK_SECRET));
  }

  /** Quote and accept: the institution prompts the payer, who has not answered yet. */
  async function prompted(r: AdapterRun, script: OutboundScript = {}): Promise<string> {
    const { home, transferId } = await quoted(r, script);
    // The reference API names its own record of the collection; Airtel's push answers no id of its own.
    const institutionReference = subject.adapter === 'rest' ? { institutionReference: `RC-${transferId.slice(0, 8)}` } : {};
    expect(await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 202,
      body: { homeTransactionId: home, transferId, state: 'AWAITING_DEBIT', collection: { status: 'pending', ...institutionReference } },
    });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(switchPuts(r)).toEqual([]);
    return transferId;
  }

  it('accept prompts the payer; approval moves the money; the callback TS tells the switch to proceed, once', async () => {
    const r = await start(subject, env);
    const transferId = await prompted(r);
    // A repeated accept while the prompt is pending prompts nobody again.
    const mark = r.fixture.requests.length;
    expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    expect(writesTo(r.fixture, mark)).toEqual([]);

    r.fixture.approveCollection(transferId);
    expect(figures(r.fixture)).toEqual(DEBITED);
    expect(await callback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', callbackCode: 'TS', flow: 'mobile-operator' });

    expect(await callback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(await callback(r, transferId, 'TF')).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(figures(r.fixture)).toEqual(DEBITED);
  });

  it('a declined prompt and its callback TF tell the switch false; nothing was debited, nothing refunded', async () => {
    const r = await start(subject, env);
    const transferId = await prompted(r);
    r.fixture.rejectCollection(transferId);
    expect(await callback(r, transferId, 'TF')).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: false }]);
    expect(await statusOf(r, transferId)).toMatchObject({
      state: 'ABORTED',
      callbackCode: 'TF',
      error: { statusCode: '4100', name: 'PayerRejected', message: 'Payer rejected the payment: the customer was not debited' },
    });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(writesTo(r.fixture).filter((write) => !write.includes('collections') && !write.includes('merchant/v1/payments'))).toEqual([]);
  });

  it('the switch failing after the collection refunds the payer exactly once, under the refund reference', async () => {
    const r = await start(subject, env);
    const transferId = await prompted(r, { accept: { status: 500 } });
    r.fixture.approveCollection(transferId);
    expect(figures(r.fixture)).toEqual(DEBITED);
    expect(await callback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'REFUNDED', needsAttention: false, callbackCode: 'TS' });
    const refunds = r.fixture.requests.filter((request) => request.method === 'POST' && JSON.stringify(request.body).includes(refundReference(transferId)));
    expect(refunds).toHaveLength(1);

    expect(await callback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    r.h.clock.advance(3_600_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });

  it('a payment prompt whose answer is lost: 202 with the collection unknown; the callback still finishes the payment once', async () => {
    const r = await start(subject, env);
    const { home, transferId } = await quoted(r);
    r.fixture.inject('hang-after', 'next-write');
    expect(await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 202,
      body: { homeTransactionId: home, transferId, state: 'COLLECTING', collection: { status: 'unknown' } },
    });
    r.fixture.approveCollection(transferId);
    expect(await callback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', callbackCode: 'TS' });
    r.h.clock.advance(3_600_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(figures(r.fixture)).toEqual(DEBITED);
  });

  it('without a callback the institution is asked after CALLBACK_WAIT_MS, and the payment proceeds on its answer', async () => {
    const r = await start(subject, env);
    const transferId = await prompted(r);
    r.h.clock.advance(60_001);
    // Still pending at the institution: asked again later.
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'AWAITING_DEBIT', lastError: 'debit still pending at the institution' });
    r.fixture.approveCollection(transferId);
    r.h.clock.advance(1_000);
    expect(await r.h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', callbackCode: null });
    expect(figures(r.fixture)).toEqual(DEBITED);
  });
});

describe('outgoing payments through CBS_ADAPTER=rest, mobile-operator flow: the reference API\'s own callback shape', () => {
  const env = { CALLBACK_WAIT_MS: '60000' };

  /** CollectionCallback of docs/reference-core-banking-api.yaml, with the callback secret. */
  function neutralCallback(r: AdapterRun, body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    return r.h.callOutgoing('PUT', '/callback', body, callbackHeaders(TEST_CALLBACK_SECRET));
  }

  async function prompted(r: AdapterRun): Promise<string> {
    const { transferId } = await quoted(r);
    expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    return transferId;
  }

  it('PENDING changes nothing; SUCCEEDED, confirmed by the institution, completes the payment once', async () => {
    const r = await start(REST_MOBILE, env);
    const transferId = await prompted(r);
    expect(await neutralCallback(r, { reference: transferId, status: 'PENDING' })).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'AWAITING_DEBIT' });

    r.fixture.approveCollection(transferId);
    const body = { reference: transferId, status: 'SUCCEEDED', institutionReference: `RC-${transferId.slice(0, 8)}` };
    expect(await neutralCallback(r, body)).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', callbackCode: 'SUCCEEDED' });
    expect(figures(r.fixture)).toEqual(DEBITED);
    expect(await neutralCallback(r, body)).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });

  it('FAILED with reason EXPIRED, confirmed by the institution, tells the switch false; nobody was debited', async () => {
    const r = await start(REST_MOBILE, env);
    const transferId = await prompted(r);
    r.fixture.rejectCollection(transferId);
    expect(await neutralCallback(r, { reference: transferId, status: 'FAILED', reason: 'EXPIRED' })).toEqual({ status: 200, body: {} });
    expect(switchPuts(r)).toEqual([{ acceptQuote: false }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'ABORTED', callbackCode: 'FAILED' });
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it('a body mixing both shapes, or with neither, is refused with 400 and moves nothing', async () => {
    const r = await start(REST_MOBILE, env);
    const transferId = await prompted(r);
    const both = await neutralCallback(r, { reference: transferId, status: 'SUCCEEDED', transaction: { id: transferId, status_code: 'TS' } });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({ statusCode: '3100' });
    const neither = await neutralCallback(r, { id: transferId, state: 'SUCCEEDED' });
    expect(neither.status).toBe(400);
    expect(switchPuts(r)).toEqual([]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'AWAITING_DEBIT' });
  });
});

describe('outgoing payments through CBS_ADAPTER=airtel: Airtel\'s own callback, which carries no secret of ours (CALLBACK_AUTH=confirm, its default)', () => {
  const env = { CALLBACK_WAIT_MS: '60000' };

  /** The body Airtel posts (POST) to the registered callback URL, with no header of ours. */
  function airtelCallback(r: AdapterRun, transferId: string, code: string, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
    const body = { transaction: { id: transferId, message: code === 'TS' ? 'Paid' : 'Declined', status_code: code, airtel_money_id: 'MP261123.1000.A00001' } };
    return r.h.callOutgoing('POST', '/callback', body, headers);
  }

  async function prompted(r: AdapterRun): Promise<string> {
    const { transferId } = await quoted(r);
    expect((await r.h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(202);
    return transferId;
  }

  function enquiries(r: AdapterRun, transferId: string, from: number): number {
    return r.fixture.requests.slice(from).filter((request) => request.method === 'GET' && request.path === `/standard/v1/payments/${transferId}`).length;
  }

  it('is confirmed with Airtel at once: the approved payment completes without waiting CALLBACK_WAIT_MS, once', async () => {
    const r = await start(AIRTEL, env);
    const transferId = await prompted(r);
    r.fixture.approveCollection(transferId);
    const mark = r.fixture.requests.length;
    expect(await airtelCallback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(enquiries(r, transferId, mark)).toBe(1);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'COMPLETED', callbackCode: 'TS' });
    expect(figures(r.fixture)).toEqual(DEBITED);
    // Airtel repeating itself asks nobody and changes nothing.
    const again = r.fixture.requests.length;
    expect(await airtelCallback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(r.fixture.requests.length).toBe(again);
    expect(switchPuts(r)).toEqual([{ acceptQuote: true }]);
  });

  it('claiming success for a prompt the payer has not answered changes nothing: the body is a hint, Airtel decides', async () => {
    const r = await start(AIRTEL, env);
    const transferId = await prompted(r);
    expect(await airtelCallback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'AWAITING_DEBIT', callbackCode: null });
    expect(switchPuts(r)).toEqual([]);
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it('claiming success for a declined prompt: Airtel says failed, the payment is aborted and the switch told false', async () => {
    const r = await start(AIRTEL, env);
    const transferId = await prompted(r);
    r.fixture.rejectCollection(transferId);
    expect(await airtelCallback(r, transferId, 'TS')).toEqual({ status: 200, body: {} });
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'ABORTED', callbackCode: 'TS', error: { name: 'PayerRejected' } });
    expect(switchPuts(r)).toEqual([{ acceptQuote: false }]);
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it('a wrong secret is still refused; with CALLBACK_AUTH=secret a callback without one is refused too', async () => {
    const r = await start(AIRTEL, env);
    const transferId = await prompted(r);
    r.fixture.approveCollection(transferId);
    const refused = { status: 401, body: { statusCode: '3000', message: 'Unauthorized: missing or wrong x-callback-secret header' } };
    expect(await airtelCallback(r, transferId, 'TS', callbackHeaders('not-the-callback-secret'))).toEqual(refused);
    expect(await statusOf(r, transferId)).toMatchObject({ state: 'AWAITING_DEBIT' });
    await r.close();
    run = undefined;

    const strict = await start(AIRTEL, { ...env, CALLBACK_AUTH: 'secret' });
    const other = await prompted(strict);
    strict.fixture.approveCollection(other);
    expect(await airtelCallback(strict, other, 'TS')).toEqual(refused);
    expect(await airtelCallback(strict, other, 'TS', callbackHeaders(TEST_CALLBACK_SECRET))).toEqual({ status: 200, body: {} });
    expect(await statusOf(strict, other)).toMatchObject({ state: 'COMPLETED', callbackCode: 'TS' });
  });
});
