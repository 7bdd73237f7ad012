import { afterEach, describe, expect, it } from 'vitest';
import { CONTRACT_SEED, expectConnectorError } from '../core-banking-contract.js';
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
