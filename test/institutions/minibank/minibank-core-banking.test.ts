import { afterEach, describe, expect, it } from 'vitest';
import { CONTRACT_SEED, PAYEE, PAYER, expectConnectorError } from '../core-banking-contract.js';
import type { FixtureInstitution } from '../fixture-institution.js';
import { startFixtureServer, type FixtureReply, type FixtureRequest, type FixtureServer } from '../fixture-server.js';
import { MINIBANK_FIXTURE_API_KEY, startMiniBankFixture } from './minibank-fixture.js';
import { MiniBankCoreBanking } from '../../../src/adapters/core-banking/minibank/minibank-core-banking.js';
import { causeOf } from '../../../src/http/health.js';

/**
 * What the contract suite cannot know about MiniBank: its lookup rules (MSISDN only, one
 * customer per number), its check that a payment's confirmation is the payment sent, its 4xx
 * mapping and its health causes. Answers an honest fixture never gives come from canned servers.
 */

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

function adapter(baseUrl: string, apiKey = MINIBANK_FIXTURE_API_KEY): MiniBankCoreBanking {
  const coreBanking = new MiniBankCoreBanking({ baseUrl, apiKey, timeoutMs: 300 });
  closers.push(() => coreBanking.close());
  return coreBanking;
}

async function fixture(): Promise<FixtureInstitution> {
  const started = await startMiniBankFixture(CONTRACT_SEED);
  closers.push(() => started.close());
  return started;
}

/** A real server on loopback answering each request with `handle`'s reply. */
async function canned(handle: (request: FixtureRequest) => FixtureReply): Promise<FixtureServer> {
  const server = await startFixtureServer({ handle, isWrite: (request) => request.method === 'POST' });
  closers.push(() => server.close());
  return server;
}

const customer = (msisdn: string, wallet: string) => ({ msisdn, ref: `C-${wallet}`, given: 'Mutale', family: 'Banda', state: 'OPEN', wallet, ccy: 'ZMW' });

/** MiniBank that knows the payer (wallet W-PAYER) and answers every payment with `payment`. */
function payingWith(payment: FixtureReply): (request: FixtureRequest) => FixtureReply {
  return (request) => (request.path === '/customers' ? { status: 200, body: { customers: [customer(PAYER.idValue, 'W-PAYER')] } } : payment);
}

const COMMIT = { reference: 'REF-1', amount: { amount: '10.5', currency: 'ZMW' }, payeeAccountId: 'W-PAYEE' };
const BOOKED = { key: 'REF-1', to: 'W-PAYEE', amount_minor: '1050', ccy: 'ZMW', state: 'BOOKED' };

describe('MiniBankCoreBanking lookups: by MSISDN alone, one customer per number', () => {
  it('finds the customer by MSISDN and reads the echoed number', async () => {
    const institution = await fixture();
    expect(await adapter(institution.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue })).toEqual({
      idType: 'MSISDN',
      idValue: PAYEE.idValue,
      accountId: institution.accountIdOf(PAYEE.idValue),
      currency: 'ZMW',
      status: 'active',
      displayName: 'Chanda Mwila',
      firstName: 'Chanda',
      lastName: 'Mwila',
    });
    expect(institution.requests.map((request) => request.path)).toEqual([`/customers?msisdn=${PAYEE.idValue}`]);
  });

  it('another identifier type is PartyNotFound without asking MiniBank (it would answer whoever has that number)', async () => {
    const institution = await fixture();
    await expectConnectorError(adapter(institution.url).lookupParty({ idType: 'ACCOUNT_ID', idValue: PAYEE.idValue }), 'PartyNotFound', /minibank finds customers by MSISDN alone/);
    await expectConnectorError(adapter(institution.url).lookupParty({ idType: 'EMAIL', idValue: PAYEE.idValue }), 'PartyNotFound');
    expect(institution.requests).toEqual([]);
  });

  it('a sub-identifier is PartyNotFound without asking MiniBank (one wallet per customer, never the main one instead)', async () => {
    const institution = await fixture();
    await expectConnectorError(adapter(institution.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue, idSubValue: 'savings' }), 'PartyNotFound');
    expect(institution.requests).toEqual([]);
  });

  it('refuses an answer naming several customers as malformed, rather than crediting the first', async () => {
    const server = await canned(() => ({ status: 200, body: { customers: [customer(PAYEE.idValue, 'W-1'), customer(PAYEE.idValue, 'W-2')] } }));
    await expectConnectorError(
      adapter(server.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }),
      'InstitutionUnavailable',
      /^Institution unavailable: minibank lookupParty: malformed response: body.customers names 2 customers for one number$/,
    );
  });

  it('refuses a customer with another number, or without one, as malformed', async () => {
    const other = await canned(() => ({ status: 200, body: { customers: [customer('260971000077', 'W-1')] } }));
    await expectConnectorError(adapter(other.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /body.customers\[0\].msisdn is not the number asked for/);
    const { msisdn: _dropped, ...withoutNumber } = customer(PAYEE.idValue, 'W-1');
    const missing = await canned(() => ({ status: 200, body: { customers: [withoutNumber] } }));
    await expectConnectorError(adapter(missing.url).lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /body.customers\[0\].msisdn/);
  });

  it('an empty list is PartyNotFound', async () => {
    const institution = await fixture();
    await expectConnectorError(adapter(institution.url).lookupParty({ idType: 'MSISDN', idValue: '260971999999' }), 'PartyNotFound');
  });
});

describe('MiniBankCoreBanking payments: the confirmation must be the payment sent', () => {
  it('accepts the exact echo, and sends the reference as Idempotency-Key with the amount in minor units', async () => {
    const server = await canned(() => ({ status: 201, body: BOOKED }));
    await adapter(server.url).commit(COMMIT);
    const sent = server.requests[0];
    expect([sent?.method, sent?.path, sent?.headers['idempotency-key'], sent?.headers['x-api-key']]).toEqual(['POST', '/payments', 'REF-1', MINIBANK_FIXTURE_API_KEY]);
  });

  it.each([
    ['another amount', { ...BOOKED, amount_minor: '1051' }, 'body.amount_minor differs from the request'],
    ['another currency', { ...BOOKED, ccy: 'MWK' }, 'body does not match the payment sent'],
    ['another reference', { ...BOOKED, key: 'REF-2' }, 'body does not match the payment sent'],
    ['another wallet', { ...BOOKED, to: 'W-OTHER' }, 'body does not match the payment sent'],
    ['an amount that is not minor units', { ...BOOKED, amount_minor: '10.50' }, 'body.amount_minor is not a whole number of minor units'],
    ['an unknown state on a 2xx', { ...BOOKED, state: 'QUEUED' }, 'body.state is QUEUED on a 2xx'],
    ['a rejected state on a 2xx', { ...BOOKED, state: 'REJECTED' }, 'body.state is REJECTED on a 2xx'],
  ])('refuses a confirmation with %s as malformed, not as success', async (_case, body, reason) => {
    const server = await canned(() => ({ status: 200, body }));
    const error = await expectConnectorError(adapter(server.url).commit(COMMIT), 'InstitutionUnavailable');
    expect(error.message).toBe(`Institution unavailable: minibank commit: malformed response: ${reason}`);
  });

  it('checks a refund\'s confirmation the same way (paid to the payer\'s wallet)', async () => {
    const refund = { reference: 'REF-9', originalReference: 'home-1', amount: { amount: '3', currency: 'ZMW' }, payerId: PAYER.idValue };
    const paid = await canned(payingWith({ status: 201, body: { key: 'REF-9', to: 'W-PAYER', amount_minor: '300', ccy: 'ZMW', state: 'BOOKED' } }));
    await expect(adapter(paid.url).refund(refund)).resolves.toBeUndefined();
    const wrong = await canned(payingWith({ status: 201, body: { key: 'REF-9', to: 'W-PAYER', amount_minor: '3', ccy: 'ZMW', state: 'BOOKED' } }));
    await expectConnectorError(adapter(wrong.url).refund(refund), 'InstitutionUnavailable', /minibank refund: malformed response: body.amount_minor differs from the request/);
  });
});

describe('MiniBankCoreBanking transactionStatus', () => {
  it.each([
    ['BOOKED', 'succeeded'],
    ['REJECTED', 'failed'],
    ['QUEUED', 'unknown'],
  ] as const)('reads state %s as %s', async (state, status) => {
    const server = await canned(() => ({ status: 200, body: { ...BOOKED, state } }));
    expect(await adapter(server.url).transactionStatus('REF-1')).toBe(status);
    expect(server.requests[0]?.path).toBe('/payments/REF-1');
  });

  it('refuses a payment answered for another reference as malformed', async () => {
    const server = await canned(() => ({ status: 200, body: { ...BOOKED, key: 'REF-2' } }));
    await expectConnectorError(adapter(server.url).transactionStatus('REF-1'), 'InstitutionUnavailable', /minibank transactionStatus: malformed response: body.key differs from the request/);
  });
});

describe('MiniBankCoreBanking 4xx: a 422 is a decline by whose account it was, any other 4xx an outage', () => {
  it.each([
    ['NSF', 'PayeeInsufficientLiquidity'],
    ['FROZEN', 'PayeeBlocked'],
    ['SHUT', 'PayeeClosed'],
    ['NO_WALLET', 'PartyNotFound'],
    ['LIMIT', 'PayeeRejected'],
  ] as const)('commit: 422 %s is %s', async (reason, name) => {
    const server = await canned(() => ({ status: 422, body: { reason } }));
    const error = await expectConnectorError(adapter(server.url).commit(COMMIT), name);
    expect(error.message).toContain(`minibank payment refused: ${reason}`);
  });

  it.each([
    ['NSF', 'InstitutionUnavailable'],
    ['FROZEN', 'PayerRejected'],
    ['SHUT', 'PayerRejected'],
    ['NO_WALLET', 'PartyNotFound'],
    ['LIMIT', 'PayerRejected'],
  ] as const)('refund: 422 %s is %s', async (reason, name) => {
    const server = await canned(payingWith({ status: 422, body: { reason } }));
    await expectConnectorError(adapter(server.url).refund({ reference: 'REF-9', originalReference: 'home-1', amount: { amount: '3', currency: 'ZMW' }, payerId: PAYER.idValue }), name);
  });

  it.each([400, 401, 403, 404, 409])('commit: HTTP %i is InstitutionUnavailable, never a decline', async (status) => {
    const server = await canned(() => ({ status, body: { error: 'no' } }));
    await expectConnectorError(adapter(server.url).commit(COMMIT), 'InstitutionUnavailable', new RegExp(`^Institution unavailable: minibank commit: HTTP ${status}$`));
  });

  it('a wrong key is an outage on every operation, never a decline', async () => {
    const institution = await fixture();
    const coreBanking = adapter(institution.url, 'wrong-key');
    await expectConnectorError(coreBanking.lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /minibank lookupParty: HTTP 401/);
    await expectConnectorError(coreBanking.reserve({ reference: 'REF-1', amount: { amount: '1', currency: 'ZMW' }, payeeAccountId: institution.accountIdOf(PAYEE.idValue) }), 'InstitutionUnavailable', /minibank reserve: HTTP 401/);
    expect(institution.floatBalance()).toBe('1000');
  });
});

describe('MiniBankCoreBanking health', () => {
  it('answers when MiniBank does; a refused key is reported as credentials-refused', async () => {
    const institution = await fixture();
    await expect(adapter(institution.url).health()).resolves.toBeUndefined();
    const error = await expectConnectorError(adapter(institution.url, 'wrong-key').health(), 'InstitutionUnavailable', /minibank health: HTTP 401: MINIBANK_API_KEY refused/);
    expect(causeOf(error)).toBe('credentials-refused');
    expect(error.message).not.toContain('wrong-key');
  });

  it('a 403 is credentials-refused too; a 5xx or another 4xx is unavailable', async () => {
    expect(causeOf(await adapter((await canned(() => ({ status: 403, body: { error: 'forbidden' } }))).url).health().catch((error: unknown) => error))).toBe('credentials-refused');
    expect(causeOf(await adapter((await canned(() => ({ status: 503 }))).url).health().catch((error: unknown) => error))).toBe('unavailable');
    expect(causeOf(await adapter((await canned(() => ({ status: 404, body: { error: 'no such route' } }))).url).health().catch((error: unknown) => error))).toBe('unavailable');
  });
});
