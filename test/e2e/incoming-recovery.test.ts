import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { interceptCoreBanking } from '../../src/adapters/core-banking/intercept.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';
import { ConnectorError } from '../../src/domain/errors.js';
import { formatMinorUnits, toMinorUnits } from '../../src/domain/money.js';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { hubAnswer, hubHasNoSuchTransfer, startFakeSwitch, type FakeSwitch } from '../support/fake-switch.js';
import { ManualClock } from '../support/harness.js';
import { interceptOne } from '../support/intercept-one.js';
import { balances, customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';

type Body = Record<string, unknown>;
/** The demo institution's currency (demo-accounts.ts). */
const ZMW = 'ZMW';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function reserve(h: Harness, amount: string): Promise<{ transferId: string; payeeAccount: string }> {
  const payee = customerWith((c) => c.status === 'active');
  const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount });
  const quote = await h.call('POST', '/quoterequests', quoteBody);
  const body = transferRequest(quoteBody, quote.body as Body);
  expect((await h.call('POST', '/transfers', body)).status).toBe(200);
  return { transferId: String(body['transferId']), payeeAccount: payee.accountId };
}

describe('recovery', () => {
  it('an institution that fails on commit answers 503 and the work is finished once it recovers', async () => {
    let faulty: FaultyCoreBanking | undefined;
    const h = await startHarness({
      overrides: {
        wrapCoreBanking: (inner) => {
          faulty = new FaultyCoreBanking(inner, { operations: ['commit'], failures: 3, kind: 'unavailable' });
          return faulty;
        },
      },
    });
    cleanups.push(() => h.close());
    const before = await balances(h);
    const { transferId, payeeAccount } = await reserve(h, '100');
    const first = await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ statusCode: '2003' });
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'RESERVED' });
    // The switch's own retry also meets the outage.
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    // Not due yet: backoff after the second failure is 2 s.
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    h.clock.advance(2_001);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 1 });
    h.clock.advance(4_001);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(formatMinorUnits(toMinorUnits(before.of(payeeAccount).balance, ZMW) + 9900n, ZMW));
    expect(after.float.held).toBe('0');
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'COMMITTED' });
    // A late retry from the switch finds it done.
    expect(await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).toEqual({ status: 200, body: {} });
    expect(await balances(h)).toEqual(after);
  });

  it('a release that fails is retried by the worker and the reservation returns to the float once', async () => {
    const h = await startHarness({
      overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['release'], failures: 1, kind: 'timeout' }) },
    });
    cleanups.push(() => h.close());
    const before = await balances(h);
    const { transferId } = await reserve(h, '70');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).status).toBe(504);
    h.clock.advance(1_001);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await balances(h)).toEqual(before);
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).body).toMatchObject({ statusCode: '5104' });
  });

  it('a stop waits for a notification still being handled after the switch hung up: the credit lands before the database closes', async () => {
    const fakeSwitch = await startFakeSwitch();
    cleanups.push(() => fakeSwitch.close());
    const clock = new ManualClock();
    // The institution's credit blocks until the test releases it, after the switch connector
    // has hung up and the stop has begun.
    let entered!: () => void;
    const commitEntered = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release!: () => void;
    const commitReleased = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Never leave the commit (and with it the first process's stop) blocked if the test fails.
    cleanups.push(async () => {
      release();
    });
    const blockedCommit = (inner: CoreBanking): CoreBanking =>
      interceptCoreBanking(inner, async (operation, call) => {
        if (operation === 'commit') {
          entered();
          await commitReleased;
        }
        return call();
      });
    const first = await startHarness({ fakeSwitch, clock, overrides: { wrapCoreBanking: blockedCommit } });
    const before = await balances(first);
    const { transferId, payeeAccount } = await reserve(first, '100');
    const hangUp = new AbortController();
    const abandoned = request(`${first.incomingUrl}/transfers/${transferId}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(notification('COMPLETED')),
      signal: hangUp.signal,
    });
    await commitEntered;
    hangUp.abort();
    await expect(abandoned).rejects.toThrow();
    let stopped = false;
    const stopping = first.stop().then(() => {
      stopped = true;
    });
    // The stop cannot finish while the credit is still blocked.
    await sleep(100);
    expect(stopped).toBe(false);
    release();
    await stopping;

    const second = await startHarness({ fakeSwitch, clock, dataDir: first.dataDir });
    cleanups.push(async () => {
      await second.close();
      await first.close();
    });
    // Finished by the first process during its stop, with no recovery pass in between.
    expect((await second.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'COMMITTED' });
    const after = await balances(second);
    expect(after.of(payeeAccount).balance).toBe(formatMinorUnits(toMinorUnits(before.of(payeeAccount).balance, ZMW) + 9900n, ZMW));
    expect(after.float.held).toBe('0');
  });

  it('a commit still at the institution after its intent would be stale is held from the worker: one commit call, then the worker takes over once it failed', async () => {
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    let commits = 0;
    const h = await startHarness({
      // Intents untouched for 5 x 60 ms are the workers'; a slow call renews its hold every 100 ms.
      env: { RECOVERY_BASE_BACKOFF_MS: '60' },
      overrides: {
        wrapCoreBanking: interceptOne('commit', async (call, count) => {
          commits = count;
          if (count > 1) return call();
          await gate;
          throw new ConnectorError('InstitutionUnavailable', 'the first commit failed after a long wait');
        }),
      },
    });
    cleanups.push(() => h.close());
    const before = await balances(h);
    const { transferId, payeeAccount } = await reserve(h, '100');
    const answer = h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    while (commits === 0) await sleep(5);
    // Long past the staleness by the transfer's own clock; the hold is renewed by the clock of then.
    h.clock.advance(10_000);
    await sleep(350);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    expect(commits).toBe(1);
    letGo();
    expect(await answer).toEqual({ status: 503, body: { statusCode: '2003', message: 'Institution unavailable' } });
    // (A transfer being committed reads RESERVED from the outside.)
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'RESERVED' });
    // The failure's record ends the hold: the retry is due by its backoff (60 ms), not by the hold's end (300 ms after its last renewal).
    h.clock.advance(61);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(commits).toBe(2);
    const after = await balances(h);
    expect(after.of(payeeAccount).balance).toBe(formatMinorUnits(toMinorUnits(before.of(payeeAccount).balance, ZMW) + 9900n, ZMW));
    expect(after.float.held).toBe('0');
  });

  it('a pass a stop ends between two items gives the items left back: the next pass takes them at once', async () => {
    const stop = new AbortController();
    const h = await startHarness({
      overrides: {
        wrapCoreBanking: interceptOne('commit', async (call, count) => {
          // The notifications' own commits fail; the recovery pass's first one meets the stop.
          if (count <= 2) throw new ConnectorError('InstitutionUnavailable', 'down');
          if (count === 3) stop.abort();
          return call();
        }),
      },
    });
    cleanups.push(() => h.close());
    const first = await reserve(h, '100');
    const second = await reserve(h, '50');
    for (const { transferId } of [first, second]) expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    h.clock.advance(1_001);
    expect(await h.app.recovery.runOnce(stop.signal)).toEqual({ claimed: 2, finished: 1, failed: 0 });
    const leases = await h.app.database.reader<{ inbound_transfers: { transfer_id: string; state: string; lease_until: string | null } }>().selectFrom('inbound_transfers').select(['transfer_id', 'state', 'lease_until']).orderBy('transfer_id').execute();
    const left = leases.find((row) => row.state === 'COMMITTING');
    expect(left).toEqual({ transfer_id: left?.transfer_id, state: 'COMMITTING', lease_until: null });
    // No clock moved: the item left is due now, not after RECOVERY_LEASE_MS.
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    for (const { transferId } of [first, second]) expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'COMMITTED' });
  });

  it('a pass that outlasts its lease takes no further item: the rest wait for the next pass', async () => {
    const clock = new ManualClock();
    // Commits fail while `down`; once up, each takes 40 s of the 60 s lease.
    let down = true;
    const slowInstitution = (inner: CoreBanking): CoreBanking =>
      interceptCoreBanking(inner, async (operation, call) => {
        if (operation !== 'commit') return call();
        if (down) throw new ConnectorError('InstitutionUnavailable', 'down for the test');
        clock.advance(40_000);
        return call();
      });
    const h = await startHarness({ clock, env: { RECOVERY_LEASE_MS: '60000' }, overrides: { wrapCoreBanking: slowInstitution } });
    cleanups.push(() => h.close());
    const before = await balances(h);
    const transfers = [await reserve(h, '10'), await reserve(h, '20'), await reserve(h, '30')];
    for (const { transferId } of transfers) {
      expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    }
    down = false;
    clock.advance(1_001);
    // Started at 0 s and 40 s; at 80 s the lease (60 s) is over, so the third is left.
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 3, finished: 2, failed: 0 });
    const states = async (): Promise<unknown[]> =>
      Promise.all(transfers.map(async ({ transferId }) => ((await h.call('GET', `/transfers/${transferId}`)).body as Body)['transferState']));
    // Which one is left depends on the claim order (all went pending at the same instant).
    expect((await states()).sort()).toEqual(['COMMITTED', 'COMMITTED', 'RESERVED']);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect(await states()).toEqual(['COMMITTED', 'COMMITTED', 'COMMITTED']);
    const after = await balances(h);
    expect(after.float.held).toBe('0');
    expect(after.float.balance).toBe(formatMinorUnits(toMinorUnits(before.float.balance, ZMW) - (990n + 1980n + 2970n), ZMW));
  });

  it('after a restart between reservation and notification, the worker asks the switch and commits', async () => {
    const fakeSwitch = await startFakeSwitch();
    cleanups.push(() => fakeSwitch.close());
    const clock = new ManualClock();
    const first = await startHarness({ fakeSwitch, clock });
    const before = await balances(first);
    const { transferId, payeeAccount } = await reserve(first, '100');
    const completed = await reserve(first, '10');
    const aborted = await reserve(first, '20');
    await first.stop();

    const second = await startHarness({ fakeSwitch, clock, dataDir: first.dataDir });
    cleanups.push(async () => {
      await second.close();
      await first.close();
    });
    fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'COMMITTED'));
    fakeSwitch.setTransferStatus(completed.transferId, {
      status: 200,
      body: { transferId: completed.transferId, currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE', fulfil: { body: { transferState: 'COMMITTED' } } },
    });
    fakeSwitch.setTransferStatus(aborted.transferId, hubAnswer(aborted.transferId, 'ABORTED'));
    // Not stale yet: nothing is asked.
    expect(await second.app.recovery.runOnce()).toEqual({ claimed: 0, finished: 0, failed: 0 });
    clock.advance(120_001);
    expect(await second.app.recovery.runOnce()).toEqual({ claimed: 3, finished: 3, failed: 0 });
    const after = await balances(second);
    expect(after.of(payeeAccount).balance).toBe(formatMinorUnits(toMinorUnits(before.of(payeeAccount).balance, ZMW) + 9900n + 990n, ZMW));
    expect(after.float.held).toBe('0');
    expect((await second.call('GET', `/transfers/${aborted.transferId}`)).body).toMatchObject({ transferState: 'ABORTED' });
    expect(fakeSwitch.requests.filter((r) => r.method === 'GET')).toHaveLength(3);
  });

  it('never releases a reservation on a timer alone: unknown at the switch stays reserved', async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const { transferId } = await reserve(h, '15');
    h.fakeSwitch.setTransferStatus(transferId, { status: 200, body: { transferId, currentState: 'ERROR_OCCURRED' } });
    h.clock.advance(120_001);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 0 });
    h.clock.advance(86_400_000);
    await h.app.recovery.runOnce();
    expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'RESERVED' });
    expect((await balances(h)).float.held).toBe('14.85');
    // The switch connector says COMPLETED whenever the hub answered; the hub still has the
    // transfer RESERVED (or only RECEIVED): nothing is final, nobody is credited.
    for (const hubState of ['RESERVED', 'RECEIVED'] as const) {
      h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, hubState));
      h.clock.advance(86_400_000);
      expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 0, failed: 0 });
      expect((await h.call('GET', `/transfers/${transferId}`)).body).toMatchObject({ transferState: 'RESERVED' });
      expect((await balances(h)).float.held).toBe('14.85');
    }
    // The hub saying it has no such transfer (3208, which the switch connector answers as an HTTP
    // 500) is an explicit answer: released.
    h.fakeSwitch.setTransferStatus(transferId, hubHasNoSuchTransfer(transferId));
    h.clock.advance(600_000);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    expect((await balances(h)).float.held).toBe('0');
  });
});

describe('health', () => {
  it('answers 503 naming the failing checks when the database is gone', async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    expect((await h.call('GET', '/health')).status).toBe(200);
    await h.app.database.close();
    expect(await h.call('GET', '/health')).toEqual({
      status: 503,
      body: { statusCode: '2003', message: 'unhealthy: store failed, institution failed' },
    });
  });
});
