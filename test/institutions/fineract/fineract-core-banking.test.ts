import { request } from 'undici';
import { ConnectorError } from '../../../src/domain/errors.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/ports/clock.js';
import { BARRED, CONTRACT_SEED, PAYEE, PAYER, expectConnectorError } from '../core-banking-contract.js';
import { JsonNumber, parseDecimalJson, stringifyDecimalJson } from '../../../src/adapters/core-banking/shared/decimal-json.js';
import { startFixtureServer, type FixtureReply } from '../fixture-server.js';
import { FineractCoreBanking, idempotencyKey } from '../../../src/adapters/core-banking/fineract/fineract-core-banking.js';
import { FINERACT_FIXTURE_DEFAULTS, startFineractFixture, type FineractFixture } from './fineract-fixture.js';
import { readFineractOptions, type FineractOptions } from '../../../src/adapters/core-banking/fineract/fineract-options.js';
import { accountStatusOf, declineFor, fundsCover, readFloatAccount, readHoldTransaction, readSavingsAccount } from '../../../src/adapters/core-banking/fineract/fineract-transform.js';
import { WireRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const clock: Clock = { now: () => new Date('2026-11-23T10:00:00.000Z') };
const REF = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';

function options(baseUrl: string, overrides: Partial<FineractOptions> = {}): FineractOptions {
  return {
    baseUrl,
    tenant: FINERACT_FIXTURE_DEFAULTS.tenant,
    username: FINERACT_FIXTURE_DEFAULTS.username,
    password: FINERACT_FIXTURE_DEFAULTS.password,
    floatAccountId: FINERACT_FIXTURE_DEFAULTS.floatAccountId,
    paymentTypeId: FINERACT_FIXTURE_DEFAULTS.paymentTypeId,
    timeZone: 'UTC',
    timeoutMs: 300,
    connectTimeoutMs: 300,
    maxResponseBytes: 1_048_576,
    ...overrides,
  };
}

async function start(
  overrides: Partial<FineractOptions> = {},
  tenant: { readonly clock?: Clock; readonly timeZone?: string } = {},
): Promise<{ fineract: FineractFixture; adapter: FineractCoreBanking }> {
  const fineract = await startFineractFixture({
    clock: tenant.clock ?? clock,
    ...(tenant.timeZone === undefined ? {} : { timeZone: tenant.timeZone }),
    ...CONTRACT_SEED,
    accounts: [
      ...CONTRACT_SEED.accounts,
      { idType: 'MSISDN', idValue: '260971000009', firstName: 'Natasha', middleName: 'K', lastName: 'Tembo', dateOfBirth: '1990-04-01', balance: '1' },
      { idType: 'MSISDN', idValue: '260971000010', firstName: 'Old', lastName: 'Account', balance: '0', status: 'closed' },
    ],
  });
  const adapter = new FineractCoreBanking(options(fineract.url, overrides), { clock: tenant.clock ?? clock });
  closers.push(() => fineract.close(), () => adapter.close());
  return { fineract, adapter };
}

function commitRequest(fineract: FineractFixture, amount = '12.34') {
  return { reference: REF, amount: { amount, currency: 'ZMW' }, payeeAccountId: fineract.accountIdOf(PAYEE.idValue) };
}

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });

/** The writes Fineract received, as "command key"; a batch as "batch[command key, ...]". */
function writes(fineract: FineractFixture, from = 0): string[] {
  const command = (path: string, key: unknown) => `${(path.match(/command=(\w+)/) ?? [])[1] ?? '?'} ${String(key)}`;
  return fineract.requests
    .slice(from)
    .filter((request) => request.method === 'POST')
    .map((request) => {
      if (!request.path.endsWith('/batches?enclosingTransaction=true') && !request.path.endsWith('/batches')) return command(request.path, request.headers['idempotency-key']);
      const items = request.body as Array<{ relativeUrl: string; headers: Array<{ name: string; value: string }> }>;
      return `batch[${items.map((item) => command(item.relativeUrl, item.headers.find((header) => header.name === 'Idempotency-Key')?.value)).join(', ')}]`;
    });
}

/** The commit's batch as writes() shows it, under each step's key `attempt`. */
function commitBatch(attempts: { readonly deposit?: number; readonly release?: number; readonly withdraw?: number } = {}): string {
  return `batch[deposit ${idempotencyKey(REF, 'deposit-payee', attempts.deposit)}, releaseAmount ${idempotencyKey(REF, 'commit-release', attempts.release)}, withdrawal ${idempotencyKey(REF, 'withdraw-float', attempts.withdraw)}]`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (2 s at most) until Fineract has received a request whose path matches. */
async function untilRequest(fineract: FineractFixture, path: RegExp, never: string): Promise<void> {
  for (let waited = 0; !fineract.requests.some((request) => path.test(request.path)); waited += 5) {
    if (waited > 2000) throw new Error(never);
    await sleep(5);
  }
}

/** Waits (5 s at most) until `done` holds: a write delayed at Fineract has landed. */
async function until(done: () => boolean, never: string): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 5000) throw new Error(never);
    await sleep(5);
  }
}

describe('FineractCoreBanking: every write carries an idempotency key from the reference and the step', () => {
  it('the keys are stable, distinct per step, and 43 characters whatever the reference', () => {
    expect(idempotencyKey(REF, 'hold')).toBe(idempotencyKey(REF, 'hold'));
    expect(new Set([idempotencyKey(REF, 'hold'), idempotencyKey(REF, 'deposit-payee'), idempotencyKey('other', 'hold'), idempotencyKey(`${REF}x`, 'hold')]).size).toBe(4);
    expect(idempotencyKey('r'.repeat(128), 'withdraw-float')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('reserve and commit send the hold, then deposit, release and withdrawal in one batch, each under its own key; a repeat replays them all', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    const key = (step: string) => idempotencyKey(REF, step);
    expect(writes(fineract)).toEqual([`holdAmount ${key('hold')}`, `holdAmount ${key('hold')}`, commitBatch()]);
    expect(fineract.requests.filter((request) => request.method === 'POST').map((request) => request.path.replace(/^.*\/api\/v1/, ''))).toEqual([
      '/savingsaccounts/1/transactions?command=holdAmount',
      '/savingsaccounts/1/transactions?command=holdAmount',
      '/batches?enclosingTransaction=true',
    ]);
    const mark = fineract.requests.length;
    await adapter.commit(commitRequest(fineract));
    // The hold found released: the commit's own release key, replayed, says the commit released it.
    expect(writes(fineract, mark)).toEqual([`holdAmount ${key('hold')}`, `releaseAmount ${key('commit-release')}`, `deposit ${key('deposit-payee')}`, `withdrawal ${key('withdraw-float')}`]);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('62.34');
    expect([fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['987.66', '987.66', '1261']);
  });

  it('books amounts as decimal strings with our reference in the receipt number and the hold reason', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    const bodies = fineract.requests.filter((request) => request.method === 'POST').map((request) => request.body);
    expect(bodies[0]).toEqual({ locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate: '2026-11-23', transactionAmount: '12.34', reasonForBlock: REF });
    // A batch's commands carry their bodies as JSON text (BatchRequest.body is a string).
    const batch = bodies[2] as Array<{ requestId: JsonNumber; relativeUrl: string; method: string; body: string }>;
    expect(batch.map((item) => [item.requestId.text, item.method, item.relativeUrl.replace(/\/\d+\?/, '/{hold}?')])).toEqual([
      ['1', 'POST', `savingsaccounts/${fineract.accountIdOf(PAYEE.idValue)}/transactions?command=deposit`],
      ['2', 'POST', 'savingsaccounts/1/transactions/{hold}?command=releaseAmount'],
      ['3', 'POST', 'savingsaccounts/1/transactions?command=withdrawal'],
    ]);
    const deposit = { locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate: '2026-11-23', transactionAmount: '12.34', paymentTypeId: 4, receiptNumber: REF, note: `Mojaloop ${REF}` };
    expect(batch.map((item) => JSON.parse(item.body) as unknown)).toEqual([deposit, {}, deposit]);
    expect(fineract.requests[0]?.headers['fineract-platform-tenantid']).toBe('default');
    expect(fineract.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from('mifos:password').toString('base64')}`);
  });
});

/** Sends Fineract a command straight, as another process would: `step`'s key (attempt 0) for our reference. */
async function rawCommand(fineract: FineractFixture, suffix: string, step: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const answer = await request(`${fineract.url}/savingsaccounts/${FINERACT_FIXTURE_DEFAULTS.floatAccountId}/transactions${suffix}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${FINERACT_FIXTURE_DEFAULTS.username}:${FINERACT_FIXTURE_DEFAULTS.password}`).toString('base64')}`,
      'fineract-platform-tenantid': FINERACT_FIXTURE_DEFAULTS.tenant,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey(REF, step),
    },
    body: JSON.stringify(body),
  });
  return { status: answer.statusCode, body: parseDecimalJson(await answer.body.text()) };
}

describe('FineractCoreBanking: who released a hold, told by the release keys (never by a search Fineract does not have)', () => {
  it('a release after its commit released the hold is refused, and nothing moves', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    await expectConnectorError(adapter.release(REF, zmw('12.34')), 'TransferStateConflict', /was released by its commit/);
    // Asked again, the release spends no further key: each probe's "not on hold" is replayed.
    const mark = fineract.requests.length;
    await expectConnectorError(adapter.release(REF, zmw('12.34')), 'TransferStateConflict', /was released by its commit/);
    expect(writes(fineract, mark)).toEqual([`holdAmount ${idempotencyKey(REF, 'hold')}`, `releaseAmount ${idempotencyKey(REF, 'abort-release')}`, `releaseAmount ${idempotencyKey(REF, 'release-hold')}`]);
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['62.34', '987.66', '987.66', '1261']);
  });

  it('a commit after an abort released the hold is refused: the payee is not credited', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.release(REF, zmw('12.34'));
    await adapter.release(REF, zmw('12.34'));
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'TransferStateConflict', /was released by an abort/);
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['50', '1000', '1000', '1261']);
  });

  it.each(['commit', 'release'] as const)('a hold released under the key both sides shared before 2026-11-27 counts as the %s\'s own', async (caller) => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    const hold = await rawCommand(fineract, '?command=holdAmount', 'hold', {});
    const holdId = String((hold.body as { resourceId: JsonNumber }).resourceId.text);
    // An earlier attempt, before the upgrade: the hold released under the shared key, its answer lost.
    expect((await rawCommand(fineract, `/${holdId}?command=releaseAmount`, 'release-hold', {})).status).toBe(200);
    if (caller === 'commit') {
      await adapter.commit(commitRequest(fineract));
      expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable()]).toEqual(['62.34', '987.66', '987.66']);
    } else {
      await adapter.release(REF, zmw('12.34'));
      expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable()]).toEqual(['50', '1000', '1000']);
    }
  });
});

describe('FineractCoreBanking: the ambiguous outcomes book nothing twice', () => {
  it.each([
    ['the hold', 0],
    ['the batch of deposit, release and withdrawal', 1],
  ])('a commit whose %s was applied but never answered is finished by the retry, each step once', async (_step, skip) => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.inject('hang-after', 'next-write', 1, skip);
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionTimeout', /outcome unknown/);
    await adapter.commit(commitRequest(fineract));
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('62.34');
    expect([fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['987.66', '987.66', '1261']);
  });

  it('a commit batch applied then answered 500 is not booked again', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.inject('applied-then-5xx', 'next-write', 1, 1);
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionUnavailable', /one transaction: HTTP 500$/);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('62.34');
    const mark = fineract.requests.length;
    await adapter.commit(commitRequest(fineract));
    // The hold found released by the commit's own key: the deposit and the withdrawal replay.
    expect(writes(fineract, mark)).toEqual([
      `holdAmount ${idempotencyKey(REF, 'hold')}`,
      `releaseAmount ${idempotencyKey(REF, 'commit-release')}`,
      `deposit ${idempotencyKey(REF, 'deposit-payee')}`,
      `withdrawal ${idempotencyKey(REF, 'withdraw-float')}`,
    ]);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('62.34');
    expect([fineract.floatBalance(), fineract.total()]).toEqual(['987.66', '1261']);
  });

  it('a hold still running after our timeout: the retry meets 425 and books nothing; once it finished, the stored result answers', async () => {
    const { fineract, adapter } = await start();
    // Longer than the 300 ms timeout even at undici's coarse timer resolution (about 0.5 to 1 s).
    fineract.inject('slow-before', 'next-write', 1, 0, 1500);
    await expectConnectorError(adapter.reserve(commitRequest(fineract)), 'InstitutionTimeout', /outcome unknown/);
    await expectConnectorError(adapter.reserve(commitRequest(fineract)), 'InstitutionTimeout', /still running at Fineract \(HTTP 425\); outcome unknown/);
    await until(() => fineract.floatAvailable() === '987.66', 'the slow hold never landed');
    const mark = fineract.requests.length;
    await adapter.reserve(commitRequest(fineract));
    expect(fineract.floatAvailable()).toBe('987.66');
    expect(writes(fineract, mark)).toEqual([`holdAmount ${idempotencyKey(REF, 'hold')}`]);
  });

  it('a refund whose deposit was slower than the timeout pays the payer once', async () => {
    const { fineract, adapter } = await start();
    const refund = { reference: 'REFUND-1', originalReference: 'ORIGINAL-1', amount: zmw('5'), payerId: PAYER.idValue };
    fineract.inject('slow-before', 'next-write', 1, 0, 1500);
    await expectConnectorError(adapter.refund(refund), 'InstitutionTimeout');
    await until(() => fineract.balanceOf(PAYER.idValue) === '205', 'the slow refund never landed');
    await adapter.refund(refund);
    await adapter.refund(refund);
    expect(fineract.balanceOf(PAYER.idValue)).toBe('205');
    expect([fineract.floatBalance(), fineract.total()]).toEqual(['995', '1261']);
  });

  it('two overlapping commits and two overlapping refunds move the money once', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract, '10'));
    await Promise.all([adapter.commit(commitRequest(fineract, '10')), adapter.commit(commitRequest(fineract, '10'))]);
    const refund = { reference: 'REFUND-1', originalReference: 'ORIGINAL-1', amount: zmw('5'), payerId: PAYER.idValue };
    await Promise.all([adapter.refund(refund), adapter.refund(refund)]);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('60');
    expect(fineract.balanceOf(PAYER.idValue)).toBe('205');
    expect([fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['985', '985', '1261']);
  });
});

describe('FineractCoreBanking: holds as Fineract reports them (releaseTransactionId 0 = unreleased)', () => {
  it('release gives the hold back once; a commit after it is refused and moves nothing', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    expect(fineract.floatAvailable()).toBe('987.66');
    await adapter.release(REF, zmw('12.34'));
    await adapter.release(REF, zmw('12.34'));
    expect(fineract.floatAvailable()).toBe('1000');
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'TransferStateConflict', /was released/);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('50');
    expect([fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['1000', '1000', '1261']);
  });

  it('a release for a reservation never made leaves the float as it was', async () => {
    const { fineract, adapter } = await start();
    await adapter.release(REF, zmw('12.34'));
    expect([fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['1000', '1000', '1261']);
  });

  it('a release where the hold was refused (a short float) is a no-op', async () => {
    const { fineract, adapter } = await start();
    await expectConnectorError(adapter.reserve(commitRequest(fineract, '1000.01')), 'PayeeInsufficientLiquidity');
    await adapter.release(REF, zmw('1000.01'));
    expect(fineract.floatAvailable()).toBe('1000');
  });

  it('refuses a commit for another amount than the hold', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await expectConnectorError(adapter.commit(commitRequest(fineract, '12.35')), 'ModifiedRequest');
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatAvailable()]).toEqual(['50', '987.66']);
  });

  it('cannot look a transaction up by our reference (Fineract searches accounts, not transactions): NotSupported', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    await expectConnectorError(adapter.transactionStatus(REF), 'NotSupported', /cannot look transaction 01JDV6M3AZ6XK1B0SPZ8Q4W2RA up by our reference/);
  });
});

describe('FineractCoreBanking: no statement is ever read', () => {
  it('keeps working when the float statement is far larger than FINERACT_MAX_RESPONSE_BYTES', async () => {
    const { fineract, adapter } = await start({ maxResponseBytes: 4096 });
    for (let index = 0; index < 40; index += 1) {
      const request = { ...commitRequest(fineract, '1'), reference: `REF-${index}` };
      await adapter.reserve(request);
      await adapter.commit(request);
    }
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('90');
    expect(fineract.requests.some((request) => request.path.includes('associations=transactions'))).toBe(false);
    await adapter.health();
  });
});

describe('FineractCoreBanking: start-up check of the settings', () => {
  it('accepts the documented settings', async () => {
    const { adapter } = await start();
    await adapter.verifySetup();
  });

  it.each([
    [{ paymentTypeId: '9' }, 'misconfigured: FINERACT_PAYMENT_TYPE_ID 9 is not a payment type at Fineract (it lists: 1 Money Transfer, 2 Cash, 4 Mojaloop)'],
    [{ floatAccountId: '999' }, 'misconfigured: FINERACT_FLOAT_ACCOUNT_ID 999: no such savings account at Fineract'],
    [{ password: 'wrong' }, 'credentials-refused: fineract refused FINERACT_USERNAME/FINERACT_PASSWORD (HTTP 401)'],
  ])('refuses %o with a clear cause', async (overrides, message) => {
    const { adapter } = await start(overrides);
    await expect(adapter.verifySetup()).rejects.toMatchObject({ name: 'InstitutionHealthError', message });
  });

  it('refuses a float account that is not active', async () => {
    const { fineract } = await start();
    const closed = new FineractCoreBanking(options(fineract.url, { floatAccountId: fineract.accountIdOf('260971000010') }), { clock });
    closers.push(() => closed.close());
    await expect(closed.verifySetup()).rejects.toMatchObject({
      message: `misconfigured: FINERACT_FLOAT_ACCOUNT_ID ${fineract.accountIdOf('260971000010')}: the savings account is not active (savingsAccountStatusType.closed)`,
    });
  });
});

describe('FineractCoreBanking: parties, refunds, errors', () => {
  it('reads the client\'s names and date of birth, and a closed account as closed', async () => {
    const { fineract, adapter } = await start();
    expect(await adapter.lookupParty({ idType: 'MSISDN', idValue: '260971000009' })).toEqual({
      idType: 'MSISDN',
      idValue: '260971000009',
      accountId: fineract.accountIdOf('260971000009'),
      currency: 'ZMW',
      status: 'active',
      displayName: 'Natasha K Tembo',
      firstName: 'Natasha',
      middleName: 'K',
      lastName: 'Tembo',
      dateOfBirth: '1990-04-01',
    });
    expect((await adapter.lookupParty({ idType: 'MSISDN', idValue: '260971000010' })).status).toBe('closed');
  });

  it('does not guess an account status it does not know', async () => {
    const replies: FixtureReply[] = [
      { status: 200, body: { pageItems: [{ id: new JsonNumber('7'), externalId: '1', displayName: 'X', status: { id: new JsonNumber('300'), code: 'clientStatusType.active' } }] } },
      { status: 200, body: { savingsAccounts: [{ id: new JsonNumber('8'), accountNo: '8', status: { id: new JsonNumber('350'), code: 'new' }, currency: { code: 'ZMW' } }] } },
    ];
    const server = await startFixtureServer({ handle: () => replies.shift() ?? { status: 500 }, isWrite: () => false });
    closers.push(() => server.close());
    const adapter = new FineractCoreBanking(options(server.url), { clock });
    closers.push(() => adapter.close());
    await expectConnectorError(
      adapter.lookupParty({ idType: 'MSISDN', idValue: '1' }),
      'InstitutionUnavailable',
      /malformed response: savings account status 350 is not one the adapter knows/,
    );
  });

  it('refuses to refund when the float cannot fund it, before depositing anything', async () => {
    const { fineract, adapter } = await start();
    const refund = { reference: REF, originalReference: 'ORIGINAL-1', amount: { amount: '1000.01', currency: 'ZMW' }, payerId: PAYER.idValue };
    await expectConnectorError(adapter.refund(refund), 'InstitutionUnavailable', /cannot fund/);
    expect(fineract.balanceOf(PAYER.idValue)).toBe('200');
  });

  it('names a refused payer search during a refund after the payer, not the payee', async () => {
    const blocked = { httpStatusCode: '403', errors: [{ userMessageGlobalisationCode: 'error.msg.client.is.blocked' }] };
    const server = await startFixtureServer({ handle: () => ({ status: 403, body: blocked }), isWrite: () => false });
    closers.push(() => server.close());
    const adapter = new FineractCoreBanking(options(server.url), { clock });
    closers.push(() => adapter.close());
    const refund = { reference: REF, originalReference: 'ORIGINAL-1', amount: { amount: '1', currency: 'ZMW' }, payerId: PAYER.idValue };
    await expectConnectorError(adapter.refund(refund), 'PayerRejected', /refund: find payer: HTTP 403/);
    await expectConnectorError(adapter.lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'PayeeBlocked');
  });

  it('does not offer collect', async () => {
    const { adapter } = await start();
    await expectConnectorError(adapter.collect(), 'NotSupported');
  });

  it('reports refused credentials as an outage without repeating the password', async () => {
    const { adapter: wrong } = await start({ password: 'not-the-password' });
    const error = await expectConnectorError(wrong.lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /credentials refused/);
    expect(error.message).not.toContain('not-the-password');
    await expectConnectorError(wrong.health(), 'InstitutionUnavailable');
  });
});

describe('fineract transformers', () => {
  const status = (id: string) => ({ id, code: 'c' });
  it('takes the worst of client status, account status and sub-status', () => {
    const client = { id: '1', displayName: 'x', status: status('300') };
    expect(accountStatusOf(client, { status: status('300'), subStatus: status('0') })).toBe('active');
    expect(accountStatusOf(client, { status: status('300'), subStatus: status('600') })).toBe('active');
    expect(accountStatusOf(client, { status: status('300'), subStatus: status('500') })).toBe('blocked');
    expect(accountStatusOf(client, { status: status('600'), subStatus: status('400') })).toBe('closed');
    expect(accountStatusOf({ ...client, status: status('100') }, { status: status('300') })).toBe('blocked');
    expect(() => accountStatusOf(client, { status: status('301') })).toThrow(/savings account status 301/);
  });

  it('maps Fineract error codes by whose account it is', () => {
    const body = (code: string) => ({ httpStatusCode: '403', userMessageGlobalisationCode: 'validation.msg.domain.rule.violation', errors: [{ userMessageGlobalisationCode: code }] });
    const name = (status: number, code: string, role: 'float' | 'payee' | 'payer') => declineFor('op', status, body(code), role).errorName;
    expect(name(403, 'error.msg.savingsaccount.transaction.insufficient.account.balance', 'float')).toBe('PayeeInsufficientLiquidity');
    expect(name(403, 'error.msg.savingsaccount.transaction.insufficient.account.balance', 'payer')).toBe('PayerInsufficientFunds');
    expect(name(403, 'error.msg.savingsaccount.account.is.blocked', 'payee')).toBe('PayeeBlocked');
    expect(name(403, 'error.msg.savingsaccount.transaction.account.is.not.active', 'payee')).toBe('PayeeClosed');
    expect(name(403, 'error.msg.savingsaccount.account.is.blocked', 'float')).toBe('InstitutionUnavailable');
    expect(name(403, 'error.msg.savings.concurrent.operations', 'payee')).toBe('InstitutionUnavailable');
    expect(name(404, 'error.msg.saving.account.id.invalid', 'payee')).toBe('PartyNotFound');
    expect(name(400, 'validation.msg.something', 'payee')).toBe('ValidationFailed');
    expect(name(403, 'error.msg.something.new', 'payee')).toBe('PayeeRejected');
  });

  it('reads a hold as released only when releaseTransactionId is not 0', () => {
    const hold = (releaseTransactionId: unknown) => ({
      id: new JsonNumber('5'),
      transactionType: { id: new JsonNumber('20'), code: 'savingsAccountTransactionType.onHold' },
      amount: new JsonNumber('12.340000'),
      currency: { code: 'ZMW' },
      ...(releaseTransactionId === undefined ? {} : { releaseTransactionId }),
    });
    expect(readHoldTransaction(hold(new JsonNumber('0')))).toEqual({ id: '5', amount: '12.34', released: false });
    expect(readHoldTransaction(hold(undefined))).toEqual({ id: '5', amount: '12.34', released: false });
    expect(readHoldTransaction(hold(new JsonNumber('6')))).toEqual({ id: '5', amount: '12.34', released: true });
  });
});

describe('readFineractOptions', () => {
  it('lists every problem at once and never shows the password', () => {
    const result = readFineractOptions({ FINERACT_BASE_URL: 'ftp://x', FINERACT_USERNAME: 'a b', FINERACT_FLOAT_ACCOUNT_ID: '0', FINERACT_TIMEOUT_MS: '5' });
    expect(result).toEqual({
      problems: [
        'FINERACT_BASE_URL: must be an http(s) URL',
        'FINERACT_USERNAME: "a b" is not a user name without spaces or colons',
        'FINERACT_PASSWORD: required (set FINERACT_PASSWORD)',
        'FINERACT_FLOAT_ACCOUNT_ID: "0" is not a savings account id',
        'FINERACT_PAYMENT_TYPE_ID: required (set FINERACT_PAYMENT_TYPE_ID)',
        'FINERACT_TIMEOUT_MS: "5" is not a whole number from 50 to 120000',
      ],
    });
  });

  it('refuses a FINERACT_TIMEZONE the time zone database does not know, and takes an IANA name', () => {
    const base = { FINERACT_BASE_URL: 'https://f.example.org/api/v1', FINERACT_USERNAME: 'c', FINERACT_PASSWORD: 'p', FINERACT_FLOAT_ACCOUNT_ID: '4', FINERACT_PAYMENT_TYPE_ID: '3' };
    expect(readFineractOptions({ ...base, FINERACT_TIMEZONE: 'Africa/Lusak' })).toEqual({ problems: ['FINERACT_TIMEZONE: "Africa/Lusak" is not a time zone (an IANA name such as Africa/Lusaka)'] });
    const read = readFineractOptions({ ...base, FINERACT_TIMEZONE: 'Africa/Lusaka' });
    expect('options' in read ? read.options.timeZone : read.problems).toBe('Africa/Lusaka');
  });

  it('reads a complete configuration with defaults', () => {
    expect(
      readFineractOptions({
        FINERACT_BASE_URL: 'https://fineract.example.org/fineract-provider/api/v1',
        FINERACT_USERNAME: 'connector',
        FINERACT_PASSWORD: 's3cret',
        FINERACT_FLOAT_ACCOUNT_ID: '42',
        FINERACT_PAYMENT_TYPE_ID: '3',
      }),
    ).toEqual({
      options: {
        baseUrl: 'https://fineract.example.org/fineract-provider/api/v1',
        tenant: 'default',
        username: 'connector',
        password: 's3cret',
        floatAccountId: '42',
        paymentTypeId: '3',
        timeZone: 'UTC',
        timeoutMs: 15_000,
        connectTimeoutMs: 3000,
        maxResponseBytes: 16_777_216,
      },
    });
  });
});

describe('FineractCoreBanking: the float\'s movements for reconciliation', () => {
  it('lists the bank channel\'s debit into the float (its deposit under the homeTransactionId) as a customer debit', async () => {
    const { fineract, adapter } = await start();
    fineract.debitByChannel('home-0001', PAYER.idValue, '30');
    await adapter.refund({ reference: 'refund-0001', originalReference: 'home-0001', amount: zmw('30'), payerId: PAYER.idValue });
    const movements = await adapter.listMovements({ from: '2026-11-23T00:00:00.000Z', to: '2026-11-24T00:00:00.000Z' });
    expect(movements.map(({ reference, direction, amount, bookedAt }) => ({ reference, direction, amount, bookedAt }))).toEqual([
      { reference: 'home-0001', direction: 'customer-debit', amount: zmw('30'), bookedAt: '2026-11-23T00:00:00.000Z' },
      { reference: 'refund-0001', direction: 'customer-credit', amount: zmw('30'), bookedAt: '2026-11-23T00:00:00.000Z' },
    ]);
    expect(fineract.balanceOf(PAYER.idValue)).toBe('200');
  });

  it('lists every credit paid from the float in the period under our reference, page by page, leaving out holds, deposits and reversed lines', async () => {
    const { fineract, adapter } = await start();
    const references = Array.from({ length: 205 }, (_unused, index) => `ref-${String(index).padStart(4, '0')}`);
    for (const reference of references) {
      await adapter.reserve({ reference, amount: zmw('1.5'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) });
      await adapter.commit({ reference, amount: zmw('1.5'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) });
    }
    // A back-office undo of one credit: a reversed line moved nothing.
    fineract.reverse(FINERACT_FIXTURE_DEFAULTS.floatAccountId, 'ref-0007');
    const before = fineract.requests.length;
    const movements = await adapter.listMovements({ from: '2026-11-23T00:00:00.000Z', to: '2026-11-24T00:00:00.000Z' });
    expect(movements).toHaveLength(204);
    expect(movements[0]).toEqual({ reference: 'ref-0000', direction: 'customer-credit', amount: zmw('1.5'), bookedAt: '2026-11-23T00:00:00.000Z', institutionId: movements[0]?.institutionId });
    expect(movements.map((movement) => movement.reference)).toEqual(references.filter((reference) => reference !== 'ref-0007'));
    // Two pages of 200, each asked by page number, value dates of that one day, deposits and withdrawals.
    const asked = fineract.requests.slice(before).map((request) => request.path.replace(/^.*\/transactions\/search\?/, ''));
    expect(asked).toEqual([
      'fromDate=2026-11-23&toDate=2026-11-23&dateFormat=yyyy-MM-dd&locale=en&types=1%2C2&offset=0&limit=200&orderBy=id&sortOrder=ASC',
      'fromDate=2026-11-23&toDate=2026-11-23&dateFormat=yyyy-MM-dd&locale=en&types=1%2C2&offset=1&limit=200&orderBy=id&sortOrder=ASC',
    ]);
    // Another day: nothing.
    expect(await adapter.listMovements({ from: '2026-11-24T00:00:00.000Z', to: '2026-11-25T00:00:00.000Z' })).toEqual([]);
  });

  it('an outage while listing is InstitutionUnavailable, and a listing that never answers is InstitutionTimeout: no partial list', async () => {
    const { fineract, adapter } = await start();
    const period = { from: '2026-11-23T00:00:00.000Z', to: '2026-11-24T00:00:00.000Z' };
    fineract.inject('server-error', 'next-request', 1);
    await expectConnectorError(adapter.listMovements(period), 'InstitutionUnavailable');
    fineract.inject('hang-before', 'next-request', 1);
    await expectConnectorError(adapter.listMovements(period), 'InstitutionTimeout');
    expect(await adapter.listMovements(period)).toEqual([]);
  });
});

/** An account as Fineract answers GET /savingsaccounts/{id}: the summary's balances as written on the wire. */
async function summaryOf(fineract: FineractFixture, savingsId: string): Promise<{ accountBalance: string; availableBalance: string }> {
  const authorization = `Basic ${Buffer.from(`${FINERACT_FIXTURE_DEFAULTS.username}:${FINERACT_FIXTURE_DEFAULTS.password}`).toString('base64')}`;
  const answer = await fetch(`${fineract.url}/savingsaccounts/${savingsId}`, { headers: { authorization, 'fineract-platform-tenantid': FINERACT_FIXTURE_DEFAULTS.tenant } });
  const summary = WireRecord.of(parseDecimalJson(await answer.text())).record('summary');
  return { accountBalance: summary.number('accountBalance').text, availableBalance: summary.number('availableBalance').text };
}

describe('FineractCoreBanking: customer balances as Fineract writes them never block a credit', () => {
  it('credits an overdrawn payee (balance -20.000000), and a repeat of the commit books nothing more', async () => {
    const { fineract, adapter } = await start();
    const payeeId = fineract.accountIdOf(PAYEE.idValue);
    fineract.overdraw(PAYEE.idValue, '70');
    expect(await summaryOf(fineract, payeeId)).toEqual({ accountBalance: '-20.000000', availableBalance: '-20.000000' });
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    expect({ payee: await summaryOf(fineract, payeeId), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable() }).toEqual({
      payee: { accountBalance: '-7.660000', availableBalance: '-7.660000' },
      float: '987.66',
      floatAvailable: '987.66',
    });
  });

  it('refunds an overdrawn payer (balance -5.000000)', async () => {
    const { fineract, adapter } = await start();
    fineract.overdraw(PAYER.idValue, '205');
    await adapter.refund({ reference: REF, originalReference: 'ORIGINAL-1', amount: zmw('5'), payerId: PAYER.idValue });
    expect({ payer: await summaryOf(fineract, fineract.accountIdOf(PAYER.idValue)), float: fineract.floatBalance() }).toEqual({
      payer: { accountBalance: '0.000000', availableBalance: '0.000000' },
      float: '995',
    });
  });

  it('reads the float\'s balances signed and at any scale, and compares them as decimals', () => {
    const account = (accountBalance: string, availableBalance: string) => ({
      id: new JsonNumber('7'),
      status: { id: new JsonNumber('300'), code: 'savingsAccountStatusType.active' },
      currency: { code: 'UGX', decimalPlaces: new JsonNumber('2') },
      summary: { accountBalance: new JsonNumber(accountBalance), availableBalance: new JsonNumber(availableBalance) },
    });
    // UGX has 0 decimals in ISO 4217 and 2 in Fineract's currency table (0002_initial_data.xml).
    expect(readFloatAccount(account('1500.500000', '-20.000000'))).toEqual({
      id: '7',
      status: { id: '300', code: 'savingsAccountStatusType.active' },
      currency: 'UGX',
      accountBalance: '1500.500000',
      availableBalance: '-20.000000',
    });
    expect(readSavingsAccount(account('1500.500000', '1500.500000'))).toEqual({ id: '7', status: { id: '300', code: 'savingsAccountStatusType.active' }, currency: 'UGX' });
    expect(() => readFloatAccount(account('1.5E+3', '0'))).toThrow(/body.summary.accountBalance is not a decimal balance/);
    expect([fundsCover('1500.500000', '1500'), fundsCover('1500.500000', '1501'), fundsCover('-20.000000', '1'), fundsCover('1.000000', '1'), fundsCover('0.999999', '1')]).toEqual([
      true,
      false,
      false,
      true,
      false,
    ]);
  });
});

/** A clock tests move by hand. */
function manualClock(iso: string): Clock & { set(iso: string): void } {
  let current = new Date(iso);
  return { now: () => new Date(current.getTime()), set: (next) => (current = new Date(next)) };
}

/** The float's transactions as Fineract lists them: "type date amount", oldest first. */
async function floatLines(fineract: FineractFixture): Promise<string[]> {
  const authorization = `Basic ${Buffer.from(`${FINERACT_FIXTURE_DEFAULTS.username}:${FINERACT_FIXTURE_DEFAULTS.password}`).toString('base64')}`;
  const answer = await fetch(`${fineract.url}/savingsaccounts/1/transactions/search?orderBy=id&sortOrder=ASC`, { headers: { authorization, 'fineract-platform-tenantid': FINERACT_FIXTURE_DEFAULTS.tenant } });
  return WireRecord.of(parseDecimalJson(await answer.text()))
    .array('content')
    .map((line) => {
      const date = line.values['date'];
      const day = Array.isArray(date) ? date.map((part) => (part instanceof JsonNumber ? part.text : '?').padStart(2, '0')).join('-') : '?';
      return `${line.record('transactionType').string('code').replace('savingsAccountTransactionType.', '')} ${day} ${line.number('amount').text}`;
    });
}

describe('FineractCoreBanking: commands dated with the tenant\'s day (FINERACT_TIMEZONE)', () => {
  it('a tenant at UTC+2, 00:30 local: holds after a commit are taken, and again after UTC\'s midnight', async () => {
    const lusaka = manualClock('2026-11-23T22:30:00.000Z');
    const { fineract, adapter } = await start({ timeZone: 'Africa/Lusaka' }, { clock: lusaka, timeZone: 'Africa/Lusaka' });
    const transfer = (reference: string) => ({ reference, amount: zmw('10'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) });
    await adapter.reserve(transfer('TRANSFER-A'));
    await adapter.commit(transfer('TRANSFER-A'));
    await adapter.reserve(transfer('TRANSFER-B'));
    lusaka.set('2026-11-24T00:30:00.000Z');
    await adapter.reserve(transfer('TRANSFER-C'));
    await adapter.release('TRANSFER-B', zmw('10'));
    await adapter.release('TRANSFER-C', zmw('10'));
    expect({ lines: await floatLines(fineract), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable(), payee: fineract.balanceOf(PAYEE.idValue) }).toEqual({
      lines: [
        'onHold 2026-11-24 10.000000',
        'release 2026-11-24 10.000000',
        'withdrawal 2026-11-24 10.000000',
        'onHold 2026-11-24 10.000000',
        'onHold 2026-11-24 10.000000',
        'release 2026-11-24 10.000000',
        'release 2026-11-24 10.000000',
      ],
      float: '990',
      floatAvailable: '990',
      payee: '60',
    });
  });

  it('the fixture keeps Fineract\'s date rules: a hold before the last transaction and a deposit after the business date are refused 400', async () => {
    const { fineract } = await start();
    const authorization = `Basic ${Buffer.from(`${FINERACT_FIXTURE_DEFAULTS.username}:${FINERACT_FIXTURE_DEFAULTS.password}`).toString('base64')}`;
    const post = async (savingsId: string, command: string, transactionDate: string) => {
      const body = { locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate, transactionAmount: '1', paymentTypeId: 4, receiptNumber: 'R', reasonForBlock: 'R' };
      const answer = await fetch(`${fineract.url}/savingsaccounts/${savingsId}/transactions?command=${command}`, {
        method: 'POST',
        headers: { authorization, 'fineract-platform-tenantid': FINERACT_FIXTURE_DEFAULTS.tenant, 'content-type': 'application/json' },
        body: JSON.stringify(command === 'holdAmount' ? { ...body, paymentTypeId: undefined, receiptNumber: undefined } : { ...body, reasonForBlock: undefined }),
      });
      const read = WireRecord.of(parseDecimalJson(await answer.text()));
      return `${answer.status} ${read.has('errors') ? (read.array('errors')[0]?.string('userMessageGlobalisationCode') ?? '?') : 'ok'}`;
    };
    const payee = fineract.accountIdOf(PAYEE.idValue);
    expect([
      await post('1', 'holdAmount', '2026-11-23'),
      await post('1', 'holdAmount', '2026-11-22'),
      await post(payee, 'deposit', '2026-11-24'),
      await post(payee, 'deposit', '2026-11-23'),
    ]).toEqual([
      '200 ok',
      '400 validation.msg.savingsaccount.date.validation.msg.date.can.not.be.before.last.transaction.date',
      '400 error.msg.savingsaccount.transaction.in.the.future',
      '200 ok',
    ]);
  });
});

describe('FineractCoreBanking: a step whose run Fineract rolled back is sent again under the step\'s next key; a batch stores nothing it rolled back', () => {
  const key = (step: string, attempt = 0) => idempotencyKey(REF, step, attempt);

  it('a release whose releaseAmount met a lock conflict is an outage, and the next attempt releases the hold under the next key', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.failNext('releaseAmount', 'lock-conflict');
    await expectConnectorError(adapter.release(REF, zmw('12.34')), 'InstitutionUnavailable', /HTTP 409 error\.msg\.platform\.service\.lock\.conflict$/);
    await adapter.release(REF, zmw('12.34'));
    await adapter.release(REF, zmw('12.34'));
    expect({ writes: writes(fineract), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable() }).toEqual({
      writes: [
        `holdAmount ${key('hold')}`,
        `holdAmount ${key('hold')}`,
        `releaseAmount ${key('abort-release')}`,
        `holdAmount ${key('hold')}`,
        `releaseAmount ${key('abort-release')}`,
        `releaseAmount ${key('abort-release', 1)}`,
        // Found released: asked under the release's own keys, the second replays its success.
        `holdAmount ${key('hold')}`,
        `releaseAmount ${key('abort-release')}`,
        `releaseAmount ${key('abort-release', 1)}`,
      ],
      float: '1000',
      floatAvailable: '1000',
    });
  });

  it('a commit batch whose deposit met a lock conflict books and stores nothing: the retry sends the same keys and credits the payee once', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.failNext('deposit', 'lock-conflict');
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionUnavailable', /one transaction \(deposit\): HTTP 409 error\.msg\.platform\.service\.lock\.conflict/);
    // Rolled back whole: the payee not credited, the hold still held.
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable()]).toEqual(['50', '1000', '987.66']);
    await adapter.commit(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    expect({ writes: writes(fineract), payee: fineract.balanceOf(PAYEE.idValue), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable(), total: fineract.total() }).toEqual({
      writes: [
        `holdAmount ${key('hold')}`,
        `holdAmount ${key('hold')}`,
        commitBatch(),
        `holdAmount ${key('hold')}`,
        commitBatch(),
        // Found released by the commit's own key: the batch's deposit and withdrawal replay.
        `holdAmount ${key('hold')}`,
        `releaseAmount ${key('commit-release')}`,
        `deposit ${key('deposit-payee')}`,
        `withdrawal ${key('withdraw-float')}`,
      ],
      payee: '62.34',
      float: '987.66',
      floatAvailable: '987.66',
      total: '1261', // the seed here adds two accounts (1 and 0) to the contract's 1260
    });
  });

  it('a commit batch whose withdrawal failed with a 500 rolled back the deposit and the release too; the retry books all three once', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.failNext('withdrawal', 'server-error');
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionUnavailable', /one transaction \(withdraw float\): HTTP 500, rolled back$/);
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable()]).toEqual(['50', '1000', '987.66']);
    await adapter.commit(commitRequest(fineract));
    expect({ batches: writes(fineract).filter((write) => write.startsWith('batch')), payee: fineract.balanceOf(PAYEE.idValue), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable(), total: fineract.total() }).toEqual({
      batches: [commitBatch(), commitBatch()],
      payee: '62.34',
      float: '987.66',
      floatAvailable: '987.66',
      total: '1261',
    });
  });

  it('a hold placed while a commit is on its way cannot take the amount the commit releases: payee credited and float debited together', async () => {
    const { fineract, adapter } = await start();
    const commit = commitRequest(fineract, '990');
    await adapter.reserve(commit);
    // Booked step by step (hold, deposit, release, withdrawal), the withdrawal would come 150 ms
    // after the release, time for another reservation to hold what the release freed.
    fineract.inject('slow-before', 'next-write', 1, 3, 150);
    const committing = adapter.commit(commit).then(() => 'committed', (error: unknown) => (error instanceof Error ? error.message : String(error)));
    await untilRequest(fineract, /command=releaseAmount|\/batches/, 'the commit never released the hold');
    const other = await adapter.reserve({ reference: 'OTHER-RESERVATION', amount: zmw('995'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) }).then(
      () => 'held',
      (error: unknown) => (error instanceof ConnectorError ? error.errorName : String(error)),
    );
    expect({ commit: await committing, other, payee: fineract.balanceOf(PAYEE.idValue), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable(), total: fineract.total() }).toEqual({
      commit: 'committed',
      other: 'PayeeInsufficientLiquidity',
      payee: '1040',
      float: '10',
      floatAvailable: '10',
      total: '1261',
    });
  });

  it('a batch step whose first key a step-by-step attempt spent on a failure goes under its next key', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    // Before 2026-11-27 an attempt booked step by step; its deposit met a 500, stored under the first key.
    fineract.failNext('deposit', 'server-error');
    expect((await rawCommand(fineract, '?command=deposit', 'deposit-payee', {})).status).toBe(500);
    await adapter.commit(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    expect({ writes: writes(fineract).slice(1), payee: fineract.balanceOf(PAYEE.idValue), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable() }).toEqual({
      writes: [
        `deposit ${key('deposit-payee')}`,
        `holdAmount ${key('hold')}`,
        commitBatch(),
        // Asked alone under the key the batch found marked: a stored failure, so passed over.
        `deposit ${key('deposit-payee')}`,
        commitBatch({ deposit: 1 }),
        `holdAmount ${key('hold')}`,
        `releaseAmount ${key('commit-release')}`,
        `deposit ${key('deposit-payee')}`,
        `deposit ${key('deposit-payee', 1)}`,
        `withdrawal ${key('withdraw-float')}`,
      ],
      payee: '62.34',
      float: '987.66',
      floatAvailable: '987.66',
    });
  });

  it('a batch whose whole transaction failed at its commit, answered with a replayed command\'s headers, does not pass over that command\'s booked key', async () => {
    const { fineract, adapter } = await start({ timeoutMs: 3000 });
    await adapter.reserve(commitRequest(fineract));
    // Our batch waits at Fineract while a twin under the same keys (another replica's attempt,
    // which read the hold unreleased too) books the commit.
    fineract.inject('slow-before', 'next-write', 1, 1, 400);
    const committing = adapter.commit(commitRequest(fineract)).then(() => 'committed', (error: unknown) => (error instanceof Error ? error.message : String(error)));
    await untilRequest(fineract, /\/batches/, 'the commit never sent its batch');
    const sent = fineract.requests.find((request) => request.path.includes('/batches'));
    const twin = await request(`${fineract.url}/batches?enclosingTransaction=true`, {
      method: 'POST',
      headers: { authorization: String(sent?.headers.authorization), 'fineract-platform-tenantid': FINERACT_FIXTURE_DEFAULTS.tenant, 'content-type': 'application/json' },
      body: stringifyDecimalJson(sent?.body),
    });
    expect(twin.statusCode).toBe(200);
    await twin.body.text();
    // Ours then replays all three, and its transaction fails at the commit (buildErrorResponses).
    fineract.failNextBatch('commit-conflict');
    expect(await committing).toBe('Institution unavailable: fineract commit: deposit, release and withdraw as one transaction (withdraw float): HTTP 409, the transaction rolled back at its commit; retried later');
    await adapter.commit(commitRequest(fineract));
    expect({ payee: fineract.balanceOf(PAYEE.idValue), float: fineract.floatBalance(), floatAvailable: fineract.floatAvailable(), total: fineract.total() }).toEqual({
      payee: '62.34',
      float: '987.66',
      floatAvailable: '987.66',
      total: '1261',
    });
    // The withdrawal was asked about alone under its first key (a replay), never sent under a second.
    expect(new Set(writes(fineract).filter((write) => write.startsWith('withdrawal')))).toEqual(new Set([`withdrawal ${key('withdraw-float')}`]));
  });

  it('a batch that lost to a twin under the same keys (403 data integrity) is an outage retried later, not a decline', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.failNextBatch('duplicate-key');
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionUnavailable', /\(deposit\): HTTP 403 data integrity \(an attempt under the same keys booked first, or is booking\); rolled back, retried later$/);
    await adapter.commit(commitRequest(fineract));
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable()]).toEqual(['62.34', '987.66', '987.66']);
  });

  it('a refund whose float a hold emptied after the refund read it is refused whole as the float\'s outage, not a party\'s decline', async () => {
    const { fineract, adapter } = await start({ timeoutMs: 3000 });
    const refund = { reference: 'REFUND-1', originalReference: 'ORIGINAL-1', amount: zmw('5'), payerId: PAYER.idValue };
    // The refund's batch waits at Fineract while another reservation holds nearly all the float.
    fineract.inject('slow-before', 'next-write', 1, 0, 300);
    const refunding = adapter.refund(refund).then(() => 'refunded', (error: unknown) => (error instanceof ConnectorError ? `${error.errorName}: ${error.message}` : String(error)));
    await untilRequest(fineract, /\/batches/, 'the refund never sent its batch');
    await adapter.reserve({ reference: 'OTHER-RESERVATION', amount: zmw('998'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) });
    expect(await refunding).toBe('InstitutionUnavailable: Institution unavailable: fineract refund: deposit and withdraw as one transaction (withdraw float): the float cannot fund it now (HTTP 403); rolled back, retried later');
    expect([fineract.balanceOf(PAYER.idValue), fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['200', '1000', '2', '1261']);
  });

  it('a commit to a blocked payee is refused each time, books nothing and spends no key (a batch stores no failure)', async () => {
    const { fineract, adapter } = await start();
    const request = { reference: REF, amount: zmw('1'), payeeAccountId: fineract.accountIdOf(BARRED.idValue) };
    await adapter.reserve(request);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      await expectConnectorError(adapter.commit(request), 'PayeeBlocked', /one transaction \(deposit\): HTTP 403 /);
    }
    expect({ batches: writes(fineract).filter((write) => write.startsWith('batch')), payee: fineract.balanceOf(BARRED.idValue), floatAvailable: fineract.floatAvailable() }).toEqual({
      batches: [commitBatch(), commitBatch(), commitBatch()],
      payee: '10',
      floatAvailable: '999',
    });
  });

  it('a step-by-step commit from before the batches, its withdrawal refused for a short float, spends no further key while the float stays short, and is booked once it covers', async () => {
    const { fineract, adapter } = await start();
    const commit = commitRequest(fineract);
    await adapter.reserve(commit);
    // An attempt from before 2026-11-27 released the hold under the commit's key, then stopped.
    const hold = await rawCommand(fineract, '?command=holdAmount', 'hold', {});
    const holdId = (hold.body as { resourceId: JsonNumber }).resourceId.text;
    expect((await rawCommand(fineract, `/${holdId}?command=releaseAmount`, 'commit-release', {})).status).toBe(200);
    // Another reservation takes what the release freed: the float is short.
    await adapter.reserve({ reference: 'OTHER-RESERVATION', amount: zmw('1000'), payeeAccountId: fineract.accountIdOf(PAYEE.idValue) });
    const refusals: string[] = [];
    for (let attempt = 1; attempt <= 40; attempt += 1) refusals.push((await expectConnectorError(adapter.commit(commit), 'PayeeInsufficientLiquidity')).message);
    expect(refusals[0]).toMatch(/commit: withdraw float: HTTP 403 .*insufficient/);
    expect(refusals.slice(1).every((message) => /withdraw float \(refused before for a short balance, still short: no new key spent\): HTTP 403/.test(message))).toBe(true);
    expect(new Set(writes(fineract).filter((write) => write.startsWith('withdrawal')))).toEqual(new Set([`withdrawal ${key('withdraw-float')}`]));
    // The float covers it again: the next attempt books the withdrawal once, under the next key.
    await adapter.release('OTHER-RESERVATION', zmw('1000'));
    await adapter.commit(commit);
    await adapter.commit(commit);
    expect(new Set(writes(fineract).filter((write) => write.startsWith('withdrawal')))).toEqual(new Set([`withdrawal ${key('withdraw-float')}`, `withdrawal ${key('withdraw-float', 1)}`]));
    expect([fineract.balanceOf(PAYEE.idValue), fineract.floatBalance(), fineract.floatAvailable(), fineract.total()]).toEqual(['62.34', '987.66', '987.66', '1261']);
  });

  it('a step refused on every attempt spends at most 32 keys, then answers the stored refusal', async () => {
    const { fineract, adapter } = await start();
    for (let failure = 0; failure < 32; failure += 1) fineract.failNext('holdAmount', 'server-error');
    const answers: string[] = [];
    for (let attempt = 0; attempt < 32; attempt += 1) {
      const error = await expectConnectorError(adapter.reserve(commitRequest(fineract)), 'InstitutionUnavailable', /reserve: hold: HTTP 500$/);
      answers.push(error.message);
    }
    const lastAttempt = fineract.requests.length;
    await expectConnectorError(adapter.reserve(commitRequest(fineract)), 'InstitutionUnavailable', /reserve: hold \(replayed under each of the step's 32 keys\): HTTP 500$/);
    const holdKeys = new Set(writes(fineract).filter((write) => write.startsWith('holdAmount')));
    expect({
      answers: answers.length,
      keys: holdKeys.size,
      lastKey: holdKeys.has(`holdAmount ${key('hold', 31)}`),
      holdsInLastAttempt: writes(fineract, lastAttempt).length,
      floatAvailable: fineract.floatAvailable(),
    }).toEqual({ answers: 32, keys: 32, lastKey: true, holdsInLastAttempt: 32, floatAvailable: '1000' });
  });

  it('maps Fineract\'s lock conflicts to an outage whoever\'s account it was', () => {
    const conflict = (code: string) => ({ httpStatusCode: '409', userMessageGlobalisationCode: code, errors: [] });
    expect([
      declineFor('commit: deposit', 409, conflict('error.msg.platform.service.lock.conflict'), 'payee').errorName,
      declineFor('refund: deposit', 409, conflict('error.msg.platform.service.org.apache.fineract.portfolio.savings.domain.SavingsAccount.conflict'), 'payer').errorName,
      declineFor('commit: deposit', 409, conflict('error.msg.platform.service.unknown.conflict'), 'payee').errorName,
    ]).toEqual(['InstitutionUnavailable', 'InstitutionUnavailable', 'InstitutionUnavailable']);
  });
});
