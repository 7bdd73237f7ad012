import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_CALLBACK_SECRET } from '../support/harness.js';
import { channelDebit, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const payer = (birth: Record<string, unknown> | undefined): Body => ({
  name: 'Natasha Mulenga',
  payerId: '260971000002',
  ...(birth === undefined ? {} : { DateAndPlaceOfBirth: birth }),
});
const birth = { BirthDt: '30-11-1995', CityOfBirth: 'Ndola', CtryOfBirth: 'ZM' };

describe('outgoing requests: validation, idempotency, OpenAPI', () => {
  it('refuses every malformed request with a 4xx naming the field, and calls nobody', async () => {
    h = await startHarness();
    const without = (field: string): Body => {
      const body = sendMoneyBody();
      delete body[field];
      return body;
    };
    const cases: Array<[Body, number, string, string]> = [
      [without('homeTransactionId'), 400, '3102', "Missing mandatory element: body must have required property 'homeTransactionId'"],
      [without('payeeId'), 400, '3102', "Missing mandatory element: body must have required property 'payeeId'"],
      [without('payer'), 400, '3102', "Missing mandatory element: body must have required property 'payer'"],
      [without('transactionType'), 400, '3102', "Missing mandatory element: body must have required property 'transactionType'"],
      [sendMoneyBody({ payeeIdType: 'PHONE' }), 400, '3100', 'Generic validation error: body/payeeIdType must be equal to one of the allowed values'],
      [sendMoneyBody({ sendAmount: 100 }), 400, '3100', 'Generic validation error: body/sendAmount must be string'],
      [sendMoneyBody({ sendAmount: '10.50' }), 400, '3100', 'Generic validation error: body/sendAmount must match pattern "^([0]|([1-9][0-9]{0,17}))([.][0-9]{0,3}[1-9])?$"'],
      [sendMoneyBody({ sendAmount: '10.125' }), 400, '3100', 'Generic validation error: sendAmount has more decimals than ZMW allows'],
      [sendMoneyBody({ sendAmount: '0' }), 400, '3100', 'Generic validation error: sendAmount must be greater than zero'],
      [sendMoneyBody({ sendCurrency: 'zmw' }), 400, '3100', 'Generic validation error: body/sendCurrency must match pattern "^[A-Z]{3}$"'],
      [sendMoneyBody({ receiveCurrency: 'ZZZ' }), 400, '3100', 'Generic validation error: receiveCurrency is not an ISO 4217 currency code'],
      [sendMoneyBody({ sendCurrency: 'USD' }), 422, '5106', 'Unsupported currency: sendCurrency USD (customers are debited in ZMW)'],
      [sendMoneyBody({ transactionType: 'PAYMENT' }), 400, '3100', 'Generic validation error: body/transactionType must be equal to one of the allowed values'],
      [sendMoneyBody({ payeeId: '12ab' }), 400, '3100', 'Generic validation error: payeeId must be an E.164 number: digits with an optional leading +'],
      [sendMoneyBody({ payer: { name: 'Natasha Mulenga' } }), 400, '3102', "Missing mandatory element: body/payer must have required property 'payerId'"],
      // What the switch connector's outbound API would refuse (its Name type, a note of 1 to 128
      // characters) is refused here, naming the field, rather than answered as an outage.
      [sendMoneyBody({ payer: { name: 'Natasha & Co (Mrs)', payerId: '260971000002' } }), 400, '3100', `Generic validation error: body/payer/name must match pattern "^(?!\\s*$)[\\w .,'-]{1,128}$"`],
      [sendMoneyBody({ payer: { name: '   ', payerId: '260971000002' } }), 400, '3100', `Generic validation error: body/payer/name must match pattern "^(?!\\s*$)[\\w .,'-]{1,128}$"`],
      [sendMoneyBody({ transactionDescription: '' }), 400, '3100', 'Generic validation error: body/transactionDescription must NOT have fewer than 1 characters'],
      [sendMoneyBody({ payer: payer({ ...birth, BirthDt: '31-02-1990' }) }), 400, '3100', 'Generic validation error: payer.DateAndPlaceOfBirth.BirthDt must be a calendar date written DD-MM-YYYY'],
      [sendMoneyBody({ payer: payer({ ...birth, BirthDt: '29-02-2023' }) }), 400, '3100', 'Generic validation error: payer.DateAndPlaceOfBirth.BirthDt must be a calendar date written DD-MM-YYYY'],
      [sendMoneyBody({ payer: payer({ ...birth, BirthDt: '1995-11-30' }) }), 400, '3100', 'Generic validation error: body/payer/DateAndPlaceOfBirth/BirthDt must match pattern "^[0-9]{2}-[0-9]{2}-[0-9]{4}$"'],
      [sendMoneyBody({ payer: payer({ BirthDt: '30-11-1995', CtryOfBirth: 'ZM' }) }), 400, '3102', "Missing mandatory element: body/payer/DateAndPlaceOfBirth must have required property 'CityOfBirth'"],
    ];
    const seen = [];
    for (const [body] of cases) {
      const answer = await h.callOutgoing('POST', '/send-money', body);
      seen.push([answer.status, answer.body]);
    }
    expect(seen).toEqual(cases.map(([, status, statusCode, message]) => [status, { statusCode, message }]));
    expect(h.fakeSwitch.requests).toEqual([]);
  });

  it('refuses unknown or misspelt fields, naming them, rather than dropping them: on the request, its payer, the birth data and the accept', async () => {
    h = await startHarness();
    const unknown = (field: string): Body => ({ statusCode: '3100', message: `Generic validation error: body/${field} is not a field of this request` });
    const misspeltBirth = { name: 'Natasha Mulenga', payerId: '260971000002', dateAndPlaceOfBirth: birth };
    const cases: Array<[Body, Body]> = [
      [sendMoneyBody({ payeeIdSubValue: 'till-7' }), unknown('payeeIdSubValue')],
      [sendMoneyBody({ payer: misspeltBirth }), unknown('payer/dateAndPlaceOfBirth')],
      [sendMoneyBody({ payer: { ...payer(birth), idType: 'MSISDN' } }), unknown('payer/idType')],
      [sendMoneyBody({ payer: payer({ ...birth, CountryOfBirth: 'ZM' }) }), unknown('payer/DateAndPlaceOfBirth/CountryOfBirth')],
    ];
    for (const path of ['/send-money', '/merchant-payments']) {
      const seen = [];
      for (const [body] of cases) seen.push(await h.callOutgoing('POST', path, body));
      expect(seen).toEqual(cases.map(([, answer]) => ({ status: 400, body: answer })));
    }
    expect(h.fakeSwitch.requests).toEqual([]);
    const terms = await initiate(h, sendMoneyBody());
    const transferId = String(terms['transferId']);
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: false, reason: 'changed my mind' })).toEqual({ status: 400, body: unknown('reason') });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'PUT')).toEqual([]);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'QUOTED' });
  });

  it('accepts a leap day and a body without birth data or description', async () => {
    h = await startHarness();
    const leap = await initiate(h, sendMoneyBody({ payer: payer({ ...birth, BirthDt: '29-02-2000' }) }));
    expect(leap['state']).toBe('QUOTED');
    const plain = sendMoneyBody({ payer: payer(undefined) });
    delete plain['transactionDescription'];
    await initiate(h, plain);
    const posts = h.fakeSwitch.requests.filter((r) => r.method === 'POST').map((r) => r.body as Body);
    expect((posts[0]?.['from'] as Body)['dateOfBirth']).toBe('2000-02-29');
    expect(posts[1]?.['from']).toEqual({ idType: 'MSISDN', idValue: '260971000002', displayName: 'Natasha Mulenga' });
    expect(posts[1]?.['note']).toBeUndefined();
  });

  it('a retried POST answers the same terms and calls the switch once; another body under the same id is 409', async () => {
    h = await startHarness();
    const body = sendMoneyBody();
    const first = await initiate(h, body);
    const again = await initiate(h, body);
    expect(again).toEqual(first);
    const modified = await h.callOutgoing('POST', '/send-money', { ...body, sendAmount: '101' });
    expect(modified).toEqual({
      status: 409,
      body: { statusCode: '3106', message: `Modified request: homeTransactionId ${String(body['homeTransactionId'])} was used for another request` },
    });
    // The same body on the merchant path is another request, too.
    expect((await h.callOutgoing('POST', '/merchant-payments', body)).status).toBe(409);
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('a retried POST answers the stored terms with the state the payment is in now: COMPLETED after the accept, ABORTED after a decline or an expired quote', async () => {
    h = await startHarness();
    const completed = sendMoneyBody();
    const completedTerms = await initiate(h, completed);
    await channelDebit(h, String(completed['homeTransactionId']), '100');
    expect((await h.callOutgoing('PUT', `/send-money/${String(completedTerms['transferId'])}`, { acceptQuote: true })).status).toBe(200);
    expect(await h.callOutgoing('POST', '/send-money', completed)).toEqual({ status: 200, body: { ...completedTerms, state: 'COMPLETED' } });

    const declined = sendMoneyBody();
    const declinedTerms = await initiate(h, declined);
    expect((await h.callOutgoing('PUT', `/send-money/${String(declinedTerms['transferId'])}`, { acceptQuote: false })).status).toBe(422);
    expect(await h.callOutgoing('POST', '/send-money', declined)).toEqual({ status: 200, body: { ...declinedTerms, state: 'ABORTED' } });

    const expired = sendMoneyBody();
    const expiredTerms = await initiate(h, expired);
    h.clock.advance(2 * 60 * 60_000);
    expect((await h.callOutgoing('PUT', `/send-money/${String(expiredTerms['transferId'])}`, { acceptQuote: true })).status).toBe(422);
    expect(await h.callOutgoing('POST', '/send-money', expired)).toEqual({ status: 200, body: { ...expiredTerms, state: 'ABORTED' } });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(3);
  });

  it('identifiers accepted in a printed form are sent and stored in their normal form; a retry of the same body is the same request', async () => {
    h = await startHarness({ env: { SUPPORTED_ID_TYPE: 'EMAIL' } });
    const body = sendMoneyBody({ payeeIdType: 'IBAN', payeeId: 'gb82 west 1234 5698 7654 32', payer: payer(birth) });
    body['payer'] = { ...(body['payer'] as Body), payerId: 'Natasha.Mulenga@Example.COM' };
    const terms = await initiate(h, body);
    const post = h.fakeSwitch.requests.find((r) => r.method === 'POST')?.body as Body;
    expect([post['to'], (post['from'] as Body)['idValue']]).toEqual([{ idType: 'IBAN', idValue: 'GB82WEST12345698765432' }, 'Natasha.Mulenga@example.com']);
    const stored = await sql<{ payer_id: string; payee_id: string }>`select payer_id, payee_id from outgoing_payments where home_transaction_id = ${String(body['homeTransactionId'])}`.execute(
      h.app.database.reader(),
    );
    expect(stored.rows).toEqual([{ payer_id: 'Natasha.Mulenga@example.com', payee_id: 'GB82WEST12345698765432' }]);
    expect(await h.callOutgoing('POST', '/send-money', body)).toEqual({ status: 200, body: terms });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('parallel duplicates while the first is in flight answer the same terms from one switch call', async () => {
    h = await startHarness();
    const body = sendMoneyBody();
    const answers = await Promise.all([1, 2, 3, 4].map(() => h.callOutgoing('POST', '/send-money', body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('a switch error at initiation is an SDK client error, a refusal of its validation a 400; a retry answers it again without calling the switch', async () => {
    h = await startHarness();
    const before = await balances(h);
    const failing = sendMoneyBody();
    h.fakeSwitch.script(String(failing['homeTransactionId']), { initiate: { status: 500 } });
    const expected = { status: 503, body: { statusCode: '2001', message: 'Switch connector request failed: HTTP 500, statusCode 5000: Got an error response: Generic payee error' } };
    expect(await h.callOutgoing('POST', '/send-money', failing)).toEqual(expected);
    expect(await h.callOutgoing('POST', '/send-money', failing)).toEqual(expected);

    const invalid = sendMoneyBody();
    h.fakeSwitch.script(String(invalid['homeTransactionId']), { initiate: { status: 400 } });
    const refused = { status: 400, body: { statusCode: '3100', message: 'The scheme refused the request as invalid: HTTP 400, statusCode 400: validation failed' } };
    expect(await h.callOutgoing('POST', '/send-money', invalid)).toEqual(refused);
    expect(await h.callOutgoing('POST', '/send-money', invalid)).toEqual(refused);

    const hanging = sendMoneyBody();
    h.fakeSwitch.script(String(hanging['homeTransactionId']), { initiate: 'hang' });
    const timedOut = await h.callOutgoing('POST', '/send-money', hanging);
    expect(timedOut.status).toBe(504);
    expect(timedOut.body).toMatchObject({ statusCode: '2004' });
    expect(h.fakeSwitch.requests.filter((r) => r.method === 'POST')).toHaveLength(3);
    expect(await balances(h)).toEqual(before);
  });

  it('a switch connector that cannot be reached fails the payment at once; a bank-flow payment takes no callback', async () => {
    h = await startHarness({ env: { SDK_BASE_URL: 'http://127.0.0.1:9' } });
    const body = sendMoneyBody();
    expect(await h.callOutgoing('POST', '/send-money', body)).toEqual({
      status: 503,
      body: { statusCode: '2001', message: 'Switch connector request failed: POST /transfers: ECONNREFUSED' },
    });
    await h.close();

    h = await startHarness();
    const terms = await initiate(h, sendMoneyBody());
    const callback = await h.callOutgoing(
      'PUT',
      '/callback',
      { transaction: { id: terms['transferId'], status_code: 'TS' } },
      { 'x-callback-secret': TEST_CALLBACK_SECRET },
    );
    expect(callback).toEqual({ status: 409, body: { statusCode: '3106', message: 'Payment is in another state: this payment is not debited by the institution' } });
  });

  it('serves its OpenAPI document without credentials', async () => {
    h = await startHarness();
    const answer = await h.callOutgoing('GET', '/openapi.json', undefined, {});
    expect(answer.status).toBe(200);
    const document = answer.body as Body;
    expect(document['openapi']).toBe('3.0.3');
    expect(Object.keys(document['paths'] as Body).sort()).toEqual([
      '/callback',
      '/health',
      '/merchant-payment',
      '/merchant-payment/{transferId}',
      '/merchant-payments',
      '/merchant-payments/{transferId}',
      '/payments/needing-attention',
      '/send-money',
      '/send-money/{transferId}',
    ]);
    const schemas = (document['components'] as Body)['schemas'] as Body;
    expect((schemas['SendMoneyRequest'] as Body)['required']).toEqual([
      'homeTransactionId', 'payeeId', 'payeeIdType', 'sendAmount', 'sendCurrency', 'receiveCurrency', 'transactionType', 'payer',
    ]);
  });
});

describe('outgoing payments: declines relayed by the switch connector reach the channel as declines', () => {
  /** The body the real switch connector answers a declined POST /transfers with (HTTP 500). */
  const declined = (statusCode: string, message: string): { status: number; body: Body } => ({
    status: 500,
    body: { statusCode, message, transferState: { homeTransactionId: 'h', currentState: 'ERROR_OCCURRED' } },
  });

  it.each([
    ['3204', 'Party not found', 404],
    ['5401', 'Payee account barred', 422],
    ['5400', 'Payee account blocked', 422],
    ['5106', 'Unsupported currency', 422],
    ['5101', 'Payee rejected the quote', 422],
    ['4001', 'Payer FSP insufficient liquidity', 422],
    ['3100', 'The scheme refused the request as invalid', 400],
  ])('statusCode %s at initiation: %s, HTTP %i; a retry answers the same without calling the switch', async (statusCode, text, status) => {
    h = await startHarness();
    const before = await balances(h);
    const body = sendMoneyBody();
    h.fakeSwitch.script(String(body['homeTransactionId']), { initiate: declined(statusCode, 'as the payee FSP said') });
    const expected = { status, body: { statusCode: statusCode === '3100' ? '3100' : statusCode, message: `${text}: HTTP 500, statusCode ${statusCode}: as the payee FSP said` } };
    expect(await h.callOutgoing('POST', '/send-money', body)).toEqual(expected);
    expect(await h.callOutgoing('POST', '/send-money', body)).toEqual(expected);
    expect(h.fakeSwitch.requests.filter((request) => request.method === 'POST')).toHaveLength(1);
    expect(await balances(h)).toEqual(before);
  });

  it.each([
    ['2003', 503, '2001'],
    ['1001', 503, '2001'],
    ['5000', 503, '2001'],
  ])('statusCode %s at initiation is an outage: HTTP %i %s', async (statusCode, status, code) => {
    h = await startHarness();
    const body = sendMoneyBody();
    h.fakeSwitch.script(String(body['homeTransactionId']), { initiate: declined(statusCode, 'down') });
    expect(await h.callOutgoing('POST', '/send-money', body)).toEqual({ status, body: { statusCode: code, message: `Switch connector request failed: HTTP 500, statusCode ${statusCode}: down` } });
  });

  it('a decline after the accept refunds the payer and answers 503 naming the decline, never a 4xx (which tells the channel to reverse its own debit)', async () => {
    h = await startHarness();
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    h.fakeSwitch.script(home, { accept: declined('5104', 'payee rejected the transaction') });
    const before = await balances(h);
    const terms = await initiate(h, body);
    const transferId = String(terms['transferId']);
    await channelDebit(h, home, '100');
    const expected = {
      status: 503,
      body: { statusCode: '2001', message: 'Switch connector request failed: the switch declined the transfer (5100, Payee rejected the payment); the customer is refunded' },
    };
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual(expected);
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'REFUNDED', error: { statusCode: '5100', name: 'PayeeRejected' } });
    expect(await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).toEqual(expected);
    expect(await balances(h)).toEqual(before);
  });
});
