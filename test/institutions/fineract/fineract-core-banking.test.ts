import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/ports/clock.js';
import { CONTRACT_SEED, PAYEE, PAYER, expectConnectorError } from '../core-banking-contract.js';
import { JsonNumber } from '../../../src/adapters/core-banking/shared/decimal-json.js';
import { startFixtureServer, type FixtureReply } from '../fixture-server.js';
import { FineractCoreBanking } from '../../../src/adapters/core-banking/fineract/fineract-core-banking.js';
import { FINERACT_FIXTURE_DEFAULTS, startFineractFixture, type FineractFixture } from './fineract-fixture.js';
import { readFineractOptions, type FineractOptions } from '../../../src/adapters/core-banking/fineract/fineract-options.js';
import { accountStatusOf, declineFor, statusFromFloat } from '../../../src/adapters/core-banking/fineract/fineract-transform.js';

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
    timeoutMs: 300,
    connectTimeoutMs: 300,
    maxResponseBytes: 1_048_576,
    ...overrides,
  };
}

async function start(overrides: Partial<FineractOptions> = {}): Promise<{ fineract: FineractFixture; adapter: FineractCoreBanking }> {
  const fineract = await startFineractFixture({
    ...CONTRACT_SEED,
    accounts: [
      ...CONTRACT_SEED.accounts,
      { idType: 'MSISDN', idValue: '260971000009', firstName: 'Natasha', middleName: 'K', lastName: 'Tembo', dateOfBirth: '1990-04-01', balance: '1' },
      { idType: 'MSISDN', idValue: '260971000010', firstName: 'Old', lastName: 'Account', balance: '0', status: 'closed' },
    ],
  });
  const adapter = new FineractCoreBanking(options(fineract.url, overrides), { clock });
  closers.push(() => fineract.close(), () => adapter.close());
  return { fineract, adapter };
}

function commitRequest(fineract: FineractFixture, amount = '12.34') {
  return { reference: REF, amount: { amount, currency: 'ZMW' }, payeeAccountId: fineract.accountIdOf(PAYEE.idValue) };
}

describe('FineractCoreBanking: crash safety of the three commit steps', () => {
  it.each([
    ['the payee deposit', 0],
    ['the hold release', 1],
    ['the float withdrawal', 2],
  ])('finishes a commit that timed out after %s, booking each step once', async (_step, skip) => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    fineract.inject('hang-after', 'next-write', 1, skip);
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionTimeout', /outcome unknown/);
    await adapter.commit(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('62.34');
    expect(fineract.floatBalance()).toBe('987.66');
    expect(fineract.floatAvailable()).toBe('987.66');
    expect(fineract.total()).toBe('1261');
    const writes = fineract.requests.filter((request) => request.method === 'POST').map((request) => request.path.replace(/\/\d+\/transactions/, '/N/transactions'));
    expect(writes).toEqual([
      '/fineract-provider/api/v1/savingsaccounts/N/transactions?command=holdAmount',
      '/fineract-provider/api/v1/savingsaccounts/N/transactions?command=deposit',
      expect.stringMatching(/^\/fineract-provider\/api\/v1\/savingsaccounts\/N\/transactions\/\d+\?command=releaseAmount$/),
      '/fineract-provider/api/v1/savingsaccounts/N/transactions?command=withdrawal',
    ]);
  });

  it('reports a commit stopped between release and withdrawal as unknown, then succeeded once finished', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    expect(await adapter.transactionStatus(REF)).toBe('pending');
    fineract.inject('server-error', 'next-write', 1, 2);
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'InstitutionUnavailable', /HTTP 503/);
    expect(await adapter.transactionStatus(REF)).toBe('unknown');
    expect(fineract.total()).toBe('1273.34');
    await adapter.commit(commitRequest(fineract));
    expect(await adapter.transactionStatus(REF)).toBe('succeeded');
    expect(fineract.total()).toBe('1261');
  });
});

describe('FineractCoreBanking: overlapping calls on one reference', () => {
  it('two overlapping commits of one reservation deposit once', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract, '10'));
    const outcomes = await Promise.allSettled([adapter.commit(commitRequest(fineract, '10')), adapter.commit(commitRequest(fineract, '10'))]);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('60');
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(fineract.floatBalance()).toBe('990');
    expect(fineract.floatAvailable()).toBe('990');
    expect(fineract.total()).toBe('1261');
  });

  it('two overlapping reserves hold once, and overlapping refunds pay once', async () => {
    const { fineract, adapter } = await start();
    await Promise.all([adapter.reserve(commitRequest(fineract, '10')), adapter.reserve(commitRequest(fineract, '10'))]);
    expect(fineract.floatAvailable()).toBe('990');
    const refund = { reference: 'REFUND-1', originalReference: 'ORIGINAL-1', amount: { amount: '5', currency: 'ZMW' }, payerId: PAYER.idValue };
    await Promise.all([adapter.refund(refund), adapter.refund(refund)]);
    expect(fineract.balanceOf(PAYER.idValue)).toBe('205');
    expect(fineract.floatBalance()).toBe('995');
  });

  it('lets operations on different references overlap', async () => {
    const { fineract, adapter } = await start();
    const other = { ...commitRequest(fineract, '1'), reference: 'OTHER-1' };
    await Promise.all([adapter.reserve(commitRequest(fineract, '10')), adapter.reserve(other)]);
    await Promise.all([adapter.commit(commitRequest(fineract, '10')), adapter.commit(other)]);
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('61');
    expect(fineract.floatBalance()).toBe('989');
  });
});

describe('FineractCoreBanking: references', () => {
  it('refuses to commit a released reservation and moves nothing', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.release(REF);
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'TransferStateConflict', /was released/);
    await expectConnectorError(adapter.reserve(commitRequest(fineract)), 'TransferStateConflict');
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('50');
    expect(fineract.floatAvailable()).toBe('1000');
  });

  it('refuses to commit what was never reserved', async () => {
    const { fineract, adapter } = await start();
    await expectConnectorError(adapter.commit(commitRequest(fineract)), 'TransferNotFound');
    expect(fineract.balanceOf(PAYEE.idValue)).toBe('50');
  });

  it('refuses a reference reused for another amount', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await expectConnectorError(adapter.commit(commitRequest(fineract, '12.35')), 'ModifiedRequest');
    await expectConnectorError(adapter.reserve(commitRequest(fineract, '1')), 'ModifiedRequest');
    expect(fineract.floatAvailable()).toBe('987.66');
  });

  it('refuses to release a committed reservation', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    await expectConnectorError(adapter.release(REF), 'TransferStateConflict', /was committed/);
    expect(fineract.floatBalance()).toBe('987.66');
    expect(fineract.floatAvailable()).toBe('987.66');
  });

  it('books amounts as decimal strings with our reference in the receipt number and the hold reason', async () => {
    const { fineract, adapter } = await start();
    await adapter.reserve(commitRequest(fineract));
    await adapter.commit(commitRequest(fineract));
    const bodies = fineract.requests.filter((request) => request.method === 'POST').map((request) => request.body);
    expect(bodies[0]).toEqual({ locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate: '2026-11-23', transactionAmount: '12.34', reasonForBlock: REF });
    expect(bodies[1]).toMatchObject({ transactionAmount: '12.34', receiptNumber: REF, note: `Mojaloop ${REF}`, transactionDate: '2026-11-23', locale: 'en' });
    expect(fineract.requests[0]?.headers['fineract-platform-tenantid']).toBe('default');
    expect(fineract.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from('mifos:password').toString('base64')}`);
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

  it('reads status from the float statement', () => {
    const hold = { id: '1', typeId: '20', amount: '1', reversed: false };
    expect(statusFromFloat({ holds: [], deposits: [], withdrawals: [], reversed: 0 })).toBe('not-found');
    expect(statusFromFloat({ holds: [hold], deposits: [], withdrawals: [], reversed: 0 })).toBe('pending');
    expect(statusFromFloat({ holds: [{ ...hold, releaseTransactionId: '2' }], deposits: [], withdrawals: [], reversed: 0 })).toBe('unknown');
    expect(statusFromFloat({ holds: [], deposits: [], withdrawals: [{ ...hold, typeId: '2' }], reversed: 0 })).toBe('succeeded');
    expect(statusFromFloat({ holds: [], deposits: [], withdrawals: [], reversed: 1 })).toBe('unknown');
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
        timeoutMs: 15_000,
        connectTimeoutMs: 3000,
        maxResponseBytes: 16_777_216,
      },
    });
  });
});
