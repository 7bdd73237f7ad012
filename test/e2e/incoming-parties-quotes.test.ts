import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { balances, customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';

const LEI = '9845000DEMOCC0NNEC85';
const P = 'Rpt.UpdtdPtyAndAcctId';

describe('incoming payments: party lookup and quotes (fspiop mode)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('GET /parties answers the party with its name only: no birth date, no KYC text, no long extension keys', async () => {
    const c = customerWith((candidate) => candidate.status === 'active' && candidate.dateOfBirth !== undefined && candidate.kycInformation !== undefined);
    const answer = await h.call('GET', `/parties/MSISDN/${c.idValue}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      idType: 'MSISDN',
      idValue: c.idValue,
      displayName: c.displayName ?? `${c.firstName} ${c.lastName}`,
      firstName: c.firstName,
      ...(c.middleName === undefined ? {} : { middleName: c.middleName }),
      lastName: c.lastName,
      supportedCurrencies: ['ZMW'],
    });
  });

  it('PARTY_SHARE=dateOfBirth,kycInformation shares them, as the institution chose', async () => {
    const sharing = await startHarness({ env: { PARTY_SHARE: 'dateOfBirth,kycInformation' } });
    try {
      const c = customerWith((candidate) => candidate.status === 'active' && candidate.dateOfBirth !== undefined && candidate.kycInformation !== undefined);
      const answer = await sharing.call('GET', `/parties/MSISDN/${c.idValue}`);
      expect(answer.body).toMatchObject({ idValue: c.idValue, dateOfBirth: c.dateOfBirth, kycInformation: c.kycInformation });
      const birthOnly = await startHarness({ env: { PARTY_SHARE: 'dateOfBirth' } });
      try {
        const partial = (await birthOnly.call('GET', `/parties/MSISDN/${c.idValue}`)).body as Record<string, unknown>;
        expect([partial['dateOfBirth'], 'kycInformation' in partial]).toEqual([c.dateOfBirth, false]);
      } finally {
        await birthOnly.close();
      }
    } finally {
      await sharing.close();
    }
  });

  it('GET /parties: unknown party 404 3204, unsupported type 3100, invalid type 400, closed account 404', async () => {
    expect(await h.call('GET', '/parties/MSISDN/260979999999')).toEqual({
      status: 404,
      body: { statusCode: '3204', message: 'Party not found' },
    });
    const unsupported = await h.call('GET', '/parties/ACCOUNT_ID/12345');
    expect(unsupported).toEqual({
      status: 422,
      body: { statusCode: '3100', message: 'Unsupported identifier type: ACCOUNT_ID (this institution accepts MSISDN)' },
    });
    const invalid = await h.call('GET', '/parties/PHONE/12345');
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ statusCode: '3100' });
    const closed = customerWith((candidate) => candidate.status === 'closed');
    expect((await h.call('GET', `/parties/MSISDN/${closed.idValue}`)).status).toBe(404);
  });

  it('GET /parties/{idType}/{idValue}/{idSubValue} finds the party under its sub-identifier only', async () => {
    const c = customerWith((candidate) => candidate.idSubValue !== undefined);
    const answer = await h.call('GET', `/parties/MSISDN/${c.idValue}/${String(c.idSubValue)}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ idType: 'MSISDN', idValue: c.idValue, idSubValue: c.idSubValue, firstName: c.firstName, lastName: c.lastName });
    expect((await h.call('GET', `/parties/MSISDN/${c.idValue}/other`)).status).toBe(404);
  });

  it('POST /quoterequests SEND: fee is 1% rounded half-up, payee receives amount minus fee, expiry in 1 hour', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '100.25' });
    const answer = await h.call('POST', '/quoterequests', body);
    expect(answer).toEqual({
      status: 200,
      body: {
        quoteId: body['quoteId'],
        transactionId: body['transactionId'],
        transferAmount: '100.25',
        transferAmountCurrency: 'ZMW',
        payeeReceiveAmount: '99.25',
        payeeReceiveAmountCurrency: 'ZMW',
        payeeFspFeeAmount: '1',
        payeeFspFeeAmountCurrency: 'ZMW',
        expiration: '2026-11-23T11:00:00.000Z',
      },
    });
  });

  it('POST /quoterequests RECEIVE: payee receives the amount, the payer sends amount plus fee', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '250.5', amountType: 'RECEIVE' });
    const answer = await h.call('POST', '/quoterequests', body);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ transferAmount: '253.01', payeeReceiveAmount: '250.5', payeeFspFeeAmount: '2.51' });
  });

  it('POST /quoterequests checks in order: identifier type, currency, payee, payee status', async () => {
    const active = customerWith((c) => c.status === 'active');
    const both = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: active.idValue, idType: 'EMAIL', currency: 'USD' }));
    expect(both.body).toMatchObject({ statusCode: '3100', message: 'Unsupported identifier type: EMAIL (this institution accepts MSISDN)' });
    const currency = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: active.idValue, currency: 'USD' }));
    expect(currency).toEqual({ status: 422, body: { statusCode: '5106', message: 'Unsupported currency: USD (this institution accepts ZMW)' } });
    const unknown = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: '260979999999' }));
    expect(unknown).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found' } });
    const expected: Record<string, { statusCode: string; message: string }> = {
      barred: { statusCode: '5401', message: 'Payee account barred' },
      blocked: { statusCode: '5400', message: 'Payee account blocked' },
      closed: { statusCode: '5402', message: 'Payee account closed' },
    };
    for (const status of ['barred', 'blocked', 'closed'] as const) {
      const payee = customerWith((c) => c.status === status);
      const answer = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue }));
      expect({ status, answer }).toEqual({ status, answer: { status: 422, body: expected[status] } });
    }
  });

  it('validates bodies without coercion and accepts unknown fields', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const trailingZero = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, amount: '1.50' }));
    expect(trailingZero.status).toBe(400);
    expect(trailingZero.body).toMatchObject({ statusCode: '3100' });
    const numeric = { ...quoteRequest({ payeeMsisdn: payee.idValue }), amount: 100 };
    expect((await h.call('POST', '/quoterequests', numeric)).body).toMatchObject({ statusCode: '3100', message: 'Generic validation error: body/amount must be string' });
    const { amountType: _omitted, ...missing } = quoteRequest({ payeeMsisdn: payee.idValue });
    expect(await h.call('POST', '/quoterequests', missing)).toEqual({
      status: 400,
      body: { statusCode: '3102', message: "Missing mandatory element: body must have required property 'amountType'" },
    });
    const finer = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, amount: '1.001' }));
    expect(finer).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: amount 1.001 has more decimals than ZMW allows' } });
    const extra = { ...quoteRequest({ payeeMsisdn: payee.idValue }), somethingNew: { nested: true } };
    expect((await h.call('POST', '/quoterequests', extra)).status).toBe(200);
    expect(await h.call('POST', '/quoterequests', '{"quoteId": ')).toEqual({
      status: 400,
      body: { statusCode: '3101', message: expect.stringMatching(/^Malformed syntax: /) as unknown },
    });
    expect(await h.call('GET', '/no/such/route')).toEqual({ status: 404, body: { statusCode: '3002', message: 'Unknown URI: GET /no/such/route' } });
  });

  it('answers 4 identical POSTs with the same stored quote; another body under the same id is 3106', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '40' });
    const first = await h.call('POST', '/quoterequests', body);
    h.clock.advance(60_000);
    const retries = await Promise.all([1, 2, 3].map(() => h.call('POST', '/quoterequests', body)));
    for (const retry of retries) expect(retry).toEqual(first);
    const changed = await h.call('POST', '/quoterequests', { ...body, amount: '41' });
    expect(changed).toEqual({ status: 409, body: { statusCode: '3106', message: `Modified request: quote ${String(body['quoteId'])} was requested with another body` } });
  });

  it('answers a retried quote from its stored record though the payee account closed since; a new quote to it is refused', async () => {
    const isolated = await startHarness();
    try {
      const payee = customerWith((c) => c.status === 'active');
      const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '30' });
      const first = await isolated.call('POST', '/quoterequests', body);
      expect(first.status).toBe(200);
      const ledger = isolated.app.sandbox;
      if (ledger === undefined) throw new Error('not running on the sandbox');
      await ledger.setAccountStatus(payee.accountId, 'closed');
      expect(await isolated.call('POST', '/quoterequests', body)).toEqual(first);
      expect(await isolated.call('POST', '/quoterequests', { ...body, amount: '31' })).toEqual({
        status: 409,
        body: { statusCode: '3106', message: `Modified request: quote ${String(body['quoteId'])} was requested with another body` },
      });
      const fresh = await isolated.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, amount: '30' }));
      expect(fresh).toEqual({ status: 422, body: { statusCode: '5402', message: 'Payee account closed' } });
    } finally {
      await isolated.close();
    }
  });

  it('parallel identical quote requests store one quote and answer identically', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '12' });
    const answers = await Promise.all(Array.from({ length: 8 }, () => h.call('POST', '/quoterequests', body)));
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]?.status).toBe(200);
  });

  it('GET /health checks the store and the institution', async () => {
    expect(await h.call('GET', '/health')).toEqual({ status: 200, body: { status: 'ok', checks: { store: 'ok', institution: 'ok' } } });
  });
});

describe('incoming payments: ISO 20022 mode', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: { API_TYPE: 'iso20022', ISO_REQUIRED_PAYER_KEYS: 'CdtTrfTxInf.Dbtr.Nm', ISO_ANY_OF_PAYER_KEYS: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt,CdtTrfTxInf.Dbtr.PstlAdr.Ctry' },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('GET /parties carries the LEI and each address key the institution has', async () => {
    const c = customerWith((candidate) => candidate.status === 'active' && candidate.postalAddress?.AdrLine !== undefined);
    const answer = await h.call('GET', `/parties/MSISDN/${c.idValue}`);
    expect(answer.status).toBe(200);
    // The demo customer with a full address (demo-accounts.ts): all 16 address keys plus LEI and
    // country of residence do not fit the 16-item limit, so the two lowest-priority address keys
    // (Dept, SubDept; see POSTAL_ADDRESS_KEYS in iso20022.ts) are left out.
    expect(c.idValue).toBe('260971000001');
    const list = (answer.body as { extensionList: Array<{ key: string; value: string }> }).extensionList;
    expect(list).toEqual([
      { key: `${P}.Agt.FinInstnId.LEI`, value: LEI },
      { key: `${P}.Pty.CtryOfRes`, value: 'ZM' },
      { key: `${P}.Pty.PstlAdr.Ctry`, value: 'ZM' },
      { key: `${P}.Pty.PstlAdr.TwnNm`, value: 'Lusaka' },
      { key: `${P}.Pty.PstlAdr.StrtNm`, value: 'Independence Avenue' },
      { key: `${P}.Pty.PstlAdr.BldgNb`, value: '118' },
      { key: `${P}.Pty.PstlAdr.PstCd`, value: '10101' },
      { key: `${P}.Pty.PstlAdr.AdrLine`, value: 'Plot 118, Independence Avenue, Kabulonga' },
      { key: `${P}.Pty.PstlAdr.CtrySubDvsn`, value: 'Lusaka Province' },
      { key: `${P}.Pty.PstlAdr.DstrctNm`, value: 'Lusaka District' },
      { key: `${P}.Pty.PstlAdr.TwnLctnNm`, value: 'Kabulonga' },
      { key: `${P}.Pty.PstlAdr.BldgNm`, value: 'Kabulonga Court' },
      { key: `${P}.Pty.PstlAdr.PstBx`, value: 'PO Box 31245' },
      { key: `${P}.Pty.PstlAdr.AdrTp.Cd`, value: 'HOME' },
      { key: `${P}.Pty.PstlAdr.Flr`, value: '2' },
      { key: `${P}.Pty.PstlAdr.Room`, value: '4B' },
    ]);
  });

  it('a party with only a name gets the LEI entry alone', async () => {
    const c = customerWith((candidate) => candidate.status === 'active' && candidate.postalAddress === undefined && candidate.countryOfResidence === undefined);
    const answer = await h.call('GET', `/parties/MSISDN/${c.idValue}`);
    expect((answer.body as { extensionList: unknown }).extensionList).toEqual([{ key: `${P}.Agt.FinInstnId.LEI`, value: LEI }]);
  });

  it('quotes need the payer information of the policy, read from the regular fields and the extension entries', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const anonymous = { idType: 'MSISDN', idValue: '254700000001', fspId: 'payerfsp' };
    const none = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: anonymous }));
    expect(none).toEqual({ status: 400, body: { statusCode: '3102', message: 'Payer information missing: missing CdtTrfTxInf.Dbtr.Nm' } });
    const blankName = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: { ...anonymous, displayName: '  ' } }));
    expect(blankName).toEqual(none);
    // The name in from.displayName, as the switch connector sends it in iso20022 mode: the name rule holds, the any-of rule does not.
    const nameOnly = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue }));
    expect(nameOnly).toEqual({
      status: 400,
      body: { statusCode: '3102', message: 'Payer information missing: needs one of CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt, CdtTrfTxInf.Dbtr.PstlAdr.Ctry' },
    });
    const nameEntry = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: anonymous, extensionList: [{ key: 'CdtTrfTxInf.Dbtr.Nm', value: 'Payer Person' }] }));
    expect(nameEntry).toEqual(nameOnly);
    // A dateOfBirth field is the birth-date key.
    const born = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: { ...anonymous, firstName: 'Payer', lastName: 'Person', dateOfBirth: '1990-04-01' } }));
    expect(born.status).toBe(200);
    const entries = [
      { key: 'CdtTrfTxInf.Dbtr.Nm', value: 'Payer Person' },
      { key: 'CdtTrfTxInf.Dbtr.PstlAdr.Ctry', value: 'KE' },
    ];
    const ok = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: anonymous, extensionList: entries }));
    expect(ok.status).toBe(200);
    expect((ok.body as { extensionList: unknown }).extensionList).toEqual(entries);
  });
});

describe('incoming payments: ISO 20022 mode with the default settings', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { API_TYPE: 'iso20022' } });
  });
  afterAll(async () => {
    await h.close();
  });

  /** What the real switch connector (v24.19, API_TYPE=iso20022) sends: the name in the regular fields, its own derived entries in extensionList. */
  const fromTheSwitch = { idType: 'MSISDN', idValue: '254700000001', displayName: 'Payer Person', firstName: 'Payer', lastName: 'Person', fspId: 'payerfsp' };
  const derivedEntries = [
    { key: 'GrpHdr.MsgId', value: '01JDQ7ZC9X3F8V2K5M4N6P7R8S' },
    { key: 'GrpHdr.CreDtTm', value: '2026-11-23T10:00:00.000Z' },
    { key: 'GrpHdr.NbOfTxs', value: '1' },
    { key: 'GrpHdr.SttlmInf.SttlmMtd', value: 'CLRG' },
    { key: 'CdtTrfTxInf.ChrgBr', value: 'CRED' },
  ];

  it('accept the quote and the transfer as the real switch connector sends them', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, from: fromTheSwitch, extensionList: derivedEntries });
    const quote = await h.call('POST', '/quoterequests', quoteBody);
    expect(quote.status).toBe(200);
    expect(quote.body).toMatchObject({ transferAmount: '100', payeeReceiveAmount: '99', payeeFspFeeAmount: '1' });
    const transfer = await h.call('POST', '/transfers', transferRequest(quoteBody, quote.body as Record<string, unknown>));
    expect(transfer.status).toBe(200);
    expect(transfer.body).toMatchObject({ transferState: 'RESERVED' });
  });

  it('still refuse a quote that carries no payer name anywhere', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const { displayName: _d, firstName: _f, lastName: _l, ...nameless } = fromTheSwitch;
    const answer = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: nameless, extensionList: derivedEntries }));
    expect(answer).toEqual({ status: 400, body: { statusCode: '3102', message: 'Payer information missing: missing CdtTrfTxInf.Dbtr.Nm' } });
  });

  /**
   * Extension entries the published schemas let through (they require neither key nor value, and
   * do not list the transfer's own extensionList) but that the payer-information rule cannot
   * read: each is a 400 naming the field, not a 500 the switch connector would retry 3 times.
   */
  const badQuotes: ReadonlyArray<readonly [string, Record<string, unknown>, { statusCode: string; message: string }]> = [
    ['an entry without value', { extensionList: [{ key: 'GrpHdr.MsgId' }] }, { statusCode: '3102', message: "Missing mandatory element: body/extensionList/0 must have required property 'value'" }],
    ['an entry without key', { extensionList: [{ value: 'x' }] }, { statusCode: '3102', message: "Missing mandatory element: body/extensionList/0 must have required property 'key'" }],
    ['a payer entry without key', { from: { ...fromTheSwitch, extensionList: [{ value: 'x' }] } }, { statusCode: '3102', message: "Missing mandatory element: body/from/extensionList/0 must have required property 'key'" }],
    ['a key that is not text', { extensionList: [{ key: 7, value: 'x' }] }, { statusCode: '3100', message: 'Generic validation error: body/extensionList/0/key must be string' }],
  ];
  for (const [name, extra, refusal] of badQuotes) {
    it(`refuse a quote with ${name}: 400, nothing stored`, async () => {
      const payee = customerWith((c) => c.status === 'active');
      const body = { ...quoteRequest({ payeeMsisdn: payee.idValue, from: fromTheSwitch }), ...extra };
      expect(await h.call('POST', '/quoterequests', body)).toEqual({ status: 400, body: refusal });
      // Nothing was stored: the same quoteId with a valid body is a new quote.
      const valid = await h.call('POST', '/quoterequests', { ...body, extensionList: derivedEntries, from: fromTheSwitch });
      expect(valid.status).toBe(200);
    });
  }

  const badTransfers: ReadonlyArray<readonly [string, Record<string, unknown>, { statusCode: string; message: string }]> = [
    ['extensionList a string', { extensionList: 'abc' }, { statusCode: '3100', message: 'Generic validation error: body/extensionList must be array' }],
    ['extensionList a number', { extensionList: 5 }, { statusCode: '3100', message: 'Generic validation error: body/extensionList must be array' }],
    ['an empty extension entry', { extensionList: [{}] }, { statusCode: '3102', message: "Missing mandatory element: body/extensionList/0 must have required property 'key'" }],
    ['a quoteRequestExtensions entry without key', { quoteRequestExtensions: [{ value: 'x' }] }, { statusCode: '3102', message: "Missing mandatory element: body/quoteRequestExtensions/0 must have required property 'key'" }],
    ['an empty extension value', { extensionList: [{ key: 'GrpHdr.MsgId', value: '' }] }, { statusCode: '3100', message: 'Generic validation error: body/extensionList/0/value must NOT have fewer than 1 characters' }],
  ];
  for (const [name, extra, refusal] of badTransfers) {
    it(`refuse a transfer with ${name}: 400, nothing reserved, the transfer can come again`, async () => {
      const payee = customerWith((c) => c.status === 'active');
      const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount: '100', from: fromTheSwitch, extensionList: derivedEntries });
      const quote = await h.call('POST', '/quoterequests', quoteBody);
      expect(quote.status).toBe(200);
      const before = await balances(h);
      const body = transferRequest(quoteBody, quote.body as Record<string, unknown>, extra);
      expect(await h.call('POST', '/transfers', body)).toEqual({ status: 400, body: refusal });
      expect(await balances(h)).toEqual(before);
      const valid = await h.call('POST', '/transfers', { ...body, extensionList: derivedEntries, quoteRequestExtensions: derivedEntries });
      expect(valid.status).toBe(200);
      // 99 (100 less the 1% fee) is held from the float; every transfer of this block is of 100.
      expect((await balances(h)).float.held).toBe(String(BigInt(before.float.held) + 99n));
    });
  }

  it('accept extension keys longer than FSPIOP allows (element paths), up to 128 characters', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const longKey = 'CdtTrfTxInf.Dbtr.Id.PrvtId.DtAndPlcOfBirth.CtryOfBirth';
    const ok = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: fromTheSwitch, extensionList: [{ key: longKey, value: 'ZM' }] }));
    expect(ok.status).toBe(200);
    expect((ok.body as { extensionList: unknown }).extensionList).toEqual([{ key: longKey, value: 'ZM' }]);
    const tooLong = await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, from: fromTheSwitch, extensionList: [{ key: 'K'.repeat(129), value: 'x' }] }));
    expect(tooLong).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: body/extensionList/0/key must NOT have more than 128 characters' } });
  });
});

describe('incoming payments: extension entries in fspiop mode', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('refuse the same malformed entries (the aggregate reads none of them here), and keys over 32 characters', async () => {
    const payee = customerWith((c) => c.status === 'active');
    const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' });
    const noValue = await h.call('POST', '/quoterequests', { ...quoteBody, extensionList: [{ key: 'k' }] });
    expect(noValue).toEqual({ status: 400, body: { statusCode: '3102', message: "Missing mandatory element: body/extensionList/0 must have required property 'value'" } });
    const longKey = await h.call('POST', '/quoterequests', { ...quoteBody, extensionList: [{ key: 'K'.repeat(33), value: 'x' }] });
    expect(longKey).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: body/extensionList/0/key must NOT have more than 32 characters' } });
    const quote = await h.call('POST', '/quoterequests', { ...quoteBody, extensionList: [{ key: 'K'.repeat(32), value: 'x' }] });
    expect(quote.status).toBe(200);
    const before = await balances(h);
    const body = transferRequest(quoteBody, quote.body as Record<string, unknown>);
    expect(await h.call('POST', '/transfers', { ...body, extensionList: [{}] })).toEqual({
      status: 400,
      body: { statusCode: '3102', message: "Missing mandatory element: body/extensionList/0 must have required property 'key'" },
    });
    expect(await balances(h)).toEqual(before);
  });
});
