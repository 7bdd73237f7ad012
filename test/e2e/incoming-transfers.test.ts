import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { ConnectorError } from '../../src/domain/errors.js';
import { addMoney, subtractMoney, type Money } from '../../src/domain/money.js';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { interceptOne } from '../support/intercept-one.js';
import { createTestDatabase } from '../support/postgres.js';
import { accountOf, balances, customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';

type Body = Record<string, unknown>;

let h: Harness;
afterEach(async () => {
  await h.close();
});

async function quoteFor(amount: string, payeeStatus = 'active'): Promise<{ quoteBody: Body; quoteAnswer: Body; payeeAccount: string }> {
  const payee = customerWith((c) => c.status === payeeStatus);
  const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount });
  const answer = await h.call('POST', '/quoterequests', quoteBody);
  expect(answer.status).toBe(200);
  return { quoteBody, quoteAnswer: answer.body as Body, payeeAccount: payee.accountId };
}

describe('incoming transfers: reservation', () => {
  it('reserves the payee amount from the float and answers RESERVED', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { quoteBody, quoteAnswer, payeeAccount } = await quoteFor('100');
    const body = transferRequest(quoteBody, quoteAnswer);
    const answer = await h.call('POST', '/transfers', body);
    expect(answer).toEqual({
      status: 200,
      body: { homeTransactionId: body['transferId'], transferState: 'RESERVED', completedTimestamp: '2026-11-23T10:00:00.000Z' },
    });
    const after = await balances(h);
    expect(after.float).toEqual({ balance: before.float.balance, held: '99' });
    expect(after.of(payeeAccount)).toEqual(before.of(payeeAccount));
    expect(await h.call('GET', `/transfers/${String(body['transferId'])}`)).toEqual({
      status: 200,
      body: {
        homeTransactionId: body['transferId'],
        from: { idType: 'MSISDN', idValue: '254700000001' },
        to: { idType: 'MSISDN', idValue: (quoteBody['to'] as Body)['idValue'] },
        amountType: 'SEND',
        currency: 'ZMW',
        amount: '100',
        transferState: 'RESERVED',
        transactionType: 'TRANSFER',
        timestamp: '2026-11-23T10:00:00.000Z',
      },
    });
  });

  it('checks in order: identifier type, currency, quote, then payee; each rejection moves no money', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { quoteBody, quoteAnswer } = await quoteFor('50');
    const to = quoteBody['to'] as Body;
    const cases: Array<[string, Body, number, string]> = [
      ['idType', transferRequest(quoteBody, quoteAnswer, { to: { ...to, idType: 'EMAIL' }, currency: 'USD' }), 422, '3100'],
      ['currency', transferRequest(quoteBody, quoteAnswer, { currency: 'USD' }), 422, '5106'],
      ['unknown quote', transferRequest(quoteBody, { ...quoteAnswer, quoteId: randomUUID() }), 404, '3205'],
      ['amount', transferRequest(quoteBody, quoteAnswer, { amount: '51' }), 422, '5101'],
      ['quote amount', transferRequest(quoteBody, { ...quoteAnswer, transferAmount: '49' }), 422, '5101'],
      ['ilp amount', withIlpAmount(transferRequest(quoteBody, quoteAnswer), '50.01'), 422, '5101'],
      ['payee', transferRequest(quoteBody, quoteAnswer, { to: { ...to, idValue: '260979999999' } }), 422, '5101'],
    ];
    const seen = [];
    for (const [name, body, , ] of cases) {
      const answer = await h.call('POST', '/transfers', body);
      seen.push([name, answer.status, (answer.body as Body)['statusCode']]);
    }
    expect(seen).toEqual(cases.map(([name, , status, code]) => [name, status, code]));
    const mismatch = await h.call('POST', '/transfers', transferRequest(quoteBody, quoteAnswer, { amount: '51' }));
    expect((mismatch.body as Body)['message']).toBe(`Transfer inconsistent with its quote: differs from quote ${String(quoteAnswer['quoteId'])} in amount`);
    expect(await balances(h)).toEqual(before);
  });

  it('credits the account quoted, under its sub-identifier, when the transfer\'s payee leaves the sub-identifier out', async () => {
    // One number, two accounts: the main one, and savings under the sub-identifier "savings".
    const dir = mkdtempSync(join(tmpdir(), 'cc-subid-'));
    try {
      const accountsFile = join(dir, 'accounts.json');
      const customer = { idType: 'MSISDN', idValue: '260971000010', firstName: 'Mutale', lastName: 'Banda', status: 'active', balance: '100' };
      writeFileSync(accountsFile, JSON.stringify({
        currency: 'ZMW',
        float: { accountId: 'float-zmw', balance: '1000' },
        customers: [
          { ...customer, accountId: 'acc-main' },
          { ...customer, accountId: 'acc-savings', idSubValue: 'savings' },
        ],
      }));
      h = await startHarness({ env: { SANDBOX_ACCOUNTS_FILE: accountsFile } });
      const quoteBody: Body = { ...quoteRequest({ payeeMsisdn: '260971000010', amount: '100' }), to: { idType: 'MSISDN', idValue: '260971000010', idSubValue: 'savings' } };
      const quote = await h.call('POST', '/quoterequests', quoteBody);
      expect(quote.status).toBe(200);
      const body = transferRequest(quoteBody, quote.body as Body, { to: { idType: 'MSISDN', idValue: '260971000010' } });
      expect((await h.call('POST', '/transfers', body)).body).toMatchObject({ transferState: 'RESERVED' });
      expect(await h.call('PUT', `/transfers/${String(body['transferId'])}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
      const after = await balances(h);
      expect([after.of('acc-savings').balance, after.of('acc-main').balance]).toEqual(['199', '100']);
      // Another sub-identifier than the quote's is no transfer of that quote.
      const other = transferRequest(quoteBody, quote.body as Body, { to: { idType: 'MSISDN', idValue: '260971000010', idSubValue: 'current' } });
      expect(await h.call('POST', '/transfers', other)).toEqual({ status: 422, body: { statusCode: '5101', message: `Transfer inconsistent with its quote: differs from quote ${String(quoteBody['quoteId'])} in to.idSubValue` } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a reserve applied but answered after the timeout, then declined when repeated, gives the hold back', async () => {
    // The institution holds the amount on the first reserve but answers too late; it refuses the
    // repeat of a reference it has already used (as some institutions do).
    let reserves = 0;
    h = await startHarness({
      overrides: {
        wrapCoreBanking: interceptOne('reserve', async (call, count) => {
          reserves = count;
          if (count === 1) {
            await call();
            throw new ConnectorError('InstitutionTimeout', 'the answer came after the timeout');
          }
          throw new ConnectorError('TransferStateConflict', 'reference already used');
        }),
      },
    });
    const before = await balances(h);
    const { quoteBody, quoteAnswer } = await quoteFor('100');
    const body = transferRequest(quoteBody, quoteAnswer);
    expect((await h.call('POST', '/transfers', body)).status).toBe(504);
    expect((await balances(h)).float.held).toBe('99');
    // The switch's retry: declined, so REJECTED; the hold the first attempt made is released.
    expect(await h.call('POST', '/transfers', body)).toEqual({ status: 409, body: { statusCode: '3106', message: 'Transfer already finished differently' } });
    expect((await h.call('GET', `/transfers/${String(body['transferId'])}`)).body).toMatchObject({ transferState: 'ABORTED' });
    expect(reserves).toBe(2);
    expect(await balances(h)).toEqual(before);
  });

  it('refuses an expired quote with 3302', async () => {
    h = await startHarness();
    const { quoteBody, quoteAnswer } = await quoteFor('10');
    h.clock.advance(3_600_001);
    const answer = await h.call('POST', '/transfers', transferRequest(quoteBody, quoteAnswer));
    expect(answer).toEqual({
      status: 422,
      body: { statusCode: '3302', message: `Quote expired: quote ${String(quoteAnswer['quoteId'])} expired at 2026-11-23T11:00:00.000Z` },
    });
  });

  it('refuses with 5001 when the float cannot cover it, and answers a retry the same', async () => {
    h = await startHarness();
    const before = await balances(h);
    // The payee receives 99% of the amount: twice the float is out of reach whatever the fee.
    const tooMuch = (BigInt(before.float.balance.split('.')[0] ?? '0') * 2n).toString();
    const { quoteBody, quoteAnswer } = await quoteFor(tooMuch);
    const body = transferRequest(quoteBody, quoteAnswer);
    const first = await h.call('POST', '/transfers', body);
    expect(first.status).toBe(422);
    expect((first.body as Body)['statusCode']).toBe('5001');
    expect(await h.call('POST', '/transfers', body)).toEqual(first);
    expect(await balances(h)).toEqual(before);
  });

  it('answers 4 identical POSTs with one reservation and the same answer', async () => {
    h = await startHarness();
    const { quoteBody, quoteAnswer } = await quoteFor('20');
    const body = transferRequest(quoteBody, quoteAnswer);
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await h.call('POST', '/transfers', body));
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect((await balances(h)).float.held).toBe('19.8');
  });

  it('ends 10 parallel identical POSTs with one reservation', async () => {
    h = await startHarness();
    const { quoteBody, quoteAnswer } = await quoteFor('30');
    const body = transferRequest(quoteBody, quoteAnswer);
    const answers = await Promise.all(Array.from({ length: 10 }, () => h.call('POST', '/transfers', body)));
    for (const answer of answers) expect(answer).toEqual({ status: 200, body: answers[0]?.body });
    expect((await balances(h)).float.held).toBe('29.7');
  });

  it('answers the same transferId with another body 3106', async () => {
    h = await startHarness();
    const { quoteBody, quoteAnswer } = await quoteFor('30');
    const body = transferRequest(quoteBody, quoteAnswer);
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    const changed = await h.call('POST', '/transfers', { ...body, note: 'changed' });
    expect(changed).toEqual({
      status: 409,
      body: { statusCode: '3106', message: `Modified request: transfer ${String(body['transferId'])} was received with another body` },
    });
  });
});

describe('incoming transfers: notification', () => {
  async function reserved(amount: string): Promise<{ transferId: string; payeeAccount: string }> {
    const { quoteBody, quoteAnswer, payeeAccount } = await quoteFor(amount);
    const body = transferRequest(quoteBody, quoteAnswer);
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    return { transferId: String(body['transferId']), payeeAccount };
  }

  it('COMPLETED credits the payee from the reservation, once, however often it is repeated', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { transferId, payeeAccount } = await reserved('100');
    for (let i = 0; i < 6; i += 1) {
      expect(await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    }
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(addMoney(zmw(before.of(payeeAccount).balance), zmw('99')).amount);
    expect(after.float).toEqual({ balance: subtractMoney(zmw(before.float.balance), zmw('99')).amount, held: '0' });
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'COMMITTED' });
  });

  it('ends 6 parallel identical COMPLETED notifications with one credit', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { transferId, payeeAccount } = await reserved('50');
    const answers = await Promise.all(Array.from({ length: 6 }, () => h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))));
    for (const answer of answers) expect(answer).toEqual({ status: 200, body: {} });
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(addMoney(zmw(before.of(payeeAccount).balance), zmw('49.5')).amount);
    expect(after.float).toEqual({ balance: subtractMoney(zmw(before.float.balance), zmw('49.5')).amount, held: '0' });
  });

  it('PATCH has the same semantics as PUT', async () => {
    h = await startHarness();
    const { transferId } = await reserved('10');
    expect(await h.call('PATCH', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'COMMITTED' });
  });

  it('ABORTED releases the reservation and answers transfer-not-completed; a later COMPLETED moves nothing', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { transferId } = await reserved('100');
    const notCompleted = { status: 422, body: { statusCode: '5104', message: 'Transfer not completed: switch reported ABORTED' } };
    expect(await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).toEqual(notCompleted);
    expect(await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).toEqual(notCompleted);
    expect(await balances(h)).toEqual(before);
    const late = await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(late).toEqual({
      status: 409,
      body: { statusCode: '3106', message: `Transfer already finished differently: transfer ${transferId} is ABORTED; completion not applied` },
    });
    expect(await balances(h)).toEqual(before);
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'ABORTED' });
    // The hub and the payee side now disagree: flagged for an operator, with what the switch said.
    expect((await h.callOperations('GET', `/operations/items/incoming_transfer/${transferId}`)).body).toMatchObject({
      item: { state: 'ABORTED', needsAttention: true, lastError: 'the switch reported COMPLETED, but the transfer is ABORTED: reconcile by hand' },
    });
  });

  it('COMPLETED while the abort is still releasing moves nothing, and the flag outlives the release', async () => {
    // The institution's first release fails: the abort is left RELEASING for the worker.
    h = await startHarness({ overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['release'], failures: 2, kind: 'unavailable' }) } });
    const before = await balances(h);
    const { transferId } = await reserved('100');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).status).toBe(503);
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(409);
    const flag = { needsAttention: true, lastError: 'the switch reported COMPLETED, but the transfer is RELEASING: reconcile by hand' };
    const item = async () => ((await h.callOperations('GET', `/operations/items/incoming_transfer/${transferId}`)).body as { item: Record<string, unknown> }).item;
    expect(await item()).toMatchObject({ state: 'RELEASING', ...flag });
    // The worker's next release fails too, then one succeeds: the flag stays through both.
    h.clock.advance(600_000);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect(await item()).toMatchObject({ state: 'RELEASING', ...flag });
    h.clock.advance(600_000);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await item()).toMatchObject({ state: 'ABORTED', ...flag });
    expect(await balances(h)).toEqual(before);
  });

  it('an abort after the commit moves nothing and answers a conflict', async () => {
    h = await startHarness();
    const { transferId } = await reserved('100');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(200);
    const committed = await balances(h);
    const late = await h.call('PUT', `/transfers/${transferId}`, notification('ERROR_OCCURRED'));
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ statusCode: '3106' });
    expect(await balances(h)).toEqual(committed);
    expect((await h.callOperations('GET', `/operations/items/incoming_transfer/${transferId}`)).body).toMatchObject({
      item: { state: 'COMMITTED', needsAttention: true, lastError: 'the switch reported ERROR_OCCURRED, but the transfer is COMMITTED: reconcile by hand' },
    });
  });

  it('unknown transfer 404 3208; malformed transfer id 400', async () => {
    h = await startHarness();
    const id = randomUUID();
    expect(await h.call('PUT', `/transfers/${id}`, notification('COMPLETED'))).toEqual({
      status: 404,
      body: { statusCode: '3208', message: `Transfer not found: transfer ${id} is unknown` },
    });
    expect(await h.call('GET', `/transfers/${id}`)).toEqual({ status: 404, body: { statusCode: '3208', message: `Transfer not found: transfer ${id} is unknown` } });
    expect((await h.call('PUT', '/transfers/not-an-id', notification('COMPLETED'))).status).toBe(400);
  });

  it('accepts ULIDs as transfer ids', async () => {
    h = await startHarness();
    const { quoteBody, quoteAnswer } = await quoteFor('5');
    const body = transferRequest(quoteBody, quoteAnswer, { transferId: '01JDQZ8V6N3W0Y5X7R2T4B9C1M' });
    expect((await h.call('POST', '/transfers', body)).status).toBe(200);
    expect((await h.call('PUT', '/transfers/01JDQZ8V6N3W0Y5X7R2T4B9C1M', notification('COMPLETED'))).status).toBe(200);
  });
});

describe('incoming transfers: one quote, one transfer', () => {
  const quoteUsed = (quoteAnswer: Body): Body => ({ statusCode: '3106', message: `Quote already used by another transfer: quote ${String(quoteAnswer['quoteId'])}` });

  it('refuses a second transferId for a quote already taken (409 3106, nothing reserved); the payee is credited once', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { quoteBody, quoteAnswer, payeeAccount } = await quoteFor('100');
    // Same quote, same transactionId and ILP packet, another transferId: what the switch connector
    // forwards with ALLOW_DIFFERENT_TRANSFER_TRANSACTION_ID or ALLOW_TRANSFER_WITHOUT_QUOTE.
    const first = transferRequest(quoteBody, quoteAnswer);
    const second = transferRequest(quoteBody, quoteAnswer);
    const firstAnswer = await h.call('POST', '/transfers', first);
    expect(firstAnswer.status).toBe(200);
    expect(await h.call('POST', '/transfers', second)).toEqual({ status: 409, body: quoteUsed(quoteAnswer) });
    expect(await h.call('POST', '/transfers', second)).toEqual({ status: 409, body: quoteUsed(quoteAnswer) });
    expect((await balances(h)).float).toEqual({ balance: before.float.balance, held: '99' });
    // The first transferId's retry is still answered from its record.
    expect(await h.call('POST', '/transfers', first)).toEqual(firstAnswer);
    expect(await h.call('PUT', `/transfers/${String(first['transferId'])}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(await h.call('PUT', `/transfers/${String(second['transferId'])}`, notification('COMPLETED'))).toEqual({
      status: 404,
      body: { statusCode: '3208', message: `Transfer not found: transfer ${String(second['transferId'])} is unknown` },
    });
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(addMoney(zmw(before.of(payeeAccount).balance), zmw('99')).amount);
    expect(after.float).toEqual({ balance: subtractMoney(zmw(before.float.balance), zmw('99')).amount, held: '0' });
    // Taken by a committed transfer, the quote stays taken.
    expect(await h.call('POST', '/transfers', second)).toEqual({ status: 409, body: quoteUsed(quoteAnswer) });
  });

  it('lets another transferId use the quote once the first ended ABORTED (nothing moved), and credits it once', async () => {
    h = await startHarness();
    const before = await balances(h);
    const { quoteBody, quoteAnswer, payeeAccount } = await quoteFor('100');
    const first = transferRequest(quoteBody, quoteAnswer);
    const second = transferRequest(quoteBody, quoteAnswer);
    const third = transferRequest(quoteBody, quoteAnswer);
    expect((await h.call('POST', '/transfers', first)).status).toBe(200);
    expect((await h.call('PUT', `/transfers/${String(first['transferId'])}`, notification('ABORTED'))).status).toBe(422);
    expect(await balances(h)).toEqual(before);
    expect((await h.call('POST', '/transfers', second)).status).toBe(200);
    expect(await h.call('POST', '/transfers', third)).toEqual({ status: 409, body: quoteUsed(quoteAnswer) });
    expect(await h.call('PUT', `/transfers/${String(second['transferId'])}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(addMoney(zmw(before.of(payeeAccount).balance), zmw('99')).amount);
    expect(after.float).toEqual({ balance: subtractMoney(zmw(before.float.balance), zmw('99')).amount, held: '0' });
  });

  for (const store of ['SQLite', 'PostgreSQL'] as const) {
    it(`ends 8 transferIds posted together for one quote with one reservation, on ${store}`, async () => {
      const database = store === 'PostgreSQL' ? await createTestDatabase() : undefined;
      try {
        h = await startHarness(database === undefined ? {} : { env: { DATABASE_URL: database.url } });
        const before = await balances(h);
        const { quoteBody, quoteAnswer } = await quoteFor('100');
        const bodies = Array.from({ length: 8 }, () => transferRequest(quoteBody, quoteAnswer));
        const answers = await Promise.all(bodies.map((body) => h.call('POST', '/transfers', body)));
        expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
        expect(answers.filter((answer) => answer.status !== 200)).toEqual(Array.from({ length: 7 }, () => ({ status: 409, body: quoteUsed(quoteAnswer) })));
        expect((await balances(h)).float).toEqual({ balance: before.float.balance, held: '99' });
      } finally {
        await h.close();
        await database?.drop();
      }
    });
  }
});

function withIlpAmount(body: Body, amount: string): Body {
  const ilpPacket = body['ilpPacket'] as { data: Body };
  return { ...body, ilpPacket: { data: { ...ilpPacket.data, amount: { amount, currency: 'ZMW' } } } };
}
/** An amount of the demo institution's currency, for the money helpers. */
function zmw(amount: string): Money {
  return { amount, currency: 'ZMW' };
}

export { accountOf };
