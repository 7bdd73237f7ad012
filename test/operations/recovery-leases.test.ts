import { describe, expect, it } from 'vitest';
import { auditMigrations } from '../../src/adapters/store/audit-trail.js';
import { FxStore, fxStoreMigrations } from '../../src/fxp/store/fx-store.js';
import { IdentifierStore, identifierMigrations } from '../../src/identifiers/identifier-store.js';
import { STORE_TARGETS, useStoreTarget } from '../support/store-targets.js';

/**
 * A recovery worker's lease on a conversion or an identifier is released by the worker that
 * holds it, and by no other. A slow worker whose lease ran out, and was claimed by another
 * worker since, releases nothing when it finishes: otherwise a third claim would take the row
 * while the second worker is still on it, and two workers would call the exchange or the
 * platform for the same row at once.
 */
describe.each(STORE_TARGETS)('recovery leases on %s', (_name, open) => {
  const database = useStoreTarget(open, [...fxStoreMigrations, ...identifierMigrations, ...auditMigrations], ['fx_conversions', 'identifier_registry', 'audit_events']);

  it("releases a conversion's lease only for the claim that holds it", async () => {
    let now = new Date('2026-11-25T10:00:00.000Z');
    const store = new FxStore(database(), () => now);
    await store.insertConversion({
      commitRequestId: 'conv-leased',
      requestHash: 'a'.repeat(64),
      sourceCurrency: 'ZMW',
      sourceAmount: '100',
      targetCurrency: 'MWK',
      targetAmount: '6500',
      expiration: '2026-11-25T11:00:00.000Z',
      nextAttemptAt: '2026-11-25T10:00:00.000Z',
    });
    // The first worker claims it for 1 s, and is slow.
    const [slow] = await store.claimDue(10, 1_000);
    expect([slow?.commitRequestId, slow?.leaseUntil]).toStrictEqual(['conv-leased', '2026-11-25T10:00:01.000Z']);
    // Two seconds on, a second worker claims it for a minute.
    now = new Date('2026-11-25T10:00:02.000Z');
    const [current] = await store.claimDue(10, 60_000);
    expect([current?.commitRequestId, current?.leaseUntil]).toStrictEqual(['conv-leased', '2026-11-25T10:01:02.000Z']);
    // The first worker finishes: the lease is no longer its own, and stays.
    await store.releaseLease(slow!);
    expect(await store.claimDue(10, 60_000)).toStrictEqual([]);
    // The second worker's release ends its lease: the conversion is due again.
    await store.releaseLease(current!);
    expect((await store.claimDue(10, 60_000)).map((claim) => claim.commitRequestId)).toStrictEqual(['conv-leased']);
  });

  it("releases an identifier's lease only for the claim that holds it, from a job's claim as from the recovery pass's", async () => {
    let now = new Date('2026-11-25T10:00:00.000Z');
    const store = new IdentifierStore(database(), () => now);
    const key = { idType: 'MSISDN', idValue: '260971000099' } as const;
    expect(await store.insert(key, 'ZMW', 'REQUESTED', { accountId: 'acc-1', jobId: 'job-1' })).toBe(true);
    const [slow] = await store.claimJob('job-1', 10, 1_000);
    expect([slow?.idValue, slow?.leaseUntil]).toStrictEqual(['260971000099', '2026-11-25T10:00:01.000Z']);
    now = new Date('2026-11-25T10:00:02.000Z');
    const [current] = await store.claimDue(10, 60_000);
    expect([current?.idValue, current?.leaseUntil]).toStrictEqual(['260971000099', '2026-11-25T10:01:02.000Z']);
    await store.releaseLease(slow!);
    expect(await store.claimDue(10, 60_000)).toStrictEqual([]);
    await store.releaseLease(current!);
    expect((await store.claimDue(10, 60_000)).map((claim) => claim.idValue)).toStrictEqual(['260971000099']);
  });

  it("claims a job's identifiers waiting for the platform, to register first, then to opt out, each in key order, none twice", async () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const store = new IdentifierStore(database(), () => now);
    const put = async (idValue: string, state: 'REQUESTED' | 'OPTING_OUT', jobId = 'job-1') =>
      expect(await store.insert({ idType: 'MSISDN', idValue }, 'ZMW', state, { accountId: `acc-${idValue}`, jobId })).toBe(true);
    // Stored out of key order; one in its retry's backoff; one of another job.
    for (const idValue of ['260971000005', '260971000003', '260971000004']) await put(idValue, 'REQUESTED');
    await put('260971000000', 'OPTING_OUT');
    await put('260971000001', 'REQUESTED');
    await put('260971000002', 'REQUESTED', 'job-2');
    await store.note({ idType: 'MSISDN', idValue: '260971000004' }, 'REQUESTED', { attempts: 1, nextAttemptAt: '2026-11-25T10:05:00.000Z' });
    const claim = async (limit: number) => (await store.claimJob('job-1', limit, 60_000)).map((claimed) => [claimed.idValue, claimed.state, claimed.leaseUntil]);
    const until = '2026-11-25T10:01:00.000Z';
    expect(await claim(2)).toStrictEqual([
      ['260971000001', 'REQUESTED', until],
      ['260971000003', 'REQUESTED', until],
    ]);
    // Those leased are left to their claim; the one in backoff waits.
    expect(await claim(10)).toStrictEqual([
      ['260971000005', 'REQUESTED', until],
      ['260971000000', 'OPTING_OUT', until],
    ]);
    expect(await claim(10)).toStrictEqual([]);
  });

  it("gives each of a job's identifiers to one of two claims made at once", async () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const store = new IdentifierStore(database(), () => now);
    const ids = ['260971000011', '260971000012', '260971000013', '260971000014'];
    for (const idValue of ids) expect(await store.insert({ idType: 'MSISDN', idValue }, 'ZMW', 'REQUESTED', { accountId: 'acc-1', jobId: 'job-3' })).toBe(true);
    const [first, second] = await Promise.all([store.claimJob('job-3', 2, 60_000), store.claimJob('job-3', 2, 60_000)]);
    const third = await store.claimJob('job-3', 10, 60_000);
    const all = [...(first ?? []), ...(second ?? []), ...third].map((claimed) => claimed.idValue);
    expect(all.sort()).toStrictEqual(ids);
  });

  it('claims the identifiers due the longest, whichever their state, in key order among equals; none in backoff, none twice', async () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const store = new IdentifierStore(database(), () => now);
    const put = async (idValue: string, state: 'REQUESTED' | 'OPTING_OUT' | 'REGISTERED', nextAttemptAt: string) =>
      expect(await store.insert({ idType: 'MSISDN', idValue }, 'ZMW', state, { accountId: `acc-${idValue}`, nextAttemptAt })).toBe(true);
    await put('260971000013', 'REQUESTED', '2026-11-25T09:59:00.000Z');
    await put('260971000012', 'REQUESTED', '2026-11-25T09:58:00.000Z');
    await put('260971000011', 'REQUESTED', '2026-11-25T10:00:00.000Z');
    await put('260971000014', 'REQUESTED', '2026-11-25T10:05:00.000Z');
    await put('260971000021', 'OPTING_OUT', '2026-11-25T09:59:00.000Z');
    await put('260971000022', 'OPTING_OUT', '2026-11-25T09:57:00.000Z');
    await put('260971000031', 'REGISTERED', '2026-11-25T09:00:00.000Z');
    const claim = async (limit: number) => (await store.claimDue(limit, 60_000)).map((claimed) => [claimed.idValue, claimed.state, claimed.leaseUntil]);
    const until = '2026-11-25T10:01:00.000Z';
    // The oldest four of both states, the tie at 09:59 in key order; the registered one is not due.
    expect(await claim(4)).toStrictEqual([
      ['260971000022', 'OPTING_OUT', until],
      ['260971000012', 'REQUESTED', until],
      ['260971000013', 'REQUESTED', until],
      ['260971000021', 'OPTING_OUT', until],
    ]);
    // Those leased are left to their claim; the one in backoff waits.
    expect(await claim(10)).toStrictEqual([['260971000011', 'REQUESTED', until]]);
    expect(await claim(10)).toStrictEqual([]);
  });

  it('gives each due identifier to one of three recovery claims made at once', async () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const store = new IdentifierStore(database(), () => now);
    const ids = Array.from({ length: 60 }, (_, index) => `2609710001${String(index).padStart(2, '0')}`);
    for (const [index, idValue] of ids.entries()) {
      expect(await store.insert({ idType: 'MSISDN', idValue }, 'ZMW', index % 3 === 0 ? 'OPTING_OUT' : 'REQUESTED', { accountId: 'acc-1' })).toBe(true);
    }
    const claims = await Promise.all([store.claimDue(25, 60_000), store.claimDue(25, 60_000), store.claimDue(25, 60_000)]);
    const last = await store.claimDue(100, 60_000);
    const all = [...claims.flat(), ...last].map((claimed) => claimed.idValue);
    expect(all.sort()).toStrictEqual(ids);
  });
});
