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
});
