import { afterEach, describe, expect, it } from 'vitest';
import { CONTRACT_SEED, PAYEE, PAYER, expectConnectorError } from '../core-banking-contract.js';
import { ManualClock } from '../../support/harness.js';
import type { FixtureInstitution } from '../fixture-institution.js';
import { startFixtureServer, type FixtureReply, type FixtureServer } from '../fixture-server.js';
import { RestCoreBanking } from '../../../src/adapters/core-banking/rest/rest-core-banking.js';
import { PROMPT_LIFETIME_MS, startRestFixture } from './rest-fixture.js';
import { readRestOptions } from '../../../src/adapters/core-banking/rest/rest-options.js';
import { declineFor, toTransactionStatus } from '../../../src/adapters/core-banking/rest/rest-transform.js';
import { causeOf } from '../../../src/http/health.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

function adapter(baseUrl: string, apiKey?: string, callbackUrl?: string): RestCoreBanking {
  const coreBanking = new RestCoreBanking({ baseUrl, apiKey, outgoingFlow: 'bank', callbackUrl, timeoutMs: 500, connectTimeoutMs: 500 });
  closers.push(() => coreBanking.close());
  return coreBanking;
}

async function fixture(apiKey?: string, extra: { clock?: ManualClock; callbackHeaders?: Record<string, string> } = {}): Promise<FixtureInstitution> {
  const started = await startRestFixture({
    ...CONTRACT_SEED,
    ...extra,
    ...(apiKey === undefined ? {} : { apiKey }),
    accounts: [
      ...CONTRACT_SEED.accounts,
      {
        idType: 'MSISDN',
        idValue: '260971000009',
        firstName: 'Natasha',
        middleName: 'K',
        lastName: 'Tembo',
        dateOfBirth: '1990-04-01',
        balance: '1',
        countryOfResidence: 'ZM',
        kycInformation: 'NRC verified',
        postalAddress: { Ctry: 'ZM', TwnNm: 'Lusaka', StrtNm: 'Cairo Road', BldgNb: '12', AdrTpCd: 'HOME' },
      },
    ],
  });
  closers.push(() => started.close());
  return started;
}

/** A real server that answers every request with one canned reply, for answers an honest fixture never gives. */
async function canned(reply: FixtureReply): Promise<FixtureServer> {
  const server = await startFixtureServer({ handle: () => reply, isWrite: () => true });
  closers.push(() => server.close());
  return server;
}

describe('RestCoreBanking', () => {
  it('maps every party field of the reference API, including the ISO 20022 address', async () => {
    const institution = await fixture();
    const party = await adapter(institution.url).lookupParty({ idType: 'MSISDN', idValue: '260971000009' });
    expect(party).toEqual({
      idType: 'MSISDN',
      idValue: '260971000009',
      accountId: institution.accountIdOf('260971000009'),
      currency: 'ZMW',
      status: 'active',
      displayName: 'Natasha K Tembo',
      firstName: 'Natasha',
      middleName: 'K',
      lastName: 'Tembo',
      dateOfBirth: '1990-04-01',
      countryOfResidence: 'ZM',
      kycInformation: 'NRC verified',
      postalAddress: { Ctry: 'ZM', TwnNm: 'Lusaka', StrtNm: 'Cairo Road', BldgNb: '12', AdrTpCd: 'HOME' },
    });
  });

  it('sends the API key as a bearer token, and reports a refused key as an outage without echoing it', async () => {
    const institution = await fixture('right-key');
    await adapter(institution.url, 'right-key').health();
    expect(institution.requests[0]?.headers.authorization).toBe('Bearer right-key');
    const error = await expectConnectorError(adapter(institution.url, 'wrong-key').health(), 'InstitutionUnavailable');
    expect(error.message).not.toContain('wrong-key');
    const lookup = await expectConnectorError(
      adapter(institution.url, 'wrong-key').lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }),
      'InstitutionUnavailable',
      /credentials refused/,
    );
    expect(lookup.message).not.toContain('wrong-key');
  });

  it('health: a refused key (401, 403) is credentials-refused for /health; a 5xx is unavailable', async () => {
    const institution = await fixture('right-key');
    const error = await expectConnectorError(adapter(institution.url, 'wrong-key').health(), 'InstitutionUnavailable', /^Institution unavailable: rest health: HTTP 401: REST_CBS_API_KEY refused$/);
    expect(causeOf(error)).toBe('credentials-refused');
    expect(causeOf(await adapter((await canned({ status: 403, body: { code: 'UNAUTHORIZED', message: 'no' } })).url).health().catch((caught: unknown) => caught))).toBe('credentials-refused');
    expect(causeOf(await adapter((await canned({ status: 503 })).url).health().catch((caught: unknown) => caught))).toBe('unavailable');
  });

  it('sends amounts as canonical decimal strings', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    await coreBanking.reserve({ reference: 'REF-1', amount: { amount: '10.50', currency: 'ZMW' }, payeeAccountId: institution.accountIdOf(PAYEE.idValue) });
    expect(institution.requests.at(-1)?.body).toEqual({
      reference: 'REF-1',
      payeeAccountId: institution.accountIdOf(PAYEE.idValue),
      amount: '10.5',
      currency: 'ZMW',
    });
    await expectConnectorError(
      coreBanking.reserve({ reference: 'REF-2', amount: { amount: '10.505', currency: 'ZMW' }, payeeAccountId: 'ACC-0001' }),
      'ValidationFailed',
    );
  });

  it('refuses a commit answer for another amount as malformed, not as success', async () => {
    const server = await canned({
      status: 200,
      body: { reference: 'REF-1', payeeAccountId: 'ACC-1', amount: '10.51', currency: 'ZMW', state: 'COMMITTED' },
    });
    await expectConnectorError(
      adapter(server.url).commit({ reference: 'REF-1', amount: { amount: '10.5', currency: 'ZMW' }, payeeAccountId: 'ACC-1' }),
      'InstitutionUnavailable',
      /malformed response: body.amount differs from the request/,
    );
  });

  it('refuses a commit answer that is still HELD', async () => {
    const server = await canned({ status: 200, body: { reference: 'REF-1', payeeAccountId: 'ACC-1', amount: '10.50', currency: 'ZMW', state: 'HELD' } });
    await expectConnectorError(
      adapter(server.url).commit({ reference: 'REF-1', amount: { amount: '10.5', currency: 'ZMW' }, payeeAccountId: 'ACC-1' }),
      'InstitutionUnavailable',
      /body.state is HELD after a commit/,
    );
  });

  it('reads an undocumented transaction status as unknown', async () => {
    const server = await canned({ status: 200, body: { reference: 'REF-1', type: 'REFUND', amount: '1', currency: 'ZMW', status: 'REVERSED' } });
    expect(await adapter(server.url).transactionStatus('REF-1')).toBe('unknown');
  });

  it('treats a refund that is not final as an unknown outcome', async () => {
    const server = await canned({ status: 200, body: { reference: 'REF-9', type: 'REFUND', amount: '3', currency: 'ZMW', status: 'PENDING' } });
    await expectConnectorError(
      adapter(server.url).refund({ reference: 'REF-9', originalReference: 'REF-1', amount: { amount: '3', currency: 'ZMW' }, payerId: '260971000002' }),
      'InstitutionTimeout',
      /outcome not final/,
    );
  });

  it('answers InstitutionUnavailable when nothing listens', async () => {
    const server = await canned({ status: 200 });
    const url = server.url;
    await server.close();
    await expectConnectorError(adapter(url).health(), 'InstitutionUnavailable', /cannot connect/);
  });

  it('refuses a reserve that arrives after its reference was released', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    await coreBanking.release('OVERTAKEN');
    await expectConnectorError(
      coreBanking.reserve({ reference: 'OVERTAKEN', amount: { amount: '5', currency: 'ZMW' }, payeeAccountId: institution.accountIdOf(PAYEE.idValue) }),
      'TransferStateConflict',
      /RESERVATION_RELEASED/,
    );
    expect(institution.floatAvailable()).toBe('1000');
  });

  it('releases as a no-op when nothing was reserved, and refuses to release a committed reservation', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    await coreBanking.release('NEVER-RESERVED');
    const request = { reference: 'REF-7', amount: { amount: '1', currency: 'ZMW' }, payeeAccountId: institution.accountIdOf(PAYEE.idValue) };
    await coreBanking.reserve(request);
    await coreBanking.commit(request);
    await expectConnectorError(coreBanking.release('REF-7'), 'TransferStateConflict');
    // A late repeat of the reserve finds the reservation committed: same reference, nothing moves.
    await expect(coreBanking.reserve(request)).resolves.toBeUndefined();
    expect(institution.balanceOf(PAYEE.idValue)).toBe('51');
    expect(institution.floatAvailable()).toBe('999');
  });
});

const ZMW = (amount: string) => ({ amount, currency: 'ZMW' });
const ORIGINAL = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';

/** What a gateway or framework answers for a path it does not route (Spring Boot's default body). */
const GATEWAY_404: FixtureReply = { status: 404, body: { timestamp: '2026-01-01T00:00:00Z', status: '404', error: 'Not Found', path: '/x' } };

describe('RestCoreBanking reads a 404 as the API\'s answer only with the documented code', () => {
  it('release: 404 RESERVATION_NOT_FOUND is done; a gateway\'s 404 or another code is an outage, not "nothing held"', async () => {
    await expect(adapter((await canned({ status: 404, body: { code: 'RESERVATION_NOT_FOUND', message: 'none' } })).url).release(ORIGINAL)).resolves.toBeUndefined();
    await expectConnectorError(adapter((await canned(GATEWAY_404)).url).release(ORIGINAL), 'InstitutionUnavailable', /^Institution unavailable: rest release: HTTP 404, not the API's RESERVATION_NOT_FOUND$/);
    await expectConnectorError(
      adapter((await canned({ status: 404, body: { code: 'TRANSACTION_NOT_FOUND', message: 'none' } })).url).release(ORIGINAL),
      'InstitutionUnavailable',
      /rest release: HTTP 404 TRANSACTION_NOT_FOUND, not the API's RESERVATION_NOT_FOUND/,
    );
  });

  it('transactionStatus: 404 TRANSACTION_NOT_FOUND is not-found; a gateway\'s 404 is an outage', async () => {
    expect(await adapter((await canned({ status: 404, body: { code: 'TRANSACTION_NOT_FOUND', message: 'none' } })).url).transactionStatus(ORIGINAL)).toBe('not-found');
    await expectConnectorError(adapter((await canned(GATEWAY_404)).url).transactionStatus(ORIGINAL), 'InstitutionUnavailable', /rest transactionStatus: HTTP 404, not the API's TRANSACTION_NOT_FOUND/);
  });

  it('lookupParty: 404 PARTY_NOT_FOUND is PartyNotFound; a gateway\'s 404 or an empty 404 is an outage', async () => {
    await expectConnectorError(adapter((await canned({ status: 404, body: { code: 'PARTY_NOT_FOUND', message: 'none' } })).url).lookupParty(PAYEE), 'PartyNotFound');
    await expectConnectorError(adapter((await canned(GATEWAY_404)).url).lookupParty(PAYEE), 'InstitutionUnavailable', /rest lookupParty: HTTP 404, not the API's PARTY_NOT_FOUND/);
    await expectConnectorError(adapter((await canned({ status: 404 })).url).lookupParty(PAYEE), 'InstitutionUnavailable', /rest lookupParty: HTTP 404, not the API's PARTY_NOT_FOUND/);
  });

  it('commit: a gateway\'s 404 is an outage, not a decline of the payee', async () => {
    await expectConnectorError(
      adapter((await canned(GATEWAY_404)).url).commit({ reference: 'REF-1', amount: ZMW('1'), payeeAccountId: 'ACC-1' }),
      'InstitutionUnavailable',
      /rest commit: HTTP 404: not an answer of the API/,
    );
  });

  it('the fixture answers a route outside the document 400 INVALID_REQUEST, as the document says', async () => {
    const institution = await fixture();
    const response = await fetch(`${institution.url}/accounts/1`);
    expect([response.status, await response.json()]).toEqual([400, { code: 'INVALID_REQUEST', message: 'no such route' }]);
  });
});



describe('RestCoreBanking lookups with a sub-identifier (idSubValue echoed, document: Party.idSubValue)', () => {
  const PARTY = { accountId: 'ACC-MAIN', idType: 'MSISDN', idValue: PAYEE.idValue, currency: 'ZMW', status: 'ACTIVE', name: { displayName: 'Chanda Mwila' } };

  it('refuses a party answered without the idSubValue asked for (another account of the number) as malformed', async () => {
    const server = await canned({ status: 200, body: PARTY });
    await expectConnectorError(
      adapter(server.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue, idSubValue: 'savings' }),
      'InstitutionUnavailable',
      /^Institution unavailable: rest lookupParty: malformed response: body.idSubValue differs from the one asked for$/,
    );
    expect(server.requests[0]?.path).toBe(`/parties/MSISDN/${PAYEE.idValue}?idSubValue=savings`);
  });

  it('refuses a party answered with another idSubValue, or with one when none was asked for', async () => {
    const server = await canned({ status: 200, body: { ...PARTY, idSubValue: 'current' } });
    await expectConnectorError(adapter(server.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue, idSubValue: 'savings' }), 'InstitutionUnavailable', /body.idSubValue differs/);
    await expectConnectorError(adapter(server.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /body.idSubValue differs/);
  });

  it('the fixture answers only the account with exactly that sub-identifier, and echoes it', async () => {
    const institution = await startRestFixture({
      ...CONTRACT_SEED,
      accounts: [...CONTRACT_SEED.accounts, { idType: 'MSISDN', idValue: '260971000008', idSubValue: 'savings', firstName: 'Mwaka', lastName: 'Zulu', balance: '5' }],
    });
    closers.push(() => institution.close());
    const coreBanking = adapter(institution.url);
    expect(await coreBanking.lookupParty({ idType: 'MSISDN', idValue: '260971000008', idSubValue: 'savings' })).toEqual({
      idType: 'MSISDN',
      idValue: '260971000008',
      idSubValue: 'savings',
      accountId: institution.accountIdOf('260971000008'),
      currency: 'ZMW',
      status: 'active',
      displayName: 'Mwaka Zulu',
      firstName: 'Mwaka',
      lastName: 'Zulu',
    });
    await expectConnectorError(coreBanking.lookupParty({ idType: 'MSISDN', idValue: '260971000008' }), 'PartyNotFound');
    await expectConnectorError(coreBanking.lookupParty({ idType: 'MSISDN', idValue: '260971000008', idSubValue: 'current' }), 'PartyNotFound');
    // A customer seeded without a sub-account has none to answer for a sub-value.
    await expectConnectorError(coreBanking.lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue, idSubValue: 'savings' }), 'PartyNotFound');
  });
});

describe('RestCoreBanking refunds, checked against the original debit (document: "Refunds")', () => {
  it('a refund of a debit the institution never saw is TransferNotFound (404 ORIGINAL_NOT_FOUND) and pays nothing', async () => {
    const institution = await fixture();
    await expectConnectorError(
      adapter(institution.url).refund({ reference: 'RF-1', originalReference: ORIGINAL, amount: ZMW('30'), payerId: PAYER.idValue }),
      'TransferNotFound',
      /HTTP 404 ORIGINAL_NOT_FOUND/,
    );
    expect(institution.balanceOf(PAYER.idValue)).toBe('200');
    expect(institution.floatBalance()).toBe('1000');
  });

  it('a refund of a collection still pending is TransferStateConflict (409 ORIGINAL_NOT_DEBITED)', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    await coreBanking.collect({ reference: ORIGINAL, amount: ZMW('30'), payerId: PAYER.idValue });
    await expectConnectorError(
      coreBanking.refund({ reference: 'RF-1', originalReference: ORIGINAL, amount: ZMW('30'), payerId: PAYER.idValue }),
      'TransferStateConflict',
      /HTTP 409 ORIGINAL_NOT_DEBITED/,
    );
    expect(institution.floatBalance()).toBe('1000');
  });

  it('a refund to another customer than the one debited is ModifiedRequest (422 PAYER_MISMATCH)', async () => {
    const institution = await fixture();
    institution.debitByChannel(ORIGINAL, PAYER.idValue, '30');
    await expectConnectorError(
      adapter(institution.url).refund({ reference: 'RF-1', originalReference: ORIGINAL, amount: ZMW('30'), payerId: PAYEE.idValue }),
      'ModifiedRequest',
      /HTTP 422 PAYER_MISMATCH/,
    );
    expect(institution.balanceOf(PAYEE.idValue)).toBe('50');
    expect(institution.floatBalance()).toBe('1030');
  });

  it('refunds together at most the original: 20 + 10 pass, one more cent is ModifiedRequest (422 REFUND_EXCEEDS_ORIGINAL)', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    institution.debitByChannel(ORIGINAL, PAYER.idValue, '30');
    await coreBanking.refund({ reference: 'RF-1', originalReference: ORIGINAL, amount: ZMW('20'), payerId: PAYER.idValue });
    await coreBanking.refund({ reference: 'RF-2', originalReference: ORIGINAL, amount: ZMW('10'), payerId: PAYER.idValue });
    await expectConnectorError(
      coreBanking.refund({ reference: 'RF-3', originalReference: ORIGINAL, amount: ZMW('0.01'), payerId: PAYER.idValue }),
      'ModifiedRequest',
      /HTTP 422 REFUND_EXCEEDS_ORIGINAL/,
    );
    // A repeat of a refund already paid is the same refund, not a new one.
    await coreBanking.refund({ reference: 'RF-1', originalReference: ORIGINAL, amount: ZMW('20'), payerId: PAYER.idValue });
    expect(institution.balanceOf(PAYER.idValue)).toBe('200');
    expect(institution.floatBalance()).toBe('1000');
  });

  it('originalReference takes a channel id of 128 characters with slashes; 129 characters is ValidationFailed', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url);
    const channelId = `branch/042/${'x'.repeat(117)}`;
    expect(channelId).toHaveLength(128);
    institution.debitByChannel(channelId, PAYER.idValue, '5');
    await coreBanking.refund({ reference: 'RF-1', originalReference: channelId, amount: ZMW('5'), payerId: PAYER.idValue });
    expect(institution.balanceOf(PAYER.idValue)).toBe('200');
    await expectConnectorError(
      coreBanking.refund({ reference: 'RF-2', originalReference: `${channelId}y`, amount: ZMW('5'), payerId: PAYER.idValue }),
      'ValidationFailed',
      /HTTP 400 INVALID_REQUEST/,
    );
  });
});

describe('RestCoreBanking collections (document: POST /collections, "Ending" and "Callback")', () => {
  it('an unanswered prompt ends FAILED, reason EXPIRED, 5 minutes after the request; approval after that debits nobody', async () => {
    const clock = new ManualClock();
    const institution = await fixture(undefined, { clock });
    const coreBanking = adapter(institution.url);
    await coreBanking.collect({ reference: ORIGINAL, amount: ZMW('30'), payerId: PAYER.idValue });
    clock.advance(PROMPT_LIFETIME_MS - 1);
    expect(await coreBanking.transactionStatus(ORIGINAL)).toBe('pending');
    clock.advance(1);
    expect(await coreBanking.transactionStatus(ORIGINAL)).toBe('failed');
    expect(institution.requests.at(-1)).toMatchObject({ method: 'GET', path: `/transactions/${ORIGINAL}` });
    expect(() => institution.approveCollection(ORIGINAL)).toThrow(/no pending collection/);
    expect(institution.balanceOf(PAYER.idValue)).toBe('200');
  });

  it('sends REST_CBS_CALLBACK_URL as callbackUrl; the institution calls it back once with a CollectionCallback', async () => {
    const receiver = await canned({ status: 200, body: {} });
    const institution = await fixture(undefined, { callbackHeaders: { 'x-callback-secret': 's3cret' } });
    const coreBanking = adapter(institution.url, undefined, `${receiver.url}/callback`);
    await coreBanking.collect({ reference: ORIGINAL, amount: ZMW('30'), payerId: PAYER.idValue, description: 'Lunch' });
    expect(institution.requests.at(-1)?.body).toEqual({
      reference: ORIGINAL,
      payerId: PAYER.idValue,
      amount: '30',
      currency: 'ZMW',
      description: 'Lunch',
      callbackUrl: `${receiver.url}/callback`,
    });
    institution.rejectCollection(ORIGINAL);
    for (let wait = 0; wait < 100 && receiver.requests.length === 0; wait += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]).toMatchObject({
      method: 'PUT',
      path: '/callback',
      headers: { 'x-callback-secret': 's3cret' },
      body: { reference: ORIGINAL, status: 'FAILED', reason: 'DECLINED', institutionReference: 'RC-01JDV6M3' },
    });
    expect(await coreBanking.transactionStatus(ORIGINAL)).toBe('failed');
  });
});

describe('rest transformers', () => {
  it('maps each documented status and nothing else', () => {
    expect(['PENDING', 'SUCCEEDED', 'FAILED', 'succeeded', ''].map(toTransactionStatus)).toEqual(['pending', 'succeeded', 'failed', 'unknown', 'unknown']);
  });

  it('maps 4xx codes to the catalogue by whose account is concerned', () => {
    const name = (status: number, code: string | undefined, role: 'party' | 'payee' | 'payer') =>
      declineFor('op', status, code === undefined ? '<html>' : { code, message: 'Jane Doe has 3 ZMW' }, role).errorName;
    expect(name(404, 'PARTY_NOT_FOUND', 'party')).toBe('PartyNotFound');
    expect(name(422, 'INSUFFICIENT_FLOAT', 'payee')).toBe('PayeeInsufficientLiquidity');
    expect(name(422, 'INSUFFICIENT_FUNDS', 'payer')).toBe('PayerInsufficientFunds');
    expect(name(422, 'ACCOUNT_BARRED', 'payee')).toBe('PayeeBarred');
    expect(name(422, 'ACCOUNT_BARRED', 'payer')).toBe('PayerRejected');
    expect(name(422, 'ACCOUNT_BLOCKED', 'payee')).toBe('PayeeBlocked');
    expect(name(422, 'ACCOUNT_CLOSED', 'payee')).toBe('PayeeClosed');
    expect(name(409, 'REFERENCE_CONFLICT', 'payee')).toBe('ModifiedRequest');
    expect(name(409, 'RESERVATION_RELEASED', 'payee')).toBe('TransferStateConflict');
    expect(name(404, 'RESERVATION_NOT_FOUND', 'payee')).toBe('TransferNotFound');
    expect(name(422, 'CURRENCY_NOT_SUPPORTED', 'payee')).toBe('UnsupportedCurrency');
    expect(name(400, 'INVALID_REQUEST', 'payer')).toBe('ValidationFailed');
    expect(name(404, 'ORIGINAL_NOT_FOUND', 'payer')).toBe('TransferNotFound');
    expect(name(409, 'ORIGINAL_NOT_DEBITED', 'payer')).toBe('TransferStateConflict');
    expect(name(422, 'PAYER_MISMATCH', 'payer')).toBe('ModifiedRequest');
    expect(name(422, 'CURRENCY_MISMATCH', 'payer')).toBe('ModifiedRequest');
    expect(name(422, 'REFUND_EXCEEDS_ORIGINAL', 'payer')).toBe('ModifiedRequest');
    expect(name(422, 'SOMETHING_NEW', 'payee')).toBe('PayeeRejected');
    expect(name(400, undefined, 'payer')).toBe('PayerRejected');
    expect(name(401, undefined, 'payee')).toBe('InstitutionUnavailable');
    // A 404 without a code of the API is not the API's answer (a gateway, a wrong base path).
    expect(name(404, undefined, 'payee')).toBe('InstitutionUnavailable');
    expect(name(404, 'NOT_FOUND', 'payer')).toBe('InstitutionUnavailable');
  });

  it('keeps the institution\'s message out of the error', () => {
    const error = declineFor('commit', 422, { code: 'ACCOUNT_BLOCKED', message: 'Jane Doe has 3 ZMW' }, 'payee');
    expect(error.message).toBe('Payee account blocked: rest commit: HTTP 422 ACCOUNT_BLOCKED');
  });
});

describe('readRestOptions', () => {
  it('reads a complete configuration', () => {
    expect(readRestOptions({ REST_CBS_BASE_URL: 'https://cbs.example.org/v1/', REST_CBS_API_KEY: 'k', REST_CBS_OUTGOING_FLOW: 'mobile-operator' })).toEqual({
      options: { baseUrl: 'https://cbs.example.org/v1', apiKey: 'k', outgoingFlow: 'mobile-operator', callbackUrl: undefined, timeoutMs: 10_000, connectTimeoutMs: 3000 },
    });
  });

  it('lists every problem at once', () => {
    expect(readRestOptions({ REST_CBS_TIMEOUT_MS: '10s', REST_CBS_OUTGOING_FLOW: 'wallet' })).toEqual({
      problems: [
        'REST_CBS_BASE_URL: required (set REST_CBS_BASE_URL)',
        'REST_CBS_OUTGOING_FLOW: "wallet" is not one of bank, mobile-operator',
        'REST_CBS_TIMEOUT_MS: "10s" is not a whole number from 50 to 120000',
      ],
    });
  });

  it('refuses credentials in the URL without repeating them', () => {
    const result = readRestOptions({ REST_CBS_BASE_URL: 'https://user:hunter2@cbs.example.org' });
    expect(result).toEqual({ problems: ['REST_CBS_BASE_URL: must not carry credentials; use the credential settings'] });
  });
});
