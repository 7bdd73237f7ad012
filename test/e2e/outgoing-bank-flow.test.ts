import { afterEach, describe, expect, it } from 'vitest';
import { PAYER_BIRTH_KEYS } from '../../src/domain/iso20022.js';
import { TEST_CHANNEL_API_KEY } from '../support/harness.js';
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
    expect(after.of(SETTLEMENT_ACCOUNT).balance).toBe(add(before.of(SETTLEMENT_ACCOUNT).balance, '100'));
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

function add(a: string, b: string): string {
  const toCents = (x: string): bigint => {
    const [whole = '0', fraction = ''] = x.split('.');
    return BigInt(whole) * 100n + BigInt(fraction.padEnd(2, '0'));
  };
  const total = toCents(a) + toCents(b);
  const cents = (total % 100n).toString().padStart(2, '0').replace(/0+$/, '');
  return cents === '' ? (total / 100n).toString() : `${total / 100n}.${cents}`;
}
