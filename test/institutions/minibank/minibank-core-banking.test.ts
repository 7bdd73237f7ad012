import { afterEach, describe, expect, it } from 'vitest';
import { CONTRACT_SEED, PAYEE, expectConnectorError } from '../core-banking-contract.js';
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
