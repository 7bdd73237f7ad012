import { afterEach, describe, expect, it } from 'vitest';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import {
  ADAPTER_SEED,
  ADAPTER_SUBJECTS,
  BARRED_MSISDN,
  FINERACT,
  REST,
  PAYEE_MSISDN,
  SEEDED,
  UNKNOWN_MSISDN,
  figures,
  startAdapterHarness,
  writesTo,
  type AdapterRun,
  type AdapterSubject,
} from '../support/adapter-institutions.js';

/**
 * The incoming flow through the whole connector (HTTP API, SQLite store, recovery worker) with
 * CBS_ADAPTER set to each HTTP adapter and its settings pointing at that adapter's fixture
 * institution. Every money-moving step is checked on the fixture's own books.
 */

type Body = Record<string, unknown>;

let run: AdapterRun | undefined;
afterEach(async () => {
  const current = run;
  run = undefined;
  await current?.close();
});

async function start(subject: AdapterSubject): Promise<AdapterRun> {
  run = await startAdapterHarness(subject);
  return run;
}

/** Quote request and the connector's answer, for 12.34 ZMW SEND to the seeded payee. */
async function quoted(r: AdapterRun, amount = '12.34'): Promise<{ quoteBody: Body; quoteAnswer: Body }> {
  const quoteBody = quoteRequest({ payeeMsisdn: PAYEE_MSISDN, amount });
  const answer = await r.h.call('POST', '/quoterequests', quoteBody);
  expect(answer.status).toBe(200);
  return { quoteBody, quoteAnswer: answer.body as Body };
}

/** Quote and transfer: the 12.22 ZMW the payee is to receive is reserved. */
async function reserved(r: AdapterRun): Promise<string> {
  const { quoteBody, quoteAnswer } = await quoted(r);
  const body = transferRequest(quoteBody, quoteAnswer);
  const transferId = String(body['transferId']);
  expect(await r.h.call('POST', '/transfers', body)).toEqual({
    status: 200,
    body: { homeTransactionId: transferId, transferState: 'RESERVED', completedTimestamp: '2026-11-23T10:00:00.000Z' },
  });
  return transferId;
}

async function stateOf(r: AdapterRun, transferId: string): Promise<unknown> {
  return ((await r.h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState'];
}

/** The books once 12.22 ZMW went from the float to the payee. */
const CREDITED = { ...SEEDED, float: '987.78', available: '987.78', payee: '62.22' };

describe.each(ADAPTER_SUBJECTS)('incoming payments through CBS_ADAPTER=$title', (subject) => {
  /** The books while 12.22 ZMW is reserved: held on the float, or (no holds) only checked. */
  const RESERVED = subject.nativeHolds ? { ...SEEDED, available: '987.78' } : SEEDED;

  it('GET /parties answers the payee as the institution names it; an unknown number is 404 3204', async () => {
    const r = await start(subject);
    expect(await r.h.call('GET', `/parties/MSISDN/${PAYEE_MSISDN}`)).toEqual({
      status: 200,
      body: {
        idType: 'MSISDN',
        idValue: PAYEE_MSISDN,
        displayName: 'Chanda Mwila',
        firstName: 'Chanda',
        lastName: 'Mwila',
        supportedCurrencies: ['ZMW'],
      },
    });
    expect(await r.h.call('GET', `/parties/MSISDN/${UNKNOWN_MSISDN}`)).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found' } });
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it(`POST /quoterequests: fee and amounts exact; a barred payee is refused with ${subject.barredRefusal.statusCode}, an unknown one with 3204`, async () => {
    const r = await start(subject);
    const quoteBody = quoteRequest({ payeeMsisdn: PAYEE_MSISDN, amount: '12.34' });
    expect(await r.h.call('POST', '/quoterequests', quoteBody)).toEqual({
      status: 200,
      body: {
        quoteId: quoteBody['quoteId'],
        transactionId: quoteBody['transactionId'],
        transferAmount: '12.34',
        transferAmountCurrency: 'ZMW',
        payeeReceiveAmount: '12.22',
        payeeReceiveAmountCurrency: 'ZMW',
        payeeFspFeeAmount: '0.12',
        payeeFspFeeAmountCurrency: 'ZMW',
        expiration: '2026-11-23T11:00:00.000Z',
      },
    });
    const receive = await r.h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: PAYEE_MSISDN, amount: '250.5', amountType: 'RECEIVE' }));
    expect(receive.body).toMatchObject({ transferAmount: '253.01', payeeReceiveAmount: '250.5', payeeFspFeeAmount: '2.51' });
    expect(await r.h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: BARRED_MSISDN }))).toEqual({ status: 422, body: subject.barredRefusal });
    expect(await r.h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: UNKNOWN_MSISDN }))).toEqual({
      status: 404,
      body: { statusCode: '3204', message: 'Party not found' },
    });
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it(`POST /transfers reserves (${subject.nativeHolds ? 'a hold on the float' : 'a balance check, nothing held'}); COMPLETED credits the payee once from the float`, async () => {
    const r = await start(subject);
    const transferId = await reserved(r);
    expect(figures(r.fixture)).toEqual(RESERVED);
    expect(await stateOf(r, transferId)).toBe('RESERVED');

    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('COMMITTED');

    // The switch's repeated notifications are answered from the store: the institution is not asked again.
    const mark = r.fixture.requests.length;
    for (let i = 0; i < 3; i += 1) {
      expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    }
    expect(writesTo(r.fixture, mark)).toEqual([]);
    expect(figures(r.fixture)).toEqual(CREDITED);
  });

  it(`ABORTED ${subject.nativeHolds ? 'releases the hold' : 'moves nothing (nothing was held)'}, answers 5104, and a late COMPLETED is refused without a credit`, async () => {
    const r = await start(subject);
    const transferId = await reserved(r);
    const notCompleted = { status: 422, body: { statusCode: '5104', message: 'Transfer not completed: switch reported ABORTED' } };
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).toEqual(notCompleted);
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).toEqual(notCompleted);
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({
      status: 409,
      body: { statusCode: '3106', message: `Transfer already finished differently: transfer ${transferId} is ABORTED; completion not applied` },
    });
    expect(figures(r.fixture)).toEqual(SEEDED);
    expect(await stateOf(r, transferId)).toBe('ABORTED');
    // Without holds neither the reservation nor its release wrote anything at the institution.
    if (!subject.nativeHolds) expect(writesTo(r.fixture)).toEqual([]);
  });

  it('a transfer the float cannot cover is refused with 5001 and holds nothing', async () => {
    const r = await start(subject);
    // 1980 to the payee against a float of 1000.
    const { quoteBody, quoteAnswer } = await quoted(r, '2000');
    const body = transferRequest(quoteBody, quoteAnswer);
    const answer = await r.h.call('POST', '/transfers', body);
    // The switch gets the catalogue text only: the institution's own words stay in our logs.
    expect(answer).toEqual({ status: 422, body: { statusCode: '5001', message: 'Payee FSP insufficient liquidity' } });
    expect(await r.h.call('POST', '/transfers', body)).toEqual(answer);
    expect(figures(r.fixture)).toEqual(SEEDED);
  });

  it('an institution answering 5xx during the commit: 503 2003, nothing credited; recovery finishes it once the institution is back', async () => {
    const r = await start(subject);
    const transferId = await reserved(r);
    // The commit and the switch's retry both meet the outage.
    r.fixture.inject('server-error', 'next-write', 2);
    for (let i = 0; i < 2; i += 1) {
      const answer = await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
      expect(answer).toEqual({ status: 503, body: { statusCode: '2003', message: 'Institution unavailable' } });
    }
    expect(figures(r.fixture)).toEqual(RESERVED);
    expect(await stateOf(r, transferId)).toBe('RESERVED');

    // Two failures: the next attempt is due 2 s later.
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    r.h.clock.advance(2_001);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('COMMITTED');

    const mark = r.fixture.requests.length;
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    r.h.clock.advance(600_000);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(writesTo(r.fixture, mark)).toEqual([]);
    expect(figures(r.fixture)).toEqual(CREDITED);
  });

  it('a commit whose answer is lost after the institution acted: 504 2004; recovery completes it without paying twice', async () => {
    const r = await start(subject);
    const transferId = await reserved(r);
    // Fineract's commit first repeats the reservation's hold (answered from its idempotency store): lose the deposit's answer.
    r.fixture.inject('hang-after', 'next-write', 1, subject.adapter === 'fineract' ? 1 : 0);
    const lost = await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(lost).toEqual({ status: 504, body: { statusCode: '2004', message: 'Institution timed out' } });
    // The institution did credit the payee; whatever else it had still to book is finished below.
    expect(figures(r.fixture).payee).toBe('62.22');

    r.h.clock.advance(1_001);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(figures(r.fixture)).toEqual(CREDITED);
  });

  it('a commit the institution applied then answered 500: 503 2003 with the payee already credited; recovery completes it without paying twice', async () => {
    const r = await start(subject);
    const transferId = await reserved(r);
    // As above, Fineract's repeat of the hold goes through first.
    r.fixture.inject('applied-then-5xx', 'next-write', 1, subject.adapter === 'fineract' ? 1 : 0);
    const answer = await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(answer).toEqual({ status: 503, body: { statusCode: '2003', message: 'Institution unavailable' } });
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('RESERVED');

    r.h.clock.advance(1_001);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('COMMITTED');
    expect(await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(figures(r.fixture)).toEqual(CREDITED);
  });
});

describe.each(ADAPTER_SUBJECTS)('incoming payments through CBS_ADAPTER=$title: large amounts', (subject) => {
  it('amounts beyond a double\'s precision travel exactly from the quote to the institution\'s books', async () => {
    run = await startAdapterHarness(subject, { seed: { ...ADAPTER_SEED, floatBalance: '900000000000000000' } });
    const r = run;
    const quoteBody = quoteRequest({ payeeMsisdn: PAYEE_MSISDN, amount: '123456789012345.67' });
    const quote = await r.h.call('POST', '/quoterequests', quoteBody);
    expect(quote.body).toMatchObject({ transferAmount: '123456789012345.67', payeeReceiveAmount: '122222221122222.21', payeeFspFeeAmount: '1234567890123.46' });
    const body = transferRequest(quoteBody, quote.body as Body);
    expect((await r.h.call('POST', '/transfers', body)).status).toBe(200);
    const seeded = { ...SEEDED, float: '900000000000000000', available: '900000000000000000', total: '900000000000000260' };
    expect(figures(r.fixture)).toEqual(subject.nativeHolds ? { ...seeded, available: '899877777778877777.79' } : seeded);
    expect(await r.h.call('PUT', `/transfers/${String(body['transferId'])}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(figures(r.fixture)).toEqual({ ...seeded, float: '899877777778877777.79', available: '899877777778877777.79', payee: '122222221122272.21' });
  });
});

describe('incoming payments through CBS_ADAPTER=rest: ISO 20022 party details', () => {
  it('API_TYPE=iso20022: the institution\'s address and country of residence become extension keys', async () => {
    const payee = { idType: 'MSISDN', idValue: PAYEE_MSISDN, firstName: 'Chanda', middleName: 'K', lastName: 'Mwila', dateOfBirth: '1990-01-02', balance: '50' } as const;
    const address = { StrtNm: 'Cairo Road', BldgNb: '12', TwnNm: 'Lusaka', Ctry: 'ZM' };
    run = await startAdapterHarness(REST, {
      env: { API_TYPE: 'iso20022', PARTY_SHARE: 'dateOfBirth' },
      seed: { ...ADAPTER_SEED, accounts: [{ ...payee, countryOfResidence: 'ZM', postalAddress: address }, ...ADAPTER_SEED.accounts.slice(1)] },
    });
    const P = 'Rpt.UpdtdPtyAndAcctId';
    expect(await run.h.call('GET', `/parties/MSISDN/${PAYEE_MSISDN}`)).toEqual({
      status: 200,
      body: {
        idType: 'MSISDN',
        idValue: PAYEE_MSISDN,
        displayName: 'Chanda K Mwila',
        firstName: 'Chanda',
        middleName: 'K',
        lastName: 'Mwila',
        dateOfBirth: '1990-01-02',
        supportedCurrencies: ['ZMW'],
        extensionList: [
          { key: `${P}.Agt.FinInstnId.LEI`, value: '9845000DEMOCC0NNEC85' },
          { key: `${P}.Pty.CtryOfRes`, value: 'ZM' },
          { key: `${P}.Pty.PstlAdr.Ctry`, value: 'ZM' },
          { key: `${P}.Pty.PstlAdr.TwnNm`, value: 'Lusaka' },
          { key: `${P}.Pty.PstlAdr.StrtNm`, value: 'Cairo Road' },
          { key: `${P}.Pty.PstlAdr.BldgNb`, value: '12' },
        ],
      },
    });
  });
});

describe('incoming payments through CBS_ADAPTER=fineract: sub-identifiers', () => {
  it('GET /parties with an idSubValue finds the client\'s savings account by its account number only', async () => {
    const r = await start(FINERACT);
    // The fixture numbers the payee's client 100 and its savings account 101 (account number 000000101).
    expect(await r.h.call('GET', `/parties/MSISDN/${PAYEE_MSISDN}/000000101`)).toEqual({
      status: 200,
      body: { idType: 'MSISDN', idValue: PAYEE_MSISDN, idSubValue: '000000101', displayName: 'Chanda Mwila', firstName: 'Chanda', lastName: 'Mwila', supportedCurrencies: ['ZMW'] },
    });
    // 000000103 is an account, but the payer's: not found under the payee's number.
    expect(await r.h.call('GET', `/parties/MSISDN/${PAYEE_MSISDN}/000000103`)).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found' } });
  });
});

describe('incoming payments through CBS_ADAPTER=fineract: a commit is one Fineract transaction', () => {
  it('its batch refused with a 503 booked nothing: the payee is not credited until recovery books deposit, release and withdrawal together', async () => {
    const r = await start(FINERACT);
    const transferId = await reserved(r);
    // Let the hold's repeat through, then refuse the batch before Fineract runs it.
    r.fixture.inject('server-error', 'next-write', 1, 1);
    const answer = await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(answer.status).toBe(503);
    expect(figures(r.fixture)).toEqual({ ...SEEDED, available: '987.78' });
    const mark = r.fixture.requests.length;

    r.h.clock.advance(1_001);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(writesTo(r.fixture, mark)).toEqual([
      'POST /fineract-provider/api/v1/savingsaccounts/1/transactions?command=holdAmount',
      'POST /fineract-provider/api/v1/batches?enclosingTransaction=true',
    ]);
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('COMMITTED');
  });

  it('its batch applied then answered 500: recovery finds the hold released by the commit and replays the deposit and the withdrawal from Fineract\'s store', async () => {
    const r = await start(FINERACT);
    const transferId = await reserved(r);
    r.fixture.inject('applied-then-5xx', 'next-write', 1, 1);
    const answer = await r.h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(answer.status).toBe(503);
    // Booked whole: the payee credited and the float debited together.
    expect(figures(r.fixture)).toEqual(CREDITED);
    const mark = r.fixture.requests.length;

    r.h.clock.advance(1_001);
    expect(await r.h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(writesTo(r.fixture, mark)).toEqual([
      'POST /fineract-provider/api/v1/savingsaccounts/1/transactions?command=holdAmount',
      'POST /fineract-provider/api/v1/savingsaccounts/1/transactions/1?command=releaseAmount',
      `POST /fineract-provider/api/v1/savingsaccounts/${r.fixture.accountIdOf(PAYEE_MSISDN)}/transactions?command=deposit`,
      'POST /fineract-provider/api/v1/savingsaccounts/1/transactions?command=withdrawal',
    ]);
    expect(figures(r.fixture)).toEqual(CREDITED);
    expect(await stateOf(r, transferId)).toBe('COMMITTED');
  });
});
