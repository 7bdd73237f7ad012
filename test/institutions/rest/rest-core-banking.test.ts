import { afterEach, describe, expect, it } from 'vitest';
import { CONTRACT_SEED, PAYEE, expectConnectorError } from '../core-banking-contract.js';
import type { FixtureInstitution } from '../fixture-institution.js';
import { startFixtureServer, type FixtureReply, type FixtureServer } from '../fixture-server.js';
import { RestCoreBanking } from '../../../src/adapters/core-banking/rest/rest-core-banking.js';
import { startRestFixture } from './rest-fixture.js';
import { readRestOptions } from '../../../src/adapters/core-banking/rest/rest-options.js';
import { declineFor, toTransactionStatus } from '../../../src/adapters/core-banking/rest/rest-transform.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

function adapter(baseUrl: string, apiKey?: string): RestCoreBanking {
  const coreBanking = new RestCoreBanking({ baseUrl, apiKey, outgoingFlow: 'bank', timeoutMs: 500, connectTimeoutMs: 500 });
  closers.push(() => coreBanking.close());
  return coreBanking;
}

async function fixture(apiKey?: string): Promise<FixtureInstitution> {
  const started = await startRestFixture({
    ...CONTRACT_SEED,
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
    expect(name(422, 'SOMETHING_NEW', 'payee')).toBe('PayeeRejected');
    expect(name(400, undefined, 'payer')).toBe('PayerRejected');
    expect(name(401, undefined, 'payee')).toBe('InstitutionUnavailable');
  });

  it('keeps the institution\'s message out of the error', () => {
    const error = declineFor('commit', 422, { code: 'ACCOUNT_BLOCKED', message: 'Jane Doe has 3 ZMW' }, 'payee');
    expect(error.message).toBe('Payee account blocked: rest commit: HTTP 422 ACCOUNT_BLOCKED');
  });
});

describe('readRestOptions', () => {
  it('reads a complete configuration', () => {
    expect(readRestOptions({ REST_CBS_BASE_URL: 'https://cbs.example.org/v1/', REST_CBS_API_KEY: 'k', REST_CBS_OUTGOING_FLOW: 'mobile-operator' })).toEqual({
      options: { baseUrl: 'https://cbs.example.org/v1', apiKey: 'k', outgoingFlow: 'mobile-operator', timeoutMs: 10_000, connectTimeoutMs: 3000 },
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
