import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/ports/clock.js';
import { CONTRACT_SEED, PAYEE, PAYER, expectConnectorError } from '../core-banking-contract.js';
import { JsonNumber } from '../../../src/adapters/core-banking/shared/decimal-json.js';
import { startFixtureServer, type FixtureReply, type FixtureRequest } from '../fixture-server.js';
import { AirtelCoreBanking } from '../../../src/adapters/core-banking/airtel/airtel-core-banking.js';
import { AIRTEL_FIXTURE_DEFAULTS, startAirtelFixture, type AirtelFixture, type AirtelFixtureOptions } from './airtel-fixture.js';
import { readAirtelOptions, type AirtelOptions } from '../../../src/adapters/core-banking/airtel/airtel-options.js';
import { airtelReference, collectionOutcome, disbursementId, disbursementOutcome, readCallback, toAirtelMsisdn, toTransactionStatus } from '../../../src/adapters/core-banking/airtel/airtel-transform.js';

class TestClock implements Clock {
  #ms = Date.parse('2026-11-23T10:00:00.000Z');
  now(): Date {
    return new Date(this.#ms);
  }
  advanceSeconds(seconds: number): void {
    this.#ms += seconds * 1000;
  }
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const REF = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';
const PAYEE_ID = PAYEE.idValue;

function options(baseUrl: string, overrides: Partial<AirtelOptions> = {}): AirtelOptions {
  return {
    baseUrl,
    clientId: AIRTEL_FIXTURE_DEFAULTS.clientId,
    clientSecret: AIRTEL_FIXTURE_DEFAULTS.clientSecret,
    country: 'ZM',
    currency: 'ZMW',
    pinEncrypted: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
    dialingCode: '260',
    timeoutMs: 500,
    connectTimeoutMs: 500,
    ...overrides,
  };
}

async function start(fixtureOptions: Partial<AirtelFixtureOptions> = {}, overrides: Partial<AirtelOptions> = {}) {
  const clock = new TestClock();
  const airtel = await startAirtelFixture({ ...CONTRACT_SEED, clock, ...fixtureOptions });
  const adapter = new AirtelCoreBanking(options(airtel.url, overrides), { clock });
  closers.push(() => airtel.close(), () => adapter.close());
  return { airtel, adapter, clock };
}

function commit(airtel: AirtelFixture, amount = '12.34') {
  return { reference: REF, amount: { amount, currency: 'ZMW' }, payeeAccountId: airtel.accountIdOf(PAYEE_ID) };
}

describe('AirtelCoreBanking: the OAuth2 token', () => {
  it('fetches one token for five calls, concurrent ones included', async () => {
    const { airtel, adapter } = await start();
    await Promise.all([1, 2, 3].map(() => adapter.lookupParty({ idType: 'MSISDN', idValue: PAYEE_ID })));
    await adapter.health();
    await adapter.transactionStatus(REF);
    expect(airtel.tokenRequests()).toBe(1);
    const bearers = new Set(airtel.requests.filter((request) => request.path !== '/auth/oauth2/token').map((request) => request.headers.authorization));
    expect([...bearers]).toEqual(['Bearer fixture-token-1']);
  });

  it('refreshes the token before it expires, not after', async () => {
    const { airtel, adapter, clock } = await start({ tokenLifetimeSeconds: 600 });
    await adapter.health();
    clock.advanceSeconds(539);
    await adapter.health();
    expect(airtel.tokenRequests()).toBe(1);
    // 550 s: the first token still works at the institution, but is inside the last tenth of its life.
    clock.advanceSeconds(11);
    await adapter.health();
    expect(airtel.tokenRequests()).toBe(2);
    expect(airtel.requests.at(-1)?.headers.authorization).toBe('Bearer fixture-token-2');
    clock.advanceSeconds(3600);
    await adapter.health();
    expect(airtel.tokenRequests()).toBe(3);
  });

  it('fetches a new token once when the institution revokes the current one', async () => {
    const { airtel, adapter } = await start();
    await adapter.health();
    airtel.revokeTokens();
    await adapter.health();
    expect(airtel.tokenRequests()).toBe(2);
  });

  it('reports refused client credentials as an outage without the secret', async () => {
    const { adapter } = await start({}, { clientSecret: 'wrong-secret-value' });
    const error = await expectConnectorError(adapter.health(), 'InstitutionUnavailable', /credentials refused/);
    expect(error.message).not.toContain('wrong-secret-value');
  });
});

describe('AirtelCoreBanking: money', () => {
  it('disburses with the encrypted PIN, a national MSISDN, our reference as id and the amount as an exact JSON number', async () => {
    const { airtel, adapter } = await start();
    await adapter.commit(commit(airtel, '12.34'));
    const disbursement = airtel.requests.find((request) => request.method === 'POST' && request.path === '/standard/v2/disbursements/');
    expect(disbursement?.body).toEqual({
      payee: { msisdn: '971000001', wallet_type: 'NORMAL' },
      reference: REF,
      pin: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
      transaction: { amount: new JsonNumber('12.34'), id: REF, type: 'B2C' },
    });
    expect(disbursement?.headers['x-country']).toBe('ZM');
    expect(disbursement?.headers['x-currency']).toBe('ZMW');
    expect(airtel.balanceOf(PAYEE_ID)).toBe('62.34');
  });

  it('declines when the PIN is refused, and moves nothing', async () => {
    const { airtel, adapter } = await start({}, { pinEncrypted: 'T3RoZXJFbmNyeXB0ZWRQSU4=' });
    const error = await expectConnectorError(adapter.commit(commit(airtel)), 'PayeeRejected', /DP00900001005/);
    expect(error.message).not.toContain('T3RoZXJFbmNyeXB0ZWRQSU4=');
    expect(airtel.balanceOf(PAYEE_ID)).toBe('50');
  });

  it('checks the reservation against a wallet balance written with thousands separators', async () => {
    const { airtel, adapter } = await start({ floatBalance: '1234567.5' });
    await adapter.reserve(commit(airtel, '1234567.5'));
    await expectConnectorError(adapter.reserve(commit(airtel, '1234567.51')), 'PayeeInsufficientLiquidity');
    expect(airtel.floatBalance()).toBe('1234567.5');
  });

  it('fails a collection the payer cannot cover when approved, and moves nothing', async () => {
    const { airtel, adapter } = await start();
    expect(await adapter.collect({ reference: REF, amount: { amount: '200.01', currency: 'ZMW' }, payerId: `+${PAYER.idValue}` })).toEqual({ status: 'pending' });
    airtel.approveCollection(REF);
    expect(await adapter.transactionStatus(REF)).toBe('failed');
    expect(await adapter.collect({ reference: REF, amount: { amount: '200.01', currency: 'ZMW' }, payerId: PAYER.idValue })).toEqual({ status: 'failed' });
    expect(airtel.balanceOf(PAYER.idValue)).toBe('200');
  });

  it('posts Airtel\'s callback body when the subscriber answers', async () => {
    const received: Array<{ method: string | undefined; body: unknown }> = [];
    const listener = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ method: request.method, body: JSON.parse(text) as unknown });
        response.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', () => resolve()));
    closers.push(() => new Promise((resolve) => listener.close(() => resolve())));
    const address = listener.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const { airtel, adapter } = await start({ callbackUrl: `http://127.0.0.1:${address.port}/callback` });
    await adapter.collect({ reference: REF, amount: { amount: '25', currency: 'ZMW' }, payerId: PAYER.idValue });
    airtel.approveCollection(REF);
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]).toEqual({ method: 'PUT', body: { transaction: { id: REF, message: 'Paid', status_code: 'TS', airtel_money_id: 'MP00000001' } } });
    expect(readCallback(received[0]?.body)).toEqual({ reference: REF, status: 'succeeded' });
  });

  it('refuses currencies other than the wallet\'s', async () => {
    const { airtel, adapter } = await start();
    await expectConnectorError(adapter.commit({ ...commit(airtel), amount: { amount: '1', currency: 'USD' } }), 'UnsupportedCurrency');
  });
});

describe('AirtelCoreBanking: wallet states', () => {
  it('a closed wallet is not found (Airtel\'s KYC has no "closed"); a blocked one reads as barred', async () => {
    const closed = { idType: 'MSISDN', idValue: '260971000004', firstName: 'Mwape', lastName: 'Zulu', balance: '0', status: 'closed' } as const;
    const blocked = { idType: 'MSISDN', idValue: '260971000005', firstName: 'Bupe', lastName: 'Tembo', balance: '0', status: 'blocked' } as const;
    const { adapter } = await start({ accounts: [...CONTRACT_SEED.accounts, closed, blocked] });
    await expectConnectorError(adapter.lookupParty({ idType: 'MSISDN', idValue: closed.idValue }), 'PartyNotFound');
    expect(await adapter.lookupParty({ idType: 'MSISDN', idValue: blocked.idValue })).toMatchObject({ status: 'barred', firstName: 'Bupe', lastName: 'Tembo' });
    expect(await adapter.lookupParty({ idType: 'MSISDN', idValue: PAYER.idValue })).toMatchObject({ status: 'active' });
  });
});

describe('AirtelCoreBanking: answers it does not know', () => {
  /** A scripted Airtel: a token, then the given answer for each path. */
  async function scripted(answers: Record<string, FixtureReply>) {
    const handle = (request: FixtureRequest): FixtureReply => {
      if (request.path === '/auth/oauth2/token') return { status: 200, body: { access_token: 't', expires_in: new JsonNumber('3600') } };
      return answers[`${request.method} ${request.path}`] ?? { status: 500 };
    };
    const server = await startFixtureServer({ handle, isWrite: (request) => request.method === 'POST' });
    const adapter = new AirtelCoreBanking(options(server.url), { clock: new TestClock() });
    closers.push(() => server.close(), () => adapter.close());
    return { server, adapter };
  }
  const notFound = { status: 200, body: { status: { code: '200', success: false, result_code: 'ESB000001', response_code: 'DP00900001015' } } };

  it('treats an unrecognised disbursement response code as an unknown outcome', async () => {
    const { adapter } = await scripted({
      'GET /standard/v2/disbursements/REF-1': notFound,
      'POST /standard/v2/disbursements/': { status: 200, body: { status: { code: '200', success: false, result_code: 'ESB000001', response_code: 'DP00900009999' } } },
    });
    await expectConnectorError(
      adapter.commit({ reference: 'REF-1', amount: { amount: '1', currency: 'ZMW' }, payeeAccountId: '971000001' }),
      'InstitutionTimeout',
      /response code DP00900009999; outcome unknown/,
    );
  });

  it('does not disburse again while an earlier disbursement is in progress', async () => {
    const { server, adapter } = await scripted({
      'GET /standard/v2/disbursements/REF-2': { status: 200, body: { data: { transaction: { id: 'REF-2', status: 'TIP' } }, status: { code: '200', success: true, response_code: 'DP00900001006' } } },
    });
    await expectConnectorError(adapter.commit({ reference: 'REF-2', amount: { amount: '1', currency: 'ZMW' }, payeeAccountId: '971000001' }), 'InstitutionTimeout', /not final/);
    expect(server.requests.filter((request) => request.method === 'POST' && request.path !== '/auth/oauth2/token')).toEqual([]);
  });

  it('refuses a confirmation for another transaction id', async () => {
    const { adapter } = await scripted({
      'GET /standard/v2/disbursements/REF-3': notFound,
      'POST /standard/v2/disbursements/': { status: 200, body: { data: { transaction: { id: 'REF-OTHER', status: 'TS' } }, status: { code: '200', success: true, response_code: 'DP00900001001' } } },
    });
    await expectConnectorError(
      adapter.commit({ reference: 'REF-3', amount: { amount: '1', currency: 'ZMW' }, payeeAccountId: '971000001' }),
      'InstitutionUnavailable',
      /transaction.id differs from our reference/,
    );
  });
});

describe.each([200, 400] as const)('AirtelCoreBanking: decisions on the body, business rejections as HTTP %i', (rejectionsAs) => {
  it('an unregistered MSISDN (user enquiry failed, DP02200000000) is PartyNotFound', async () => {
    const { adapter } = await start({ rejectionsAs });
    await expectConnectorError(adapter.lookupParty({ idType: 'MSISDN', idValue: '260971999999' }), 'PartyNotFound', /DP02200000000/);
  });

  it('"transaction not found" on the enquiry lets the incoming payment and the refund be paid, once each', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    await adapter.commit(commit(airtel));
    await adapter.commit(commit(airtel));
    const refund = { reference: 'REFUND-1', originalReference: 'ORIGINAL-1', amount: { amount: '5', currency: 'ZMW' }, payerId: PAYER.idValue };
    await adapter.refund(refund);
    await adapter.refund(refund);
    expect(airtel.balanceOf(PAYEE_ID)).toBe('62.34');
    expect(airtel.balanceOf(PAYER.idValue)).toBe('205');
    expect([airtel.floatBalance(), airtel.total()]).toEqual(['982.66', '1260']);
  });

  it('a collection the payer declined reads TF: failed, nobody debited; one never made is not-found', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    expect(await adapter.transactionStatus(REF)).toBe('not-found');
    expect(await adapter.collect({ reference: REF, amount: { amount: '30', currency: 'ZMW' }, payerId: PAYER.idValue })).toEqual({ status: 'pending' });
    airtel.rejectCollection(REF);
    expect(await adapter.transactionStatus(REF)).toBe('failed');
    expect(airtel.balanceOf(PAYER.idValue)).toBe('200');
  });

  it('a refused disbursement (wrong PIN) is a decline whatever the HTTP status', async () => {
    const { airtel, adapter } = await start({ rejectionsAs }, { pinEncrypted: 'V3JvbmdQSU4=' });
    await expectConnectorError(adapter.commit(commit(airtel)), 'PayeeRejected', /DP00900001005/);
    expect(airtel.balanceOf(PAYEE_ID)).toBe('50');
  });
});

describe.each([200, 400] as const)('AirtelCoreBanking: a disbursement that failed at Airtel, business rejections as HTTP %i', (rejectionsAs) => {
  const disbursementIds = (airtel: AirtelFixture): string[] =>
    airtel.requests.filter((request) => request.method === 'POST' && request.path === '/standard/v2/disbursements/').map((request) => String((request.body as { transaction: { id: string } }).transaction.id));

  it('a refund the wallet could not fund is paid by a later attempt under the next transaction id, once the wallet is funded', async () => {
    const { airtel, adapter } = await start({ rejectionsAs, floatBalance: '20' });
    const refund = { reference: REF, originalReference: REF, amount: { amount: '30', currency: 'ZMW' }, payerId: PAYER.idValue };
    // DP00900001007: the wallet is short; for a refund that is an outage to retry, not a decline.
    await expectConnectorError(adapter.refund(refund), 'InstitutionUnavailable', /DP00900001007/);
    expect(await adapter.transactionStatus(REF)).toBe('failed');
    // Retried while the wallet stays short: no new transaction id is spent.
    for (let attempt = 0; attempt < 10; attempt += 1) {
      await expectConnectorError(adapter.refund(refund), 'InstitutionUnavailable', /the wallet still cannot cover 30; no new transaction id spent/);
    }
    expect(disbursementIds(airtel)).toEqual([REF]);
    // The customer pays 15 in: the wallet now covers the refund.
    expect(await adapter.collect({ reference: 'COLLECT-1', amount: { amount: '15', currency: 'ZMW' }, payerId: PAYER.idValue })).toEqual({ status: 'pending' });
    airtel.approveCollection('COLLECT-1');
    await adapter.refund(refund);
    await adapter.refund(refund);
    expect(disbursementIds(airtel)).toEqual([REF, disbursementId(REF, 1)]);
    expect(disbursementId(REF, 1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([airtel.balanceOf(PAYER.idValue), airtel.floatBalance(), airtel.total()]).toEqual(['215', '5', '280']);
  });

  it('"timed out" (DP00900001014) is no outcome: the enquiry decides, and a disbursement it applied is not paid again', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    airtel.timeOutNextDisbursement(true);
    await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /DP00900001014; outcome unknown/);
    expect(airtel.balanceOf(PAYEE_ID)).toBe('62.34');
    await adapter.commit(commit(airtel));
    expect(disbursementIds(airtel)).toEqual([REF]);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
  });

  it('"timed out" (DP00900001014) that Airtel settled as failed: paid by the next attempt under the next id, once', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    airtel.timeOutNextDisbursement(false);
    await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /DP00900001014; outcome unknown/);
    expect(airtel.balanceOf(PAYEE_ID)).toBe('50');
    await adapter.commit(commit(airtel));
    await adapter.commit(commit(airtel));
    expect(disbursementIds(airtel)).toEqual([REF, disbursementId(REF, 1)]);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
  });

  it('an ambiguous disbursement (DP00900001000, then TA) is no outcome: nothing is sent while TA; once Airtel settles it TS, the retry pays nobody again', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    airtel.ambiguousNextDisbursement();
    await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /DP00900001000; outcome unknown/);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['50', '1000']);
    // Still TA at the enquiry: not final, and no second disbursement goes out.
    await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /disbursement 01JDV6M3AZ6XK1B0SPZ8Q4W2RA is not final; outcome unknown/);
    expect(await adapter.transactionStatus(REF)).toBe('pending');
    airtel.settleAmbiguous(REF, 'TS');
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
    await adapter.commit(commit(airtel));
    await adapter.commit(commit(airtel));
    expect(await adapter.transactionStatus(REF)).toBe('succeeded');
    expect(disbursementIds(airtel)).toEqual([REF]);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
  });

  it('an ambiguous disbursement Airtel later settles TF: the retry pays under the next id, once', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    airtel.ambiguousNextDisbursement();
    await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /DP00900001000; outcome unknown/);
    airtel.settleAmbiguous(REF, 'TF');
    await adapter.commit(commit(airtel));
    await adapter.commit(commit(airtel));
    expect(disbursementIds(airtel)).toEqual([REF, disbursementId(REF, 1)]);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
  });

  it('two attempts racing on one reference: Airtel refuses the second id as a duplicate (DP00900001017), which is no decline; paid once', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    airtel.inject('slow-before', 'next-write', 1, 0, 200);
    const outcomes = await Promise.allSettled([adapter.commit(commit(airtel)), adapter.commit(commit(airtel))]);
    const refusals = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected').map((outcome) => String(outcome.reason));
    expect(refusals).toEqual([expect.stringMatching(/^ConnectorError: .*DP00900001017; outcome unknown/)]);
    await adapter.commit(commit(airtel));
    expect(disbursementIds(airtel)).toEqual([REF, REF]);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['62.34', '987.66']);
  });

  it('after eight attempts that all failed at Airtel, no ninth is sent: paid by hand', async () => {
    const { airtel, adapter } = await start({ rejectionsAs });
    // Eight failures of a cause the wallet's balance does not show: each spends one id.
    for (let attempt = 1; attempt <= 8; attempt += 1) {
      airtel.timeOutNextDisbursement(false);
      await expectConnectorError(adapter.commit(commit(airtel)), 'InstitutionTimeout', /DP00900001014/);
    }
    await expectConnectorError(adapter.commit(commit(airtel)), 'PayeeRejected', /8 disbursements under 01JDV6M3AZ6XK1B0SPZ8Q4W2RA failed at Airtel; pay by hand/);
    expect(disbursementIds(airtel)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((generation) => disbursementId(REF, generation)));
    expect(new Set(disbursementIds(airtel)).size).toBe(8);
    expect([airtel.balanceOf(PAYEE_ID), airtel.floatBalance()]).toEqual(['50', '1000']);
  });
});

describe('AirtelCoreBanking: USSD push and expired prompts as Airtel answers them', () => {
  it('the push\'s answer names no transaction (id false): the prompt is out, pending', async () => {
    const { airtel, adapter } = await start();
    expect(await adapter.collect({ reference: REF, amount: { amount: '30', currency: 'ZMW' }, payerId: PAYER.idValue })).toEqual({ status: 'pending' });
    const push = airtel.requests.find((request) => request.method === 'POST' && request.path === '/merchant/v1/payments/');
    expect(push?.body).toMatchObject({ transaction: { id: REF } });
  });

  it('a prompt left unanswered until it expired reads TE: failed, nobody debited', async () => {
    const { airtel, adapter, clock } = await start();
    expect(await adapter.collect({ reference: REF, amount: { amount: '30', currency: 'ZMW' }, payerId: PAYER.idValue })).toEqual({ status: 'pending' });
    clock.advanceSeconds(300);
    expect(await adapter.transactionStatus(REF)).toBe('failed');
    const enquiry = airtel.requests.filter((request) => request.path === `/standard/v1/payments/${REF}`).at(-1);
    expect(enquiry?.method).toBe('GET');
    expect(airtel.balanceOf(PAYER.idValue)).toBe('200');
  });
});

describe('AirtelCoreBanking: an enquiry whose envelope says success false but names the transaction', () => {
  it('TF in data.transaction.status is final whatever status.success says', async () => {
    const body = {
      data: { transaction: { id: REF, status: 'TF', message: 'Declined', airtel_money_id: 'MP1' } },
      status: { code: '400', message: 'FAILED', result_code: 'ESB000001', response_code: 'DP00800001008', success: false },
    };
    const replies: Record<string, FixtureReply> = {
      'POST /auth/oauth2/token': { status: 200, body: { access_token: 't', expires_in: '3600', token_type: 'bearer' } },
      [`GET /standard/v2/disbursements/${REF}`]: { status: 400, body: { status: { code: '400', message: 'Transaction not found', result_code: 'ESB000045', success: false } } },
      [`GET /standard/v1/payments/${REF}`]: { status: 400, body },
    };
    const server = await startFixtureServer({ handle: (request: FixtureRequest) => replies[`${request.method} ${request.path}`] ?? { status: 500 }, isWrite: () => false });
    closers.push(() => server.close());
    const adapter = new AirtelCoreBanking(options(server.url), { clock: new TestClock() });
    closers.push(() => adapter.close());
    expect(await adapter.transactionStatus(REF)).toBe('failed');
  });

  it('a 4xx that is not Airtel\'s envelope is the request refused, not a business answer', async () => {
    const server = await startFixtureServer({
      handle: (request: FixtureRequest) =>
        request.path === '/auth/oauth2/token' ? { status: 200, body: { access_token: 't', expires_in: '3600', token_type: 'bearer' } } : { status: 400, body: { error: 'bad request' } },
      isWrite: () => false,
    });
    closers.push(() => server.close());
    const adapter = new AirtelCoreBanking(options(server.url), { clock: new TestClock() });
    closers.push(() => adapter.close());
    await expectConnectorError(adapter.transactionStatus(REF), 'ValidationFailed', /HTTP 400/);
  });
});

describe('airtel transformers', () => {
  it('maps enquiry and callback codes exhaustively: unknown stays unknown', () => {
    expect(['TS', 'TF', 'TA', 'TIP', 'TE', 'ts', 'TX', undefined].map(toTransactionStatus)).toEqual(['succeeded', 'failed', 'pending', 'pending', 'failed', 'unknown', 'unknown', 'unknown']);
    expect(readCallback({ transaction: { id: 'X', status_code: 'TF' } })).toEqual({ reference: 'X', status: 'failed' });
    expect(readCallback({ transaction: { id: 'X' } })).toBeUndefined();
  });

  it('sends the codes that call for an enquiry to the enquiry, never as declines', () => {
    const status = (responseCode: string) => ({ success: false, code: '200', resultCode: 'ESB000001', responseCode });
    expect(['DP00900001011', 'DP00900001014', 'DP00900001017'].map((code) => disbursementOutcome(status(code), 'commit'))).toEqual([
      { kind: 'not-final', code: 'DP00900001011' },
      { kind: 'not-final', code: 'DP00900001014' },
      { kind: 'not-final', code: 'DP00900001017' },
    ]);
    expect(disbursementOutcome(status('DP00900001013'), 'refund')).toMatchObject({ kind: 'declined', error: { errorName: 'PayerRejected' } });
    // A USSD push that timed out (DP00800001024): the prompt's outcome is not known.
    expect(collectionOutcome(status('DP00800001024'))).toEqual({ status: 'unknown' });
    expect(collectionOutcome(status('DP00800001029'))).toMatchObject({ error: { errorName: 'PayerRejected' } });
  });

  it('takes the country code off MSISDNs', () => {
    expect(toAirtelMsisdn('+260971000001', '260')).toBe('971000001');
    expect(toAirtelMsisdn('260971000001', '260')).toBe('971000001');
    expect(toAirtelMsisdn('0971000001', '260')).toBe('0971000001');
    expect(toAirtelMsisdn('jane@example.org', '260')).toBeUndefined();
    expect(airtelReference('3f1c2a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b')).toBe('3f1c2a4e5b6d4e7f8a9b0c1d2e3f4a5b');
  });
});

describe('readAirtelOptions', () => {
  const complete = {
    AIRTEL_BASE_URL: 'https://openapiuat.airtel.africa',
    AIRTEL_CLIENT_ID: 'id',
    AIRTEL_CLIENT_SECRET: 'secret',
    AIRTEL_COUNTRY: 'UG',
    AIRTEL_CURRENCY: 'UGX',
    AIRTEL_PIN_ENCRYPTED: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
  };

  it('derives the calling code from the country', () => {
    expect(readAirtelOptions(complete)).toEqual({
      options: {
        baseUrl: 'https://openapiuat.airtel.africa',
        clientId: 'id',
        clientSecret: 'secret',
        country: 'UG',
        currency: 'UGX',
        pinEncrypted: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
        dialingCode: '256',
        timeoutMs: 30_000,
        connectTimeoutMs: 5000,
      },
    });
    expect(readAirtelOptions({ ...complete, AIRTEL_COUNTRY: 'FR' })).toEqual({
      problems: ['AIRTEL_DIALING_CODE: required, since AIRTEL_COUNTRY FR has no known calling code'],
    });
  });

  it('lists every problem at once and never shows the secrets', () => {
    expect(readAirtelOptions({ AIRTEL_COUNTRY: 'Zambia', AIRTEL_CURRENCY: 'ZMK', AIRTEL_PIN_ENCRYPTED: '1234' })).toEqual({
      problems: [
        'AIRTEL_BASE_URL: required (set AIRTEL_BASE_URL)',
        'AIRTEL_CLIENT_ID: required (set AIRTEL_CLIENT_ID)',
        'AIRTEL_CLIENT_SECRET: required (set AIRTEL_CLIENT_SECRET)',
        'AIRTEL_COUNTRY: "Zambia" is not an ISO 3166 alpha-2 code',
        'AIRTEL_CURRENCY: "ZMK" is not an ISO 4217 currency code',
        'AIRTEL_PIN_ENCRYPTED: is not base64 text (encrypt the PIN with Airtel\'s public key first) (value not shown)',
      ],
    });
  });
});
