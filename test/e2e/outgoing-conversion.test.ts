import { afterEach, describe, expect, it } from 'vitest';
import { PAYER_BIRTH_KEYS, PAYER_BIRTH_KEYS_ISO_EXACT } from '../../src/domain/iso20022.js';
import type { OutboundScript } from '../support/fake-switch.js';
import { PAYER_ACCOUNT, channelDebit, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const FX: OutboundScript = {
  initiate: 'conversion',
  conversion: {
    targetAmount: '6400',
    targetCurrency: 'MWK',
    charges: [{ chargeType: 'FX fee', sourceAmount: { amount: '0.5', currency: 'ZMW' }, targetAmount: { amount: '32', currency: 'MWK' } }],
  },
};

describe('outgoing payments with currency conversion', () => {
  it('checks and accepts the conversion terms, then the quote in the target currency; the customer pays the source amount', async () => {
    h = await startHarness();
    const body = sendMoneyBody({ receiveCurrency: 'MWK' });
    h.fakeSwitch.script(String(body['homeTransactionId']), FX);
    const terms = await initiate(h, body);
    expect(terms).toMatchObject({
      state: 'QUOTED',
      sendAmount: { amount: '100', currency: 'ZMW' },
      transferAmount: { amount: '6400', currency: 'MWK' },
      payeeReceiveAmount: { amount: '6399', currency: 'MWK' },
      fees: { amount: '1', currency: 'MWK' },
      debitAmount: { amount: '100', currency: 'ZMW' },
      conversion: {
        sourceAmount: { amount: '100', currency: 'ZMW' },
        targetAmount: { amount: '6400', currency: 'MWK' },
        charges: [
          { chargeType: 'FX fee', amount: { amount: '0.5', currency: 'ZMW' } },
          { chargeType: 'FX fee', amount: { amount: '32', currency: 'MWK' } },
        ],
        expiration: '2026-11-23T11:00:00.000Z',
      },
    });
    const transferId = String(terms['transferId']);
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptConversion: true }]);
    await channelDebit(h, String(body['homeTransactionId']), '100');
    expect((await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(200);
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptConversion: true }, { acceptQuote: true }]);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
  });

  it('ends the terms with the conversion when it expires before the quote: a later accept is QuoteExpired and debits nobody', async () => {
    h = await startHarness();
    const body = sendMoneyBody({ receiveCurrency: 'MWK' });
    const home = String(body['homeTransactionId']);
    h.fakeSwitch.script(home, { ...FX, conversion: { targetAmount: '6400', targetCurrency: 'MWK', expiration: '2026-11-23T10:01:00.000Z' } });
    const terms = await initiate(h, body);
    // The quote runs to 11:00, the conversion to 10:01: the customer must accept by 10:01.
    expect(terms).toMatchObject({ expiration: '2026-11-23T10:01:00.000Z', conversion: { expiration: '2026-11-23T10:01:00.000Z' } });
    const transferId = String(terms['transferId']);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ quoteExpiration: '2026-11-23T10:01:00.000Z' });
    h.clock.advance(10 * 60_000);
    const before = await balances(h);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual({
      status: 422,
      body: { statusCode: '3302', message: 'Quote expired: the quote expired at 2026-11-23T10:01:00.000Z; nothing was debited' },
    });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptConversion: true }, { acceptQuote: false }]);
    expect(await balances(h)).toEqual(before);
  });

  it('rejects terms that break a rule: the switch is told acceptConversion false and the channel gets ConversionRejected', async () => {
    h = await startHarness();
    const before = await balances(h);
    const conversion = FX.conversion ?? { targetAmount: '', targetCurrency: '' };
    const cases: Array<[NonNullable<OutboundScript['conversion']>, string]> = [
      [{ ...conversion, sourceAmount: '99' }, 'source amount 99 is not the amount sent 100'],
      [{ ...conversion, sourceCurrency: 'USD' }, 'source currency USD is not ZMW'],
      [{ ...conversion, targetCurrency: 'TZS' }, 'target currency TZS is not MWK'],
      [{ ...conversion, targetAmount: '0' }, 'amounts must be greater than zero'],
      [{ ...conversion, expiration: '2026-11-23T10:00:00.000Z' }, 'conversion terms expired at 2026-11-23T10:00:00.000Z'],
      [{ ...conversion, charges: [{ chargeType: 'fee', sourceAmount: { amount: '1', currency: 'EUR' } }] }, 'charges[0] is in EUR, not a currency of this conversion'],
      [{ ...conversion, charges: [{ chargeType: 'fee', sourceAmount: { amount: '-1', currency: 'ZMW' } }] }, 'charges[0] amount is not an Amount'],
      [{ ...conversion, charges: [{ chargeType: 'fee', sourceAmount: { amount: 1, currency: 'ZMW' } }] }, 'fxQuotesResponse.body.conversionTerms.charges[0].sourceAmount is malformed'],
    ];
    const seen = [];
    for (const [terms] of cases) {
      const body = sendMoneyBody({ receiveCurrency: 'MWK' });
      const home = String(body['homeTransactionId']);
      h.fakeSwitch.script(home, { ...FX, conversion: terms });
      const answer = await h.callOutgoing('POST', '/send-money', body);
      seen.push([answer.status, answer.body, h.fakeSwitch.transferOf(home)?.state]);
    }
    expect(seen).toEqual(cases.map(([, reason]) => [422, { statusCode: '5101', message: `Conversion terms rejected: ${reason}` }, 'ABORTED']));
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual(cases.map(() => ({ acceptConversion: false })));
    expect(await balances(h)).toEqual(before);
  });

  it('a quote without a conversion for a payee in another currency is refused: the switch is told acceptQuote false, the channel 422', async () => {
    h = await startHarness();
    const before = await balances(h);
    const body = sendMoneyBody({ receiveCurrency: 'MWK' });
    const home = String(body['homeTransactionId']);
    const answer = await h.callOutgoing('POST', '/send-money', body);
    expect(answer).toEqual({ status: 422, body: { statusCode: '5101', message: 'Invalid quote returned by the switch: the switch offered no conversion to MWK' } });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ acceptQuote: false }]);
    expect(h.fakeSwitch.transferOf(home)?.state).toBe('ABORTED');
    expect(await balances(h)).toEqual(before);
  });

  it('a merchant payment across currencies is refused before the switch is called: no amount would tie its terms to the request', async () => {
    h = await startHarness();
    const body = sendMoneyBody({ receiveCurrency: 'MWK' });
    // A switch that would offer a conversion of 250 ZMW for the 100 "asked for": never reached.
    h.fakeSwitch.script(String(body['homeTransactionId']), { initiate: 'conversion', fee: '0', conversion: { sourceAmount: '250', targetAmount: '6400', targetCurrency: 'MWK' } });
    for (const path of ['/merchant-payments', '/merchant-payment']) {
      expect(await h.callOutgoing('POST', path, body)).toEqual({
        status: 422,
        body: { statusCode: '5106', message: 'Unsupported currency: a cross-currency merchant payment is not offered (receiveCurrency MWK, sendCurrency ZMW)' },
      });
    }
    expect(h.fakeSwitch.requests).toEqual([]);
  });

  it('iso20022 mode can send the ISO-exact birth keys as well; fspiop mode never sends a key over 32 characters', async () => {
    h = await startHarness({ env: { API_TYPE: 'iso20022', OUTGOING_BIRTH_KEYS: 'both' } });
    const body = sendMoneyBody({ payer: { name: 'N M', payerId: '260971000002', DateAndPlaceOfBirth: { BirthDt: '01-02-1990', CityOfBirth: 'Ndola', CtryOfBirth: 'ZM' } } });
    await initiate(h, body);
    const from = (h.fakeSwitch.requests.find((r) => r.method === 'POST')?.body as Body)['from'] as Body;
    expect(from['extensionList']).toEqual([
      { key: PAYER_BIRTH_KEYS.BirthDt, value: '1990-02-01' },
      { key: PAYER_BIRTH_KEYS.CityOfBirth, value: 'Ndola' },
      { key: PAYER_BIRTH_KEYS.CtryOfBirth, value: 'ZM' },
      { key: PAYER_BIRTH_KEYS_ISO_EXACT.BirthDt, value: '1990-02-01' },
      { key: PAYER_BIRTH_KEYS_ISO_EXACT.CityOfBirth, value: 'Ndola' },
      { key: PAYER_BIRTH_KEYS_ISO_EXACT.CtryOfBirth, value: 'ZM' },
    ]);
    expect(from['dateOfBirth']).toBeUndefined();
    await h.close();

    h = await startHarness({ env: { API_TYPE: 'fspiop' } });
    await initiate(h, body);
    const fspiop = (h.fakeSwitch.requests.find((r) => r.method === 'POST')?.body as Body)['from'] as Body;
    expect(fspiop).toEqual({ idType: 'MSISDN', idValue: '260971000002', displayName: 'N M', dateOfBirth: '1990-02-01' });
  });
});
