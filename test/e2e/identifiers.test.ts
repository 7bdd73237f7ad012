import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSwitch, type FakeSwitch } from '../support/fake-switch.js';
import { GatedSwitch } from '../support/gated-switch.js';
import { ManualClock, TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { createTestDatabase } from '../support/postgres.js';
import { startHarness, type Harness } from '../support/sandbox-harness.js';
import { request } from 'undici';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreBanking } from '../../src/ports/core-banking.js';

/**
 * Individual opt-in and opt-out of customer identifiers through the outgoing server, the
 * sandbox institution confirming each identifier and the fake switch connector standing in for
 * the platform's POST /accounts and DELETE /accounts/... (answers as the real one gives them).
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const CONSENT = { by: 'customer 260971000001', at: '2026-11-23T09:58:00.000Z', channel: 'app' };

function accountsCalls(harness: Harness): Array<{ method: string; path: string; body: unknown }> {
  return harness.fakeSwitch.requests.filter((request) => request.path.startsWith('/accounts')).map((request) => ({ method: request.method, path: request.path, body: request.body }));
}

describe('identifier opt-in and opt-out', () => {
  it('registers an active customer\'s MSISDN once, answers its state, and opts it out once', async () => {
    h = await startHarness();
    const body = { idType: 'MSISDN', idValue: '260971000001', consent: CONSENT };
    const registered = { idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW', state: 'REGISTERED', updatedAt: '2026-11-23T10:00:00.000Z' };
    expect(await h.callOutgoing('POST', '/identifiers', body)).toEqual({ status: 200, body: registered });
    expect(await h.callOutgoing('POST', '/identifiers', body)).toEqual({ status: 200, body: registered });
    expect(await h.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).toEqual({ status: 200, body: registered });
    expect(accountsCalls(h)).toEqual([{ method: 'POST', path: '/accounts', body: [{ idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW' }] }]);
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual(['MSISDN/260971000001']);

    expect(await h.callOutgoing('POST', '/identifiers/opt-out', body)).toEqual({ status: 200, body: { ...registered, state: 'DEREGISTERED' } });
    expect(await h.callOutgoing('POST', '/identifiers/opt-out', body)).toEqual({ status: 200, body: { ...registered, state: 'DEREGISTERED' } });
    expect(accountsCalls(h).slice(1)).toEqual([{ method: 'DELETE', path: '/accounts/MSISDN/260971000001', body: undefined }]);
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual([]);
    // Opting in again after an opt-out is a new registration.
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
  });

  it('registers only valid identifiers of active customers who consented, each refusal with its reason', async () => {
    h = await startHarness();
    const harness = h;
    const refuse = (body: Record<string, unknown>): Promise<{ status: number; body: unknown }> => harness.callOutgoing('POST', '/identifiers', { consent: CONSENT, ...body });
    expect(await refuse({ idType: 'MSISDN', idValue: '0971000001' })).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: MSISDN must be an E.164 number in international format, without a leading 0 or 00' } });
    expect(await refuse({ idType: 'IBAN', idValue: 'GB82WEST12345698765433' })).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: IBAN must have IBAN check digits that agree (MOD 97-10)' } });
    expect(await refuse({ idType: 'MSISDN', idValue: '260971000003' })).toEqual({ status: 422, body: { statusCode: '4100', message: 'Payer rejected the payment: the account is barred: only active accounts are registered' } });
    expect(await refuse({ idType: 'MSISDN', idValue: '260971999999' })).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found: no customer of the institution has this identifier' } });
    await harness.app.sandbox?.withdrawConsent({ idType: 'MSISDN', idValue: '260971000002' });
    expect(await refuse({ idType: 'MSISDN', idValue: '260971000002' })).toEqual({ status: 422, body: { statusCode: '4100', message: 'Payer rejected the payment: the customer has not consented to the registration' } });
    expect((await refuse({ idType: 'MSISDN', idValue: '260971000006', consent: { by: 'x', at: 'yesterday', channel: 'app' } })).status).toBe(400);
    expect(await harness.callOutgoing('GET', '/identifiers/MSISDN/260971000006')).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found: this identifier is not in the registry' } });
    expect(accountsCalls(harness)).toEqual([]);
    expect((await harness.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000001', consent: CONSENT }, {})).status).toBe(401);
  });

  it('keeps the platform\'s refusal with its code; a later opt-in tries again', async () => {
    h = await startHarness();
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'Add Party information error - identifier already registered by another FSP' });
    const body = { idType: 'MSISDN', idValue: '260971000006', consent: CONSENT };
    expect(await h.callOutgoing('POST', '/identifiers', body)).toEqual({
      status: 200,
      body: { idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW', state: 'FAILED', platformError: { statusCode: '3003', message: 'Add Party information error - identifier already registered by another FSP' }, updatedAt: '2026-11-23T10:00:00.000Z' },
    });
    // A refused identifier is not stuck: opting in again asks the platform again.
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'FAILED', platformError: { statusCode: '3003' } });
    expect(accountsCalls(h)).toHaveLength(2);
  });

  it('a platform that does not answer leaves the registration REQUESTED; the recovery pass finishes it once', async () => {
    h = await startHarness();
    h.fakeSwitch.failAccounts(504, 1);
    const body = { idType: 'MSISDN', idValue: '260971000001', consent: CONSENT };
    expect(await h.callOutgoing('POST', '/identifiers', body)).toEqual({
      status: 202,
      body: { idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW', state: 'REQUESTED', lastError: 'platform did not answer: HTTP 504, statusCode 2004: platform did not answer', updatedAt: '2026-11-23T10:00:00.000Z' },
    });
    // A repeat while it is pending asks the platform nothing more.
    expect((await h.callOutgoing('POST', '/identifiers', body)).status).toBe(202);
    expect(accountsCalls(h)).toHaveLength(1);
    h.clock.advance(1_000);
    expect(await h.app.identifiers.runOnce(60_000)).toEqual({ claimed: 1 });
    expect((await h.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'REGISTERED' });
    expect(accountsCalls(h)).toHaveLength(2);
    expect(await h.app.identifiers.runOnce(60_000)).toEqual({ claimed: 0 });
  });

  it('normalises an IBAN and a PERSONAL_ID needs its kind', async () => {
    h = await startHarness();
    const iban = await h.callOutgoing('POST', '/identifiers', { idType: 'IBAN', idValue: 'gb82 west 1234 5698 7654 32', consent: CONSENT });
    // Normalised first, then looked up: nobody at the sandbox has this IBAN.
    expect(iban).toEqual({ status: 404, body: { statusCode: '3204', message: 'Party not found: no customer of the institution has this identifier' } });
    expect((await h.callOutgoing('POST', '/identifiers', { idType: 'PERSONAL_ID', idValue: '123456/10/1', consent: CONSENT })).body).toEqual({
      statusCode: '3100',
      message: 'Generic validation error: PERSONAL_ID needs its kind in the sub-identifier (PartySubIdOrType), e.g. NATIONAL_ID or PASSPORT',
    });
  });
});

describe('identifier reconciliation', () => {
  it('lists registered identifiers the institution no longer backs and consenting customers never registered, and fixes both', async () => {
    h = await startHarness();
    for (const idValue of ['260971000001', '260971000002', '260971000006']) {
      expect((await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue, consent: CONSENT })).body).toMatchObject({ state: 'REGISTERED' });
    }
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', { idType: 'MSISDN', idValue: '260971000006', consent: CONSENT })).body).toMatchObject({ state: 'DEREGISTERED' });
    await h.app.sandbox?.setAccountStatus('zm-acc-0001', 'closed');
    await h.app.sandbox?.withdrawConsent({ idType: 'MSISDN', idValue: '260971000002' });
    const expected = {
      registeredButIneligible: [
        { idType: 'MSISDN', idValue: '260971000001', state: 'REGISTERED', reason: 'the account is closed' },
        { idType: 'MSISDN', idValue: '260971000002', state: 'REGISTERED', reason: 'the customer withdrew consent' },
      ],
      // Active and consenting, never registered; 260971000006 opted out and is left alone.
      eligibleNotRegistered: [
        { idType: 'ACCOUNT_ID', idValue: '1000234567' },
        { idType: 'MSISDN', idValue: '260971000008', idSubValue: 'savings' },
      ],
      invalidAtInstitution: [],
    };
    expect(await h.callOutgoing('GET', '/identifiers/reconciliation')).toEqual({ status: 200, body: expected });
    expect(await h.callOutgoing('POST', '/identifiers/reconciliation/fix', {})).toEqual({ status: 200, body: { optedOut: 2, registered: 2, problems: [] } });
    expect(await h.callOutgoing('GET', '/identifiers/reconciliation')).toEqual({ status: 200, body: { registeredButIneligible: [], eligibleNotRegistered: [], invalidAtInstitution: [] } });
    expect([...h.fakeSwitch.registeredIdentifiers].sort()).toEqual(['ACCOUNT_ID/1000234567', 'MSISDN/260971000008/savings']);
  });
});

describe('identifier reconciliation against an institution that writes its identifiers unnormalised', () => {
  /**
   * An institution whose records print an e-mail domain in capitals (its look-up ignores the
   * domain's case, as e-mail does) and hold an e-mail address that is none.
   */
  function withEmailCustomers(inner: CoreBanking): CoreBanking {
    const email = { idType: 'EMAIL' as const, idValue: 'Jo.Banda@Example.ORG' };
    const eligibility = { accountId: 'zm-acc-0001', currency: 'ZMW', status: 'active', consent: 'given' } as const;
    const lookup = inner.identifierEligibility?.bind(inner);
    const list = inner.listIdentifiers?.bind(inner);
    if (lookup === undefined || list === undefined) throw new Error('the sandbox lists its customers');
    return Object.assign(Object.create(inner) as CoreBanking, {
      identifierEligibility: async (id: Parameters<typeof lookup>[0]) => (id.idType === 'EMAIL' && id.idValue.toLowerCase() === email.idValue.toLowerCase() ? eligibility : lookup(id)),
      listIdentifiers: async () => [...(await list()), { ...email, ...eligibility }, { idType: 'EMAIL' as const, idValue: 'jo banda at example', ...eligibility }],
    });
  }

  it('compares them in their normal form: a registered one is left alone, one opted out stays out, one that breaks its rule is reported, never registered', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: withEmailCustomers } });
    expect((await h.callOutgoing('POST', '/identifiers', { idType: 'EMAIL', idValue: 'Jo.Banda@Example.ORG', consent: CONSENT })).body).toMatchObject({ idValue: 'Jo.Banda@example.org', state: 'REGISTERED' });
    const invalid = [{ idType: 'EMAIL', idValue: 'jo banda at example', problem: 'Generic validation error: EMAIL must be an e-mail address: local-part@domain' }];
    const found = (await h.callOutgoing('GET', '/identifiers/reconciliation')).body as Record<string, unknown>;
    // The registered address is the institution's: not "no customer has it any more".
    expect(found['registeredButIneligible']).toEqual([]);
    expect(found['invalidAtInstitution']).toEqual(invalid);
    expect(await h.callOutgoing('POST', '/identifiers/reconciliation/fix', {})).toMatchObject({ status: 200, body: { optedOut: 0, problems: [] } });
    expect(accountsCalls(h).filter((call) => call.path !== '/accounts' || JSON.stringify(call.body).includes('EMAIL')).map((call) => `${call.method} ${call.path}`)).toEqual(['POST /accounts']);
    // Opted out: the fix leaves it out.
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', { idType: 'EMAIL', idValue: 'Jo.Banda@example.org', consent: CONSENT })).body).toMatchObject({ state: 'DEREGISTERED' });
    const after = (await h.callOutgoing('GET', '/identifiers/reconciliation')).body as Record<string, unknown>;
    expect(after).toEqual({ registeredButIneligible: [], eligibleNotRegistered: [], invalidAtInstitution: invalid });
    expect(await h.callOutgoing('POST', '/identifiers/reconciliation/fix', {})).toEqual({ status: 200, body: { optedOut: 0, registered: 0, problems: [] } });
    expect((await h.callOutgoing('GET', '/identifiers/EMAIL/Jo.Banda@example.org')).body).toMatchObject({ state: 'DEREGISTERED' });
    expect([...h.fakeSwitch.registeredIdentifiers].filter((key) => key.startsWith('EMAIL'))).toEqual([]);
  });
});

describe('identifier registry on PostgreSQL', () => {
  it('registers four parallel repeats once each and opts out, through a PostgreSQL store', async () => {
    const database = await createTestDatabase();
    try {
      h = await startHarness({ env: { DATABASE_URL: database.url } });
      const harness = h;
      const bodies = ['260971000001', '260971000002', '260971000006'].map((idValue) => ({ idType: 'MSISDN', idValue, consent: CONSENT }));
      // Each registration asked four times at once: one row and one platform call each.
      const answers = await Promise.all(bodies.flatMap((body) => [1, 2, 3, 4].map(() => harness.callOutgoing('POST', '/identifiers', body))));
      expect(answers.every((answer) => answer.status === 200 && (answer.body as { state: string }).state === 'REGISTERED')).toBe(true);
      const registered = harness.fakeSwitch.requests.filter((request) => request.method === 'POST' && request.path === '/accounts');
      expect(registered).toHaveLength(3);
      expect([...harness.fakeSwitch.registeredIdentifiers].sort()).toEqual(['MSISDN/260971000001', 'MSISDN/260971000002', 'MSISDN/260971000006']);
      expect((await harness.callOutgoing('POST', '/identifiers/opt-out', bodies[0])).body).toMatchObject({ state: 'DEREGISTERED' });
      expect((await harness.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'DEREGISTERED' });
      await harness.close();
      h = undefined;
    } finally {
      await database.drop();
    }
  });
});

describe('an opt-out while the identifier\'s registration is on its way', () => {
  const ONE_LINE = 'idType,idValue,idSubValue,consentBy,consentAt,consentChannel\nMSISDN,260971000001,,branch agent 7,2026-11-20T08:00:00Z,branch\n';
  const body = { idType: 'MSISDN', idValue: '260971000001', consent: CONSENT };
  let fake: FakeSwitch | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await fake?.close();
    fake = undefined;
  });

  async function gatedHarness(env: Record<string, string> = {}): Promise<{ harness: Harness; gated: GatedSwitch }> {
    const clock = new ManualClock();
    fake = await startFakeSwitch({ now: () => clock.now() });
    const gated = new GatedSwitch(fake.url);
    h = await startHarness({ clock, fakeSwitch: fake, env, overrides: { switchConnector: gated } });
    return { harness: h, gated };
  }

  /** A bulk registration of one identifier, its POST /accounts held on its way; the individual opt-out meanwhile. */
  async function optOutDuringBulkBatch(harness: Harness, gated: GatedSwitch): Promise<void> {
    const onItsWay = gated.hold();
    const upload = await request(`${harness.outgoingUrl}/identifiers/jobs?action=register`, { method: 'POST', headers: { 'content-type': 'text/csv', 'x-api-key': TEST_CHANNEL_API_KEY }, body: ONE_LINE });
    expect(upload.statusCode).toBe(202);
    await upload.body.dump();
    await onItsWay;
    try {
      // The removal waits for the registration: sent now, it could reach the platform first.
      expect(await harness.callOutgoing('POST', '/identifiers/opt-out', body)).toMatchObject({ status: 202, body: { state: 'OPTING_OUT' } });
      expect(accountsCalls(harness)).toEqual([]);
    } finally {
      gated.release();
    }
    await harness.app.identifierJobs.idle();
    expect(accountsCalls(harness).map((call) => `${call.method} ${call.path}`)).toEqual(['POST /accounts', 'DELETE /accounts/MSISDN/260971000001']);
    expect((await harness.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'DEREGISTERED' });
    expect([...harness.fakeSwitch.registeredIdentifiers]).toEqual([]);
  }

  it('during a bulk batch: the removal is sent once the registration is answered, and the platform keeps nothing', async () => {
    const { harness, gated } = await gatedHarness();
    await optOutDuringBulkBatch(harness, gated);
  });

  it('during a bulk batch, on PostgreSQL', async () => {
    const database = await createTestDatabase();
    try {
      const { harness, gated } = await gatedHarness({ DATABASE_URL: database.url });
      await optOutDuringBulkBatch(harness, gated);
      await harness.close();
      h = undefined;
    } finally {
      await database.drop();
    }
  });

  it('during the recovery pass\'s retry of a registration the platform did not answer', async () => {
    const { harness, gated } = await gatedHarness();
    harness.fakeSwitch.failAccounts(504, 1);
    expect((await harness.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REQUESTED' });
    harness.clock.advance(1_000);
    const onItsWay = gated.hold();
    const pass = harness.app.identifiers.runOnce(60_000);
    await onItsWay;
    expect(await harness.callOutgoing('POST', '/identifiers/opt-out', body)).toMatchObject({ status: 202, body: { state: 'OPTING_OUT' } });
    gated.release();
    expect(await pass).toEqual({ claimed: 1 });
    expect(accountsCalls(harness).map((call) => `${call.method} ${call.path}`)).toEqual(['POST /accounts', 'POST /accounts', 'DELETE /accounts/MSISDN/260971000001']);
    expect((await harness.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'DEREGISTERED' });
    expect([...harness.fakeSwitch.registeredIdentifiers]).toEqual([]);
    // Nothing is left for the next pass.
    harness.clock.advance(120_000);
    expect(await harness.app.identifiers.runOnce(60_000)).toEqual({ claimed: 0 });
  });
});

describe('a removal the platform refuses', () => {
  const body = { idType: 'MSISDN', idValue: '260971000006', consent: CONSENT };

  it('of an identifier whose registration the platform refused: removed from the registry without asking the platform', async () => {
    h = await startHarness();
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'identifier registered by another FSP' });
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'FAILED', platformError: { statusCode: '3003' } });
    expect(await h.callOutgoing('POST', '/identifiers/opt-out', body)).toEqual({
      status: 200,
      body: { idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW', state: 'DEREGISTERED', updatedAt: '2026-11-23T10:00:00.000Z' },
    });
    expect(accountsCalls(h).map((call) => call.method)).toEqual(['POST']);
    // A later opt-in asks the platform again.
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'FAILED' });
    expect(accountsCalls(h).map((call) => call.method)).toEqual(['POST', 'POST']);
  });

  it('per item (HTTP 200): OPT_OUT_FAILED with its code, not retried; a new opt-out asks again, an opt-in registers again', async () => {
    h = await startHarness();
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'identifier registered by another FSP' });
    expect(await h.callOutgoing('POST', '/identifiers/opt-out', body)).toEqual({
      status: 200,
      body: { idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW', state: 'OPT_OUT_FAILED', platformError: { statusCode: '3003', message: 'identifier registered by another FSP' }, updatedAt: '2026-11-23T10:00:00.000Z' },
    });
    h.clock.advance(3_600_000);
    expect(await h.app.identifiers.runOnce(60_000)).toEqual({ claimed: 0 });
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', body)).body).toMatchObject({ state: 'OPT_OUT_FAILED' });
    expect(accountsCalls(h).map((call) => call.method)).toEqual(['POST', 'DELETE', 'DELETE']);
    // Opting in again is a registration (an update at the platform), not an early answer.
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'FAILED', platformError: { statusCode: '3003' } });
    expect(accountsCalls(h).map((call) => call.method)).toEqual(['POST', 'DELETE', 'DELETE', 'POST']);
  });

  describe('as the real switch connector answers it: an HTTP error carrying the platform\'s code', () => {
    let refusing: Server | undefined;
    let fake: FakeSwitch | undefined;
    afterEach(async () => {
      await h?.close();
      h = undefined;
      await fake?.close();
      fake = undefined;
      await new Promise<void>((resolve) => (refusing === undefined ? resolve() : refusing.close(() => resolve())));
      refusing = undefined;
    });

    /** A registered identifier whose DELETEs are answered, in turn, with `answers` (status, body). */
    async function refusedRemoval(answers: Array<[number, Record<string, unknown>]>): Promise<{ harness: Harness; deletes: () => number }> {
      let deletes = 0;
      refusing = createServer((_request, response) => {
        const [status, answer] = answers[Math.min(deletes, answers.length - 1)] ?? [500, {}];
        deletes += 1;
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
      const server = refusing;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const removals = new GatedSwitch(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const clock = new ManualClock();
      fake = await startFakeSwitch({ now: () => clock.now() });
      const gated = new GatedSwitch(fake.url);
      gated.removal = (item) => removals.client.deregisterIdentifier(item);
      h = await startHarness({ clock, fakeSwitch: fake, overrides: { switchConnector: gated } });
      expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
      return { harness: h, deletes: () => deletes };
    }

    const error = (statusCode: string, message: string) => ({ message, executionState: { currentState: 'ERROR_OCCURRED' }, statusCode });

    it('500 with 3204 (the platform holds no such identifier): DEREGISTERED, sent once', async () => {
      const { harness, deletes } = await refusedRemoval([[500, error('3204', 'Got an error response deleting account')]]);
      expect((await harness.callOutgoing('POST', '/identifiers/opt-out', body)).body).toMatchObject({
        state: 'DEREGISTERED',
        platformError: { statusCode: '3204', message: 'HTTP 500, statusCode 3204: Got an error response deleting account' },
      });
      harness.clock.advance(3_600_000);
      expect(await harness.app.identifiers.runOnce(60_000)).toEqual({ claimed: 0 });
      expect(deletes()).toBe(1);
    });

    it('500 with another FSPIOP code: OPT_OUT_FAILED, not retried; the switch connector\'s own 500 is an outage, retried', async () => {
      const { harness, deletes } = await refusedRemoval([
        [500, error('500', 'socket hang up')],
        [500, error('3100', 'Got an error response deleting account')],
      ]);
      expect(await harness.callOutgoing('POST', '/identifiers/opt-out', body)).toMatchObject({ status: 202, body: { state: 'OPTING_OUT', lastError: 'platform refused the call: HTTP 500 HTTP 500, statusCode 500: socket hang up' } });
      harness.clock.advance(3_600_000);
      expect(await harness.app.identifiers.runOnce(60_000)).toEqual({ claimed: 1 });
      expect((await harness.callOutgoing('GET', '/identifiers/MSISDN/260971000006')).body).toMatchObject({
        state: 'OPT_OUT_FAILED',
        platformError: { statusCode: '3100', message: 'HTTP 500, statusCode 3100: Got an error response deleting account' },
      });
      harness.clock.advance(3_600_000);
      expect(await harness.app.identifiers.runOnce(60_000)).toEqual({ claimed: 0 });
      expect(deletes()).toBe(2);
    });

    it('400 (the switch connector refused the request): OPT_OUT_FAILED', async () => {
      const { harness, deletes } = await refusedRemoval([[400, { statusCode: 400, message: 'request/params/Type must be equal to one of the allowed values' }]]);
      expect(await harness.callOutgoing('POST', '/identifiers/opt-out', body)).toMatchObject({ status: 200, body: { state: 'OPT_OUT_FAILED', platformError: { statusCode: '400' } } });
      expect(deletes()).toBe(1);
    });
  });
});

describe('free-format identifiers that are dot segments', () => {
  /** An institution that knows every identifier as an active customer's who consented. */
  function everyoneEligible(inner: CoreBanking): CoreBanking {
    return new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'identifierEligibility') return async () => ({ accountId: 'zm-acc-0001', currency: 'ZMW', status: 'active', consent: 'given' });
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it('an ALIAS "." or ".." (value or sub-value) is removed by its own path, its dots encoded', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: everyoneEligible } });
    const bodies = [
      { idType: 'ALIAS', idValue: 'shop', idSubValue: '.', consent: CONSENT },
      { idType: 'ALIAS', idValue: '..', consent: CONSENT },
    ];
    for (const body of bodies) expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual(['ALIAS/shop/.', 'ALIAS/..']);
    for (const body of bodies) expect((await h.callOutgoing('POST', '/identifiers/opt-out', body)).body).toMatchObject({ state: 'DEREGISTERED' });
    expect(accountsCalls(h).filter((call) => call.method === 'DELETE').map((call) => call.path)).toEqual(['/accounts/ALIAS/shop/%2E', '/accounts/ALIAS/%2E%2E']);
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual([]);
  });
});

describe('an opt-in while the identifier\'s opt-out awaits the platform', () => {
  it('is refused 409, nothing recorded; once the removal settles, an opt-in registers again', async () => {
    h = await startHarness();
    const body = { idType: 'MSISDN', idValue: '260971000001', consent: CONSENT };
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
    h.fakeSwitch.failAccounts(504, 1);
    expect(await h.callOutgoing('POST', '/identifiers/opt-out', body)).toMatchObject({ status: 202, body: { state: 'OPTING_OUT' } });
    const again = { ...body, consent: { ...CONSENT, at: '2026-11-23T10:00:30.000Z' } };
    expect(await h.callOutgoing('POST', '/identifiers', again)).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Opt-out awaiting the platform: opt in again once the platform has confirmed its removal (DEREGISTERED)' },
    });
    h.clock.advance(60_000);
    expect(await h.app.identifiers.runOnce(60_000)).toEqual({ claimed: 1 });
    expect((await h.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'DEREGISTERED' });
    expect(await h.callOutgoing('POST', '/identifiers', again)).toMatchObject({ status: 200, body: { state: 'REGISTERED' } });
    expect(accountsCalls(h).map((call) => call.method)).toEqual(['POST', 'DELETE', 'DELETE', 'POST']);
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual(['MSISDN/260971000001']);
  });
});
