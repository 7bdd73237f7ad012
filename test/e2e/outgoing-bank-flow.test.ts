import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { PAYER_BIRTH_KEYS } from '../../src/domain/iso20022.js';
import { addMoney, type Money } from '../../src/domain/money.js';
import { hubAnswer, hubHasNoSuchTransferAfterError, switchOwnFailure, type OutboundScript } from '../support/fake-switch.js';
import { TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { interceptOne } from '../support/intercept-one.js';
import { ConnectorError } from '../../src/domain/errors.js';
import { PAYER_ACCOUNT, SETTLEMENT_ACCOUNT, channelDebit, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('outgoing payments, bank flow', () => {
  it('send money: terms from the switch, then accept completes; the channel debit stays with the settlement account', async () => {
    h = await startHarness();
    const before = await balances(h);
    const body = sendMoneyBody();
    const terms = await initiate(h, body);
    const transferId = String(terms['transferId']);
    expect(terms).toEqual({
      homeTransactionId: body['homeTransactionId'],
      transferId,
      state: 'QUOTED',
      amountType: 'SEND',
      payeeName: 'Chanda Mwila',
      sendAmount: { amount: '100', currency: 'ZMW' },
      transferAmount: { amount: '100', currency: 'ZMW' },
      payeeReceiveAmount: { amount: '99', currency: 'ZMW' },
      fees: { amount: '1', currency: 'ZMW' },
      debitAmount: { amount: '100', currency: 'ZMW' },
      expiration: '2026-11-23T11:00:00.000Z',
    });
    const post = h.fakeSwitch.requests.find((r) => r.method === 'POST');
    expect(post?.body).toEqual({
      homeTransactionId: body['homeTransactionId'],
      from: { idType: 'MSISDN', idValue: '260971000002', displayName: 'Natasha Mulenga', dateOfBirth: '1995-11-30' },
      to: { idType: 'MSISDN', idValue: '265991234567' },
      amountType: 'SEND',
      currency: 'ZMW',
      amount: '100',
      transactionType: 'TRANSFER',
      note: 'School fees',
    });

    await channelDebit(h, String(body['homeTransactionId']), '100');
    const accepted = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    expect(accepted).toEqual({ status: 200, body: { homeTransactionId: body['homeTransactionId'], transferId, state: 'COMPLETED' } });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: true }]);

    const after = await balances(h);
    expect(after.of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(addMoney(zmw(before.of(SETTLEMENT_ACCOUNT).balance), zmw('100')).amount);
    const status = await h.callOutgoing('GET', `/send-money/${transferId}`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ state: 'COMPLETED', needsAttention: false, lastError: null, error: null, switchState: 'COMPLETED' });
    expect(JSON.stringify(status.body)).not.toContain('Chanda');
  });

  it('merchant payment sends amountType RECEIVE: the payee receives the amount, the payer pays the fee on top', async () => {
    h = await startHarness({ env: { API_TYPE: 'iso20022' } });
    const body = sendMoneyBody({ sendAmount: '250.5' });
    const terms = await initiate(h, body, '/merchant-payments');
    expect(terms).toMatchObject({
      amountType: 'RECEIVE',
      transferAmount: { amount: '251.5', currency: 'ZMW' },
      payeeReceiveAmount: { amount: '250.5', currency: 'ZMW' },
      fees: { amount: '1', currency: 'ZMW' },
      debitAmount: { amount: '251.5', currency: 'ZMW' },
    });
    const post = h.fakeSwitch.requests.find((r) => r.method === 'POST')?.body as Body;
    expect(post['amountType']).toBe('RECEIVE');
    expect(post['from']).toEqual({
      idType: 'MSISDN',
      idValue: '260971000002',
      displayName: 'Natasha Mulenga',
      extensionList: [
        { key: PAYER_BIRTH_KEYS.BirthDt, value: '1995-11-30' },
        { key: PAYER_BIRTH_KEYS.PrvcOfBirth, value: 'Copperbelt' },
        { key: PAYER_BIRTH_KEYS.CityOfBirth, value: 'Ndola' },
        { key: PAYER_BIRTH_KEYS.CtryOfBirth, value: 'ZM' },
      ],
    });
    await channelDebit(h, String(body['homeTransactionId']), '251.5');
    const accepted = await h.callOutgoing('PUT', `/merchant-payment/${String(terms['transferId'])}`, { acceptQuote: true });
    expect(accepted.status).toBe(200);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('949');
  });

  it('requires the channel API key', async () => {
    h = await startHarness();
    const none = await h.callOutgoing('POST', '/send-money', sendMoneyBody(), {});
    expect(none).toEqual({ status: 401, body: { statusCode: '3000', message: 'Unauthorized: missing or wrong x-api-key header' } });
    const wrong = await h.callOutgoing('POST', '/send-money', sendMoneyBody(), { 'x-api-key': `${TEST_CHANNEL_API_KEY}x` });
    expect(wrong.status).toBe(401);
    expect(h.fakeSwitch.requests).toEqual([]);
  });
});


describe('outgoing payments, bank flow: abort, expiry, invalid quotes', () => {
  it('acceptQuote false tells the switch false and answers quote not accepted; nothing moves', async () => {
    h = await startHarness();
    const before = await balances(h);
    const terms = await initiate(h, sendMoneyBody());
    const transferId = String(terms['transferId']);
    const declined = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: false });
    const expected = { status: 422, body: { statusCode: '5101', message: 'Quote not accepted: the customer declined the terms' } };
    expect(declined).toEqual(expected);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: false })).toEqual(expected);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Payment is in another state: the customer declined this payment' },
    });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: false }]);
    expect(h.fakeSwitch.transferOf(String(terms['homeTransactionId']))?.state).toBe('ABORTED');
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'ABORTED',
      error: { statusCode: '5101', name: 'QuoteNotAccepted', message: 'Quote not accepted: the customer declined the terms' },
    });
    expect(await balances(h)).toEqual(before);
  });

  it('an accept after the quote expired is refused, the switch told false, and nothing is refunded or moved', async () => {
    h = await startHarness();
    const before = await balances(h);
    const terms = await initiate(h, sendMoneyBody());
    h.clock.advance(3_600_000);
    const late = await h.callOutgoing('PUT', `/send-money/${String(terms['transferId'])}`, { acceptQuote: true });
    expect(late).toEqual({
      status: 422,
      body: { statusCode: '3302', message: 'Quote expired: the quote expired at 2026-11-23T11:00:00.000Z; nothing was debited' },
    });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: false }]);
    expect(await balances(h)).toEqual(before);
  });

  it('an invalid returned quote is refused, the switch told false; unknown transfer ids are 404', async () => {
    h = await startHarness();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ transferAmount: { amount: '99', currency: 'ZMW' }, payeeReceiveAmount: { amount: '98', currency: 'ZMW' } }, 'transferAmount 99 is not the requested 100'],
      [{ payeeFspFee: { amount: '2', currency: 'ZMW' } }, 'transferAmount is not payeeReceiveAmount + payeeFspFee - payeeFspCommission'],
      [{ payeeFspFee: { amount: '-1', currency: 'ZMW' } }, 'payeeFspFee amount is not an Amount'],
      [{ payeeReceiveAmount: { amount: '99.00', currency: 'ZMW' } }, 'payeeReceiveAmount amount is not an Amount'],
      [{ transferAmount: { amount: '100', currency: 'USD' } }, 'transferAmount is in USD, expected ZMW'],
      [{ payeeReceiveAmount: { amount: '98.999', currency: 'ZMW' } }, 'payeeReceiveAmount has more decimals than ZMW allows'],
      [{ expiration: '2026-11-23T09:59:59.999Z' }, 'quote expired at 2026-11-23T09:59:59.999Z'],
      [{ expiration: 'tomorrow' }, 'quote expiration is not a timestamp'],
      [{ transferAmount: 100 }, 'quoteResponse.body.transferAmount is malformed'],
    ];
    const seen = [];
    for (const [quote] of cases) {
      const body = sendMoneyBody();
      h.fakeSwitch.script(String(body['homeTransactionId']), { quote });
      const answer = await h.callOutgoing('POST', '/send-money', body);
      seen.push([answer.status, answer.body, h.fakeSwitch.transferOf(String(body['homeTransactionId']))?.state]);
    }
    expect(seen).toEqual(
      cases.map(([, reason]) => [422, { statusCode: '5101', message: `Invalid quote returned by the switch: ${reason}` }, 'ABORTED']),
    );
    expect(await h.callOutgoing('PUT', '/send-money/0b3a4c7e-1d2f-4a5b-8c6d-7e8f9a0b1c2d', { acceptQuote: true })).toEqual({
      status: 404,
      body: { statusCode: '3208', message: 'Transfer not found: no send-money payment with transferId 0b3a4c7e-1d2f-4a5b-8c6d-7e8f9a0b1c2d' },
    });
  });

  it('refuses a switch that waits for party acceptance or completes without acceptance, flagging the latter', async () => {
    h = await startHarness();
    const party = sendMoneyBody();
    h.fakeSwitch.script(String(party['homeTransactionId']), { initiate: { currentState: 'WAITING_FOR_PARTY_ACCEPTANCE' } });
    expect((await h.callOutgoing('POST', '/send-money', party)).body).toEqual({
      statusCode: '2001',
      message: 'Switch connector request failed: the switch connector waits for party acceptance: set AUTO_ACCEPT_PARTY=true',
    });
    const completed = sendMoneyBody();
    h.fakeSwitch.script(String(completed['homeTransactionId']), { initiate: { currentState: 'COMPLETED' } });
    expect((await h.callOutgoing('POST', '/send-money', completed)).status).toBe(503);
    const flagged = await h.callOutgoing('GET', '/payments/needing-attention');
    expect((flagged.body as Body[]).map((p) => [p['homeTransactionId'], p['state']])).toEqual([
      [party['homeTransactionId'], 'FAILED'],
      [completed['homeTransactionId'], 'FAILED'],
    ]);
  });
});

describe('outgoing payments, bank flow: refunds', () => {
  /** Initiates, debits the customer as the channel does, then accepts. */
  async function acceptedWith(script: OutboundScript): Promise<{ transferId: string; home: string; accepted: { status: number; body: unknown } }> {
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    h.fakeSwitch.script(home, script);
    const terms = await initiate(h, body);
    await channelDebit(h, home, '100');
    const transferId = String(terms['transferId']);
    return { transferId, home, accepted: await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true }) };
  }

  it('an accept answered COMPLETED with the hub\'s own ABORTED is no completion: the switch is asked until the hub\'s word settles it', async () => {
    h = await startHarness();
    const { transferId, accepted } = await acceptedWith({
      accept: { status: 200, body: { currentState: 'COMPLETED', fulfil: { body: { transferState: 'ABORTED' } } } },
    });
    expect(accepted).toEqual({ status: 504, body: { statusCode: '2004', message: `Switch connector timed out: outcome not known yet; see GET /send-money/${transferId}` } });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    h.clock.advance(10_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('a refund still at the institution after its intent would be stale is held from the worker: one refund call, then the worker takes over once it failed', async () => {
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    let refunds = 0;
    h = await startHarness({
      // Intents untouched for 5 x 60 ms are the workers'; a slow call renews its hold every 100 ms.
      env: { RECOVERY_BASE_BACKOFF_MS: '60' },
      overrides: {
        wrapCoreBanking: interceptOne('refund', async (call, count) => {
          refunds = count;
          if (count > 1) return call();
          await gate;
          throw new ConnectorError('InstitutionUnavailable', 'the first refund failed after a long wait');
        }),
      },
    });
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    h.fakeSwitch.script(home, { accept: { status: 500 } });
    const transferId = String((await initiate(h, body))['transferId']);
    await channelDebit(h, home, '100');
    const accepted = h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
    while (refunds === 0) await sleep(5);
    // Long past the staleness by the payment's own clock; the hold is renewed by the clock of then.
    h.clock.advance(10_000);
    await sleep(350);
    // A worker that claimed it would wait here for the request's lock (another replica's would refund beside it).
    const pass = h.app.outgoingRecovery.runOnce();
    expect(await Promise.race([pass, sleep(3000).then(() => 'the worker claimed the payment and waits')])).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(refunds).toBe(1);
    letGo();
    expect(await accepted).toEqual({
      status: 503,
      body: { statusCode: '2001', message: 'Switch connector request failed: the switch did not complete the transfer (HTTP 500, statusCode 5000); the customer is refunded' },
    });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDING', attempts: 1 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // The failure's record ends the hold: the retry is due by its backoff (60 ms), not by the hold's end (300 ms after its last renewal).
    h.clock.advance(61);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(refunds).toBe(2);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', attempts: 0 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('a switch error (500) after the channel debit refunds the customer exactly once', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { transferId, accepted } = await acceptedWith({ accept: { status: 500 } });
    const expected = {
      status: 503,
      body: {
        statusCode: '2001',
        message: 'Switch connector request failed: the switch did not complete the transfer (HTTP 500, statusCode 5000); the customer is refunded',
      },
    };
    expect(accepted).toEqual(expected);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual(expected);
    h.clock.advance(600_000);
    await h.app.outgoingRecovery.runOnce();
    const after = await balances(h);
    expect(after.of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(before.of(SETTLEMENT_ACCOUNT).balance);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'REFUNDED',
      needsAttention: false,
      attempts: 0,
      switchState: 'ERROR_OCCURRED',
      error: { statusCode: '2001', name: 'SdkClientError', message: expected.body.message },
    });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  it('ERROR_OCCURRED in a 200 answer carrying the hub\'s error callback is a decline: refunded, the decline named', async () => {
    h = await startHarness();
    const lastError = { httpStatusCode: 500, mojaloopError: { errorInformation: { errorCode: '5100', errorDescription: 'Payee rejected the payment' } } };
    const { transferId, accepted } = await acceptedWith({ accept: { status: 200, body: { currentState: 'ERROR_OCCURRED', lastError } } });
    expect(accepted).toEqual({
      status: 503,
      body: { statusCode: '2001', message: 'Switch connector request failed: the switch declined the transfer (5100, Payee rejected the payment); the customer is refunded' },
    });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', switchState: 'ERROR_OCCURRED', error: { statusCode: '5100' } });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('ERROR_OCCURRED in a 200 answer without the hub\'s error is no outcome: asked, refunded only on the hub\'s ABORTED', async () => {
    h = await startHarness();
    const { transferId, accepted } = await acceptedWith({ accept: 'error-occurred' });
    expect(accepted.status).toBe(504);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING', lastError: 'switch gives no final state (UNKNOWN)' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    h.clock.advance(10_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', switchState: 'ABORTED' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  describe.each([
    // The switch connector's own 500 (its POST /transfers to the hub reset after sending, say):
    // its HTTP status as the statusCode, no hub error in the transfer.
    { failure: 'the switch connector\'s own 500', answer: (transferId: string) => switchOwnFailure(transferId) },
    // A proxy in front of the switch connector that lost its answer.
    { failure: 'a proxy\'s 502', answer: () => ({ status: 502, body: { message: 'upstream connection reset' } }) },
  ])('an accept failing without the hub\'s error ($failure) may have reached the hub: only the hub\'s word decides', ({ answer }) => {
    /** A payment with terms, not yet debited nor accepted: its transferId is needed to script the accept. */
    async function quoted(harness: Harness): Promise<{ home: string; transferId: string }> {
      const body = sendMoneyBody();
      const terms = await initiate(harness, body);
      return { home: String(body['homeTransactionId']), transferId: String(terms['transferId']) };
    }

    it('the hub committed it: completed, the customer never refunded', async () => {
      h = await startHarness();
      const { home, transferId } = await quoted(h);
      h.fakeSwitch.script(home, { accept: answer(transferId), stateAfterAccept: 'COMPLETED' });
      await channelDebit(h, home, '100');
      const before = await balances(h);
      const accepted = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
      expect(accepted).toEqual({ status: 200, body: { homeTransactionId: home, transferId, state: 'COMPLETED' } });
      expect(h.fakeSwitch.requests.filter((r) => r.method === 'GET').map((r) => r.path)).toEqual([`/transfers/${transferId}`]);
      h.clock.advance(600_000);
      expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
      const after = await balances(h);
      expect(after.of(PAYER_ACCOUNT).balance).toBe('1100.5');
      expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(before.of(SETTLEMENT_ACCOUNT).balance);
      expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', switchState: 'COMPLETED', error: null });
    });

    it('the hub never received it (3208): refunded once the accept\'s time has passed, not before', async () => {
      h = await startHarness();
      const { home, transferId } = await quoted(h);
      h.fakeSwitch.script(home, { accept: answer(transferId) });
      // The real switch connector, whose model of the transfer is ERRORED after the failed
      // accept, answers the hub's 3208 as "500" with the hub's error in its message only.
      h.fakeSwitch.setTransferStatus(transferId, hubHasNoSuchTransferAfterError());
      await channelDebit(h, home, '100');
      const accepted = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
      expect(accepted.status).toBe(504);
      expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING', lastError: 'the hub has no such transfer yet (3208)' });
      // Within SDK_TRANSFER_TIMEOUT_MS (1500 in the harness) + 5 s the prepare may still be on its way.
      h.clock.advance(6_000);
      expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
      expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
      h.clock.advance(2_000);
      expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
      expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', switchState: 'ABORTED' });
      expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
      expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: true }]);
    });
  });

  it('a 504 is outcome unknown: the switch is asked, and a transfer that completed is never refunded', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { transferId, accepted } = await acceptedWith({ accept: { status: 504 }, stateAfterAccept: 'COMPLETED' });
    expect(accepted).toEqual({ status: 200, body: { homeTransactionId: expect.any(String), transferId, state: 'COMPLETED' } });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'GET').map((r) => r.path)).toEqual([`/transfers/${transferId}`]);
    const after = await balances(h);
    expect(after.of(PAYER_ACCOUNT).balance).toBe('1100.5');
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(addMoney(zmw(before.of(SETTLEMENT_ACCOUNT).balance), zmw('100')).amount);
  });

  it('a hang is outcome unknown: nothing is refunded until the switch says; ABORTED then refunds once', async () => {
    h = await startHarness();
    const { transferId, accepted } = await acceptedWith({ accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE' });
    expect(accepted.status).toBe(504);
    expect(accepted.body).toEqual({
      statusCode: '2004',
      message: `Switch connector timed out: outcome not known yet; see GET /send-money/${transferId}`,
    });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING', attempts: 1 });
    h.clock.advance(1_001);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    h.clock.advance(2_001);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it.each([
    {
      // The real switch connector: its model still waits for the accept; asked, it queries the
      // hub, which answers 3208, and it answers an HTTP 500 (hubHasNoSuchTransfer).
      answer: 'the hub has no such transfer (3208)',
      waiting: false,
      putsAfter: [{ acceptQuote: true }],
      summary: 'the hub never received the transfer',
    },
    {
      // A switch connector that reports the quote still waiting: withdrawn with acceptQuote false.
      answer: 'the quote still waiting',
      waiting: true,
      putsAfter: [{ acceptQuote: true }, { acceptQuote: false }],
      summary: 'the accept never reached it; quote withdrawn',
    },
  ])('an accept that never reached the hub, asked about after its time limit ($answer): refunded once, never accepted twice', async ({ waiting, putsAfter, summary }) => {
    h = await startHarness();
    const { transferId, accepted } = await acceptedWith({ accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE' });
    expect(accepted.status).toBe(504);
    if (waiting) h.fakeSwitch.setTransferStatus(transferId, { status: 200, body: { transferId, currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE' } });
    const puts = (): unknown[] => h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body);
    // Within the switch's limit (SDK_TRANSFER_TIMEOUT_MS 1500 + 5 s) a prepare may still be on its way: asked again later.
    h.clock.advance(6_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect(puts()).toEqual([{ acceptQuote: true }]);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'CONFIRMING',
      lastError: waiting ? 'switch gives no final state (WAITING_FOR_QUOTE_ACCEPTANCE)' : 'the hub has no such transfer yet (3208)',
    });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // Past it (and the backoff), nothing will be prepared any more: refunded, no second accept.
    h.clock.advance(2_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(puts()).toEqual(putsAfter);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'REFUNDED',
      switchState: 'ABORTED',
      needsAttention: false,
      error: { statusCode: '2001', name: 'SdkClientError', message: `Switch connector request failed: the switch did not complete the transfer (${summary}); the customer is refunded` },
    });
    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(puts()).toEqual(putsAfter);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('a withdrawal the switch does not confirm refunds nothing: the payment stays CONFIRMING until the switch says', async () => {
    h = await startHarness();
    const { transferId } = await acceptedWith({ accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE', decline: { status: 500 } });
    h.fakeSwitch.setTransferStatus(transferId, { status: 200, body: { transferId, currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE' } });
    h.clock.advance(7_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({
      state: 'CONFIRMING',
      lastError: 'withdrawal of the lost accept not confirmed (HTTP 500, statusCode 5000)',
    });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    // The first accept turns out to have gone through after all: completed, never refunded.
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'COMMITTED'));
    h.clock.advance(10_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'COMPLETED', switchState: 'COMPLETED' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('a refund that keeps failing stays pending, is retried with capped backoff, flagged for manual action, and lands once', async () => {
    let faulty: FaultyCoreBanking | undefined;
    h = await startHarness({
      env: { RECOVERY_ATTENTION_AFTER_ATTEMPTS: '3', RECOVERY_MAX_BACKOFF_MS: '4000' },
      overrides: {
        wrapCoreBanking: (inner) => {
          faulty = new FaultyCoreBanking(inner, { operations: ['refund'], failures: 4, kind: 'unavailable' });
          return faulty;
        },
      },
    });
    const { transferId, accepted } = await acceptedWith({ accept: { status: 500 } });
    expect(accepted.status).toBe(503);
    const status = async (): Promise<Body> => (await h.callOutgoing('GET', `/send-money/${transferId}`)).body as Body;
    expect(await status()).toMatchObject({ state: 'REFUNDING', attempts: 1, needsAttention: false, nextAttemptAt: '2026-11-23T10:00:01.000Z' });
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    h.clock.advance(1_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    h.clock.advance(2_000);
    await h.app.outgoingRecovery.runOnce();
    expect(await status()).toMatchObject({
      state: 'REFUNDING',
      attempts: 3,
      needsAttention: true,
      lastError: 'Institution unavailable: injected fault on refund',
      nextAttemptAt: '2026-11-23T10:00:07.000Z',
    });
    expect(((await h.callOutgoing('GET', '/payments/needing-attention')).body as Body[]).map((p) => p['transferId'])).toEqual([transferId]);
    h.clock.advance(4_000);
    await h.app.outgoingRecovery.runOnce();
    // The backoff is capped at RECOVERY_MAX_BACKOFF_MS.
    expect(await status()).toMatchObject({ attempts: 4, nextAttemptAt: '2026-11-23T10:00:11.000Z' });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    h.clock.advance(4_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await status()).toMatchObject({ state: 'REFUNDED', needsAttention: false });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect(faulty?.injected).toBe(4);
    expect((await h.callOutgoing('GET', '/payments/needing-attention')).body).toEqual([]);
  });
});

/** An amount of the demo institution's currency, for the money helpers. */
function zmw(amount: string): Money {
  return { amount, currency: 'ZMW' };
}
