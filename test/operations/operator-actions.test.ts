import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { interceptCoreBanking } from '../../src/adapters/core-banking/intercept.js';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import { notification } from '../support/backend-bodies.js';
import { TEST_CHANNEL_API_KEY, TEST_OPERATOR_TOKENS } from '../support/harness.js';
import { PAYER_ACCOUNT, acceptRefusedBySwitch, channelDebit, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { balances, customerWith, reserveIncoming, startHarness, type Harness } from '../support/sandbox-harness.js';
import { hubAnswer } from '../support/fake-switch.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

/** An outgoing payment whose accept hung: CONFIRMING, the customer debited by the channel. */
async function confirmingPayment(): Promise<{ home: string; transferId: string }> {
  const body = sendMoneyBody();
  const home = String(body['homeTransactionId']);
  h.fakeSwitch.script(home, { accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE' });
  const terms = await initiate(h, body);
  await channelDebit(h, home, '100');
  const transferId = String(terms['transferId']);
  expect((await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(504);
  return { home, transferId };
}

describe('operator actions', () => {
  it('a console that is not built is a 404 that names the missing file, not where the connector is installed', async () => {
    const consoleDir = '/srv/bank-a/connector-install/console-not-here';
    h = await startHarness({ env: { CONSOLE_DIR: consoleDir } });
    const answer = await h.callOperations('GET', '/console/', undefined, null);
    expect(answer).toEqual({ status: 404, body: { statusCode: '3002', message: 'Unknown URI: the console is not built (index.html missing; run npm run build)' } });
  });

  it('take an operator token: none, a wrong one or the channel key is refused with 401', async () => {
    h = await startHarness();
    const refused = { status: 401, body: { statusCode: '3000', message: 'Unauthorized: missing or wrong operator token (Authorization: Bearer ...)' } };
    expect(await h.callOperations('GET', '/operations/items', undefined, null)).toEqual(refused);
    expect(await h.callOperations('GET', '/operations/items', undefined, TEST_CHANNEL_API_KEY)).toEqual(refused);
    expect(await h.callOperations('GET', '/operations/items', undefined, `${TEST_OPERATOR_TOKENS.alice}x`)).toEqual(refused);
    expect(await h.callOperations('GET', '/operations/whoami')).toEqual({ status: 200, body: { operator: 'alice' } });
    expect(await h.callOperations('GET', '/operations/whoami', undefined, TEST_OPERATOR_TOKENS.bob)).toEqual({ status: 200, body: { operator: 'bob' } });
  });

  it("apply the switch's outcome: only the final state the switch reports, once; the customer is refunded once", async () => {
    h = await startHarness();
    const { home, transferId } = await confirmingPayment();
    const before = await balances(h);
    const apply = (outcome: string): ReturnType<Harness['callOperations']> =>
      h.callOperations('POST', `/operations/items/outgoing_payment/${home}/apply-switch-outcome`, { outcome, reason: 'switch portal shows the transfer aborted' });

    // The switch has not decided: nothing moves.
    expect(await apply('ABORTED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the switch reports NOT_AT_HUB, not ABORTED; nothing changed' } });
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    // The operator expected another outcome than the switch's: nothing moves.
    expect(await apply('COMPLETED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the switch reports ABORTED, not COMPLETED; nothing changed' } });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe(before.of(PAYER_ACCOUNT).balance);

    const applied = await apply('ABORTED');
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ subject: 'outgoing_payment', id: home, transferId, state: 'REFUNDED', needsAttention: false });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect(await apply('ABORTED')).toEqual({
      status: 409,
      body: { statusCode: '3106', message: "Operator action refused: the payment is REFUNDED; only ACCEPTING or CONFIRMING waits for the switch's outcome" },
    });
    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');

    const history = await h.app.audit.history('outgoing_payment', home);
    const byOperator = history.filter((event) => event.cause === 'operator');
    expect(byOperator.map((event) => [event.fromState, event.toState, event.operator, event.reason])).toEqual([
      ['CONFIRMING', 'REFUNDING', 'alice', 'apply-switch-outcome: switch portal shows the transfer aborted'],
      ['REFUNDING', 'REFUNDED', 'alice', 'apply-switch-outcome: switch portal shows the transfer aborted'],
    ]);
  });

  it("apply the switch's outcome to a payment a crash left in ACCEPTING: nothing moves, the flag stays, until the switch reports the expected outcome", async () => {
    h = await startHarness();
    const { home, transferId } = await confirmingPayment();
    // As a process that crashed during its accept leaves it (and the recovery worker has flagged it).
    await sql`update outgoing_payments set state = 'ACCEPTING', needs_attention = 1, last_error = 'accept interrupted' where home_transaction_id = ${home}`.execute(h.app.database.reader());
    h.clock.advance(600_000);
    const before = await balances(h);
    const asked = (): number => h.fakeSwitch.requests.filter((request) => request.method === 'GET' && request.path === `/transfers/${transferId}`).length;
    const askedBefore = asked();
    const apply = (outcome: string): ReturnType<Harness['callOperations']> =>
      h.callOperations('POST', `/operations/items/outgoing_payment/${home}/apply-switch-outcome`, { outcome, reason: 'hub portal shows it aborted' });
    const untouched = async (): Promise<void> => {
      expect(await new SqlOutgoingStore(h.app.database).findByHomeTransactionId(home)).toMatchObject({ state: 'ACCEPTING', needsAttention: true, lastError: 'accept interrupted' });
      expect((await h.app.audit.history('outgoing_payment', home)).filter((event) => event.cause === 'operator')).toEqual([]);
    };

    expect(await apply('ABORTED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the switch reports NOT_AT_HUB, not ABORTED; nothing changed' } });
    await untouched();
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    expect(await apply('COMPLETED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the switch reports ABORTED, not COMPLETED; nothing changed' } });
    await untouched();
    h.fakeSwitch.setTransferStatus(transferId, { status: 503, body: { statusCode: '2003', message: 'down' } });
    expect((await apply('ABORTED')).status).toBe(503);
    await untouched();
    expect(asked() - askedBefore).toBe(3);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe(before.of(PAYER_ACCOUNT).balance);

    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    const applied = await apply('ABORTED');
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ id: home, state: 'REFUNDED', needsAttention: false });
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    const byOperator = (await h.app.audit.history('outgoing_payment', home)).filter((event) => event.cause === 'operator');
    expect(byOperator.map((event) => [event.fromState, event.toState, event.reason])).toEqual([
      ['ACCEPTING', 'CONFIRMING', 'apply-switch-outcome: hub portal shows it aborted'],
      ['CONFIRMING', 'REFUNDING', 'apply-switch-outcome: hub portal shows it aborted'],
      ['REFUNDING', 'REFUNDED', 'apply-switch-outcome: hub portal shows it aborted'],
    ]);
  });

  it("apply the switch's ABORTED with the institution's refund failing: one refund call and one attempt per action; the recovery worker retries it", async () => {
    let refunds = 0;
    h = await startHarness({
      overrides: {
        wrapCoreBanking: (inner) =>
          interceptCoreBanking(new FaultyCoreBanking(inner, { operations: ['refund'], failures: 1, kind: 'unavailable' }), (operation, call) => {
            if (operation === 'refund') refunds += 1;
            return call();
          }),
      },
    });
    const { home, transferId } = await confirmingPayment();
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    const applied = await h.callOperations('POST', `/operations/items/outgoing_payment/${home}/apply-switch-outcome`, { outcome: 'ABORTED', reason: 'hub portal shows it aborted' });
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ id: home, state: 'REFUNDING', attempts: 1 });
    expect(refunds).toBe(1);
    const refunding = (await h.app.audit.history('outgoing_payment', home)).filter((event) => event.fromState === 'REFUNDING' || event.toState === 'REFUNDING');
    expect(refunding.map((event) => [event.fromState, event.toState, event.attempt, event.cause])).toEqual([
      ['CONFIRMING', 'REFUNDING', 0, 'operator'],
      ['REFUNDING', 'REFUNDING', 1, 'operator'],
    ]);

    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(refunds).toBe(2);
    expect((await new SqlOutgoingStore(h.app.database).findByHomeTransactionId(home))?.state).toBe('REFUNDED');
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
  });

  it('a reason or evidence of spaces only is refused (400 3100) by every action, and nothing changes', async () => {
    h = await startHarness();
    const { home, transferId } = await confirmingPayment();
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    const blank = (field: string, hint: string) => ({ status: 400, body: { statusCode: '3100', message: `Generic validation error: body/${field} is blank; ${hint}` } });
    const why = blank('reason', 'say why (it goes into the audit trail)');
    const base = `/operations/items/outgoing_payment/${home}`;
    const store = new SqlOutgoingStore(h.app.database);
    const before = await store.findByHomeTransactionId(home);
    expect(before?.state).toBe('CONFIRMING');
    expect(await h.callOperations('POST', `${base}/retry`, { reason: '   ' })).toEqual(why);
    expect(await h.callOperations('POST', `${base}/apply-switch-outcome`, { outcome: 'ABORTED', reason: '\u00a0 ' })).toEqual(why);
    expect(await h.callOperations('POST', `${base}/resolve`, { outcome: 'ABORTED', reason: ' ', evidence: 'hub ticket 881' })).toEqual(why);
    expect(await h.callOperations('POST', `${base}/resolve`, { outcome: 'ABORTED', reason: 'hub aborted it', evidence: '  ' })).toEqual(
      blank('evidence', 'say what the institution or the hub confirmed, and its reference'),
    );
    expect(await store.findByHomeTransactionId(home)).toEqual(before);
    expect((await h.app.audit.history('outgoing_payment', home)).filter((event) => event.cause === 'operator')).toEqual([]);
    expect(h.fakeSwitch.requests.filter((request) => request.method === 'GET' && request.path === `/transfers/${transferId}`)).toHaveLength(1);
  });

  it("racing the recovery worker on the same payment, the switch's ABORTED refunds the customer exactly once", async () => {
    h = await startHarness();
    const { home, transferId } = await confirmingPayment();
    h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    h.clock.advance(1_001);
    const [operator, worker] = await Promise.all([
      h.callOperations('POST', `/operations/items/outgoing_payment/${home}/apply-switch-outcome`, { outcome: 'ABORTED', reason: 'race' }),
      h.app.outgoingRecovery.runOnce(),
    ]);
    // Whoever came second found the payment moved on (the operator a 409, the worker nothing to do).
    expect([200, 409]).toContain(operator.status);
    expect(worker.claimed + (operator.status === 200 ? 1 : 0)).toBeGreaterThanOrEqual(1);
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1200.5');
    const refunded = (await h.app.audit.history('outgoing_payment', home)).filter((event) => event.toState === 'REFUNDED');
    expect(refunded).toHaveLength(1);
  });

  it('resolve by hand: a flagged refund the institution paid out of band, with evidence, once; never while a worker holds it', async () => {
    let faulty: FaultyCoreBanking | undefined;
    h = await startHarness({
      env: { RECOVERY_ATTENTION_AFTER_ATTEMPTS: '1' },
      overrides: {
        wrapCoreBanking: (inner) => {
          faulty = new FaultyCoreBanking(inner, { operations: ['refund'], failures: 1000, kind: 'unavailable' });
          return faulty;
        },
      },
    });
    const { home } = await acceptRefusedBySwitch(h);
    const path = `/operations/items/outgoing_payment/${home}/resolve`;
    const evidence = 'branch teller paid 100 ZMW back, institution receipt BR-20261123-0042';

    expect(await h.callOperations('POST', path, { outcome: 'REFUNDED', reason: 'paid at the branch' })).toEqual({
      status: 400,
      body: { statusCode: '3102', message: "Missing mandatory element: body must have required property 'evidence'" },
    });
    expect(await h.callOperations('POST', path, { outcome: 'COMMITTED', reason: 'x', evidence })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: an item in REFUNDING can only be resolved by hand to REFUNDED, not COMMITTED' },
    });
    // The worker takes the payment (its lease runs RECOVERY_LEASE_MS, 60 s): the operator waits.
    const claimed = await new SqlOutgoingStore(h.app.database, () => h.clock.now()).claimDue({ states: ['REFUNDING'], now: '2026-11-23T10:00:05.000Z', staleBefore: '2026-11-23T10:00:05.000Z', leaseUntil: '2026-11-23T10:01:00.000Z', limit: 10 });
    expect(claimed.map((payment) => payment.homeTransactionId)).toEqual([home]);
    expect(await h.callOperations('POST', path, { outcome: 'REFUNDED', reason: 'paid at the branch', evidence }, TEST_OPERATOR_TOKENS.bob)).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: the recovery worker is working on this item now; nothing changed, look again in a moment' },
    });
    h.clock.advance(60_000);
    const resolved = await h.callOperations('POST', path, { outcome: 'REFUNDED', reason: 'paid at the branch', evidence }, TEST_OPERATOR_TOKENS.bob);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ state: 'REFUNDED', needsAttention: false, attempts: 0, lastError: null });
    expect(await h.callOperations('POST', path, { outcome: 'REFUNDED', reason: 'again', evidence })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: the payment is REFUNDED and not flagged; there is nothing to resolve' },
    });
    const triedBefore = faulty?.injected;
    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(faulty?.injected).toBe(triedBefore);
    // The connector moved no money for the resolution: the customer's balance is the institution's business.
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe('1100.5');
    const last = (await h.app.audit.history('outgoing_payment', home)).at(-1);
    expect(last).toMatchObject({
      event: 'transition',
      fromState: 'REFUNDING',
      toState: 'REFUNDED',
      cause: 'operator',
      operator: 'bob',
      reason: 'resolve: paid at the branch',
      evidence,
      errorCode: 'RESOLVED_BY_OPERATOR',
      needsAttention: false,
    });
  });

  it.each(['ABORTED', 'COMPLETED'] as const)("resolve by hand a flagged CONFIRMING payment the switch cannot settle, on the hub's word %s: once, with evidence; ABORTED refunds the customer once", async (outcome) => {
    h = await startHarness({ env: { RECOVERY_ATTENTION_AFTER_ATTEMPTS: '2' } });
    const { home, transferId } = await confirmingPayment();
    const path = `/operations/items/outgoing_payment/${home}/resolve`;
    const evidence = 'hub operator, settlement window 42 report, transfer listed as ' + outcome;
    // One failed question to the switch: not flagged, still the connector's to finish.
    expect(await h.callOperations('POST', path, { outcome, reason: 'hub says so', evidence })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: only an item flagged for attention is resolved by hand; the connector is still finishing this one' },
    });
    // The switch connector cannot answer for it any more (down, or the hub's record out of its reach).
    h.fakeSwitch.setTransferStatus(transferId, { status: 503, body: { statusCode: '2003', message: 'Service currently unavailable' } });
    h.clock.advance(10_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    expect((await h.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING', needsAttention: true });
    expect(await h.callOperations('POST', path, { outcome: 'REFUNDED', reason: 'x', evidence })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: "Operator action refused: a CONFIRMING payment is resolved by hand to the hub's outcome, COMPLETED or ABORTED, not REFUNDED" },
    });
    const resolved = await h.callOperations('POST', path, { outcome, reason: 'the switch cannot find it; the hub operator confirmed', evidence }, TEST_OPERATOR_TOKENS.bob);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ state: outcome === 'ABORTED' ? 'REFUNDED' : 'COMPLETED', needsAttention: false, attempts: 0, lastError: null });
    expect(await h.callOperations('POST', path, { outcome, reason: 'again', evidence })).toEqual({
      status: 409,
      body: {
        statusCode: '3106',
        message: outcome === 'COMPLETED' ? 'Operator action refused: the payment is COMPLETED and not flagged; there is nothing to resolve' : 'Operator action refused: an item in REFUNDED can only be resolved by hand to REFUNDED (clearing its flag), not ABORTED',
      },
    });
    h.clock.advance(600_000);
    expect(await h.app.outgoingRecovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    // Debited 100 by the channel; ABORTED pays it back once, COMPLETED moves nothing.
    expect((await balances(h)).of(PAYER_ACCOUNT).balance).toBe(outcome === 'ABORTED' ? '1200.5' : '1100.5');
    const byOperator = (await h.app.audit.history('outgoing_payment', home)).filter((event) => event.cause === 'operator');
    expect(byOperator.map((event) => [event.fromState, event.toState, event.operator, event.reason, event.evidence, event.errorCode])).toEqual(
      outcome === 'ABORTED'
        ? [
            ['CONFIRMING', 'REFUNDING', 'bob', 'resolve: the switch cannot find it; the hub operator confirmed', evidence, 'RESOLVED_BY_OPERATOR'],
            ['REFUNDING', 'REFUNDED', 'bob', 'resolve: the switch cannot find it; the hub operator confirmed', evidence, null],
          ]
        : [['CONFIRMING', 'COMPLETED', 'bob', 'resolve: the switch cannot find it; the hub operator confirmed', evidence, 'RESOLVED_BY_OPERATOR']],
    );
  });

  it('resolve refuses an item the connector is still finishing (not flagged)', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['commit'], failures: 1, kind: 'unavailable' }) } });
    const transferId = await reserveIncoming(h, '40');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    expect(await h.callOperations('POST', `/operations/items/incoming_transfer/${transferId}/resolve`, { outcome: 'COMMITTED', reason: 'x', evidence: 'y' })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: only an item flagged for attention is resolved by hand; the connector is still finishing this one' },
    });
  });

  it('resolve clears the flag of an item in a final state, once, with the evidence, and nothing else', async () => {
    h = await startHarness();
    const transferId = await reserveIncoming(h, '40');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).status).toBe(422);
    const resolve = (outcome: string) =>
      h.callOperations('POST', `/operations/items/incoming_transfer/${transferId}/resolve`, { outcome, reason: 'hub settled it; payee credited by hand', evidence: 'ticket 4711' });
    // Not flagged yet: nothing to resolve.
    expect(await resolve('ABORTED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the transfer is ABORTED and not flagged; there is nothing to resolve' } });
    // The switch contradicts the abort: flagged.
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(409);
    const before = await balances(h);
    expect(await resolve('COMMITTED')).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: an item in ABORTED can only be resolved by hand to ABORTED (clearing its flag), not COMMITTED' },
    });
    const resolved = await resolve('ABORTED');
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ subject: 'incoming_transfer', id: transferId, state: 'ABORTED', needsAttention: false, lastError: null });
    expect(await resolve('ABORTED')).toEqual({ status: 409, body: { statusCode: '3106', message: 'Operator action refused: the transfer is ABORTED and not flagged; there is nothing to resolve' } });
    expect(await balances(h)).toEqual(before);
    const byOperator = (await h.app.audit.history('incoming_transfer', transferId)).filter((event) => event.cause === 'operator');
    expect(byOperator.map((event) => [event.event, event.fromState, event.toState, event.operator, event.reason, event.evidence])).toEqual([
      ['attempt', 'ABORTED', 'ABORTED', 'alice', 'resolve: hub settled it; payee credited by hand', 'ticket 4711'],
    ]);
  });

  it('retry now: a failing credit is made due and the recovery worker, woken, finishes it; the action is in the trail', async () => {
    h = await startHarness({
      env: { RECOVERY_BASE_BACKOFF_MS: '3600000' },
      overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['commit'], failures: 1, kind: 'unavailable' }) },
    });
    const before = await balances(h);
    const transferId = await reserveIncoming(h, '60');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    // Not due for an hour.
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    const retried = await h.callOperations('POST', `/operations/items/incoming_transfer/${transferId}/retry`, { reason: 'institution back up' });
    expect(retried).toEqual({ status: 200, body: { state: 'COMMITTING' } });
    let state = '';
    for (let tries = 0; tries < 100 && state !== 'COMMITTED'; tries += 1) {
      await sleep(20);
      state = String(((await h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']);
    }
    expect(state).toBe('COMMITTED');
    const payee = customerWith((c) => c.status === 'active');
    // Credited once with what the payee receives for 60 (seeded 2500).
    expect(before.of(payee.accountId).balance).toBe('2500');
    expect((await balances(h)).of(payee.accountId).balance).toBe('2559.4');
    const history = await h.app.audit.history('incoming_transfer', transferId);
    expect(history.slice(-2).map((event) => [event.event, event.fromState, event.toState, event.cause, event.operator, event.reason])).toEqual([
      ['attempt', 'COMMITTING', 'COMMITTING', 'operator', 'alice', 'retry: institution back up'],
      ['transition', 'COMMITTING', 'COMMITTED', 'recovery', null, null],
    ]);
    expect(await h.callOperations('POST', `/operations/items/incoming_transfer/${transferId}/retry`, { reason: 'again' })).toEqual({
      status: 409,
      body: { statusCode: '3106', message: 'Operator action refused: an incoming transfer in COMMITTED has nothing to retry' },
    });
  });

  it('search finds items by state, id, time and attention; the detail carries the trail; bad filters are 400', async () => {
    h = await startHarness({ env: { RECOVERY_ATTENTION_AFTER_ATTEMPTS: '1' }, overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['commit'], failures: 5, kind: 'unavailable' }) } });
    const stuck = await reserveIncoming(h, '70');
    expect((await h.call('PUT', `/transfers/${stuck}`, notification('COMPLETED'))).status).toBe(503);
    h.clock.advance(60_000);
    const other = await reserveIncoming(h, '80');
    const list = async (query: string): Promise<string[]> => (((await h.callOperations('GET', `/operations/items${query}`)).body as { items: Body[] }).items ?? []).map((item) => String(item['id']));
    expect(await list('?attention=true')).toEqual([stuck]);
    expect(await list('?subject=incoming_transfer&state=RESERVED')).toEqual([other]);
    expect(await list('?subject=incoming_transfer')).toEqual([other, stuck]);
    expect(await list(`?id=${stuck}`)).toEqual([stuck]);
    expect(await list('?from=2026-11-23T10:00:30.000Z')).toEqual([other]);
    expect(await list('?to=2026-11-23T10:00:30.000Z')).toEqual([stuck]);
    expect(await h.callOperations('GET', '/operations/items?state=DONE')).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: state: "DONE" is not a state' } });
    expect(await h.callOperations('GET', '/operations/items?from=yesterday')).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: from: "yesterday" is not a date or an ISO 8601 instant' } });
    const detail = (await h.callOperations('GET', `/operations/items/incoming_transfer/${stuck}`)).body as { item: Body; detail: Body; history: Body[] };
    expect(detail.item).toMatchObject({ id: stuck, state: 'COMMITTING', needsAttention: true, attempts: 1, lastError: 'Institution unavailable: injected fault on commit' });
    expect(detail.detail).toMatchObject({ institutionReference: stuck, switchState: 'COMPLETED', payeeReceiveAmount: '69.3', currency: 'ZMW' });
    expect(detail.history.map((event) => event['toState'])).toEqual(['RECEIVED', 'RESERVED', 'COMMITTING', 'COMMITTING']);
    expect(await h.callOperations('GET', '/operations/items/incoming_transfer/no-such-transfer')).toEqual({ status: 404, body: { statusCode: '3208', message: 'Transfer not found: no incoming transfer no-such-transfer' } });
  });
});
