import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { STORE_TARGETS, useStoreTarget } from '../../../test/support/store-targets.js';
import { AuditTrail, auditColumnsMigration, auditMigrations } from './audit-trail.js';
import { AuditedTable } from './audited-table.js';
import type { Migration } from './sql-database.js';

interface ParcelsTable {
  parcel_id: string;
  state: string;
  weight: string;
  carrier_reference: string | null;
  attempts: number;
  next_attempt_at: string | null;
  needs_attention: number;
  lease_until: string | null;
  updated_at: string;
  audit_seq: number;
  prev_state: string | null;
}

const migrations: readonly Migration[] = [
  {
    id: 'audited-table-test-001-parcels',
    async up(db) {
      await db.schema
        .createTable('parcels')
        .addColumn('parcel_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('state', 'varchar(32)', (c) => c.notNull())
        .addColumn('weight', 'varchar(40)', (c) => c.notNull())
        .addColumn('carrier_reference', 'varchar(128)')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'varchar(30)')
        .addColumn('needs_attention', 'integer', (c) => c.notNull())
        .addColumn('lease_until', 'varchar(30)')
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
    },
  },
  auditColumnsMigration('audited-table-test-002-audit-columns', 'parcels'),
];

const PARCELS = new AuditedTable<ParcelsTable>({
  subject: 'outgoing_payment',
  table: 'parcels',
  key: 'parcel_id',
  columns: {
    parcel_id: true,
    state: true,
    weight: true,
    carrier_reference: true,
    attempts: true,
    next_attempt_at: true,
    needs_attention: true,
    lease_until: true,
    updated_at: true,
    audit_seq: true,
    prev_state: true,
  },
  conflict: 'key',
  institutionReference: sql`coalesce(changed.carrier_reference, changed.parcel_id)`,
});

const T0 = '2026-11-26T02:00:00.000Z';
const T1 = '2026-11-26T02:01:00.000Z';
const T2 = '2026-11-26T02:02:00.000Z';

function parcel(id: string, changes: Partial<ParcelsTable> = {}): ParcelsTable {
  return { parcel_id: id, state: 'NEW', weight: '2.500', carrier_reference: null, attempts: 0, next_attempt_at: null, needs_attention: 0, lease_until: null, updated_at: T0, audit_seq: 1, prev_state: null, ...changes };
}

describe.each(STORE_TARGETS)('AuditedTable on %s', (_name, open) => {
  const database = useStoreTarget(open, [...migrations, ...auditMigrations], ['parcels', 'audit_events']);

  it('inserts a row once, with its created row in the trail', async () => {
    expect(await PARCELS.insert(database(), parcel('p-1'), T0)).toStrictEqual(parcel('p-1'));
    expect(await PARCELS.insert(database(), parcel('p-1', { weight: '9.000' }), T1)).toBeUndefined();
    const trail = await new AuditTrail(database()).history('outgoing_payment', 'p-1');
    expect(trail).toStrictEqual([
      {
        subject: 'outgoing_payment',
        subjectId: 'p-1',
        seq: 1,
        at: T0,
        event: 'created',
        fromState: null,
        toState: 'NEW',
        cause: 'request',
        operator: null,
        reason: null,
        evidence: null,
        attempt: 0,
        institutionReference: 'p-1',
        errorCode: null,
        needsAttention: false,
      },
    ]);
  });

  it('moves a row from any of several states, the trail taking the state it left', async () => {
    await PARCELS.insert(database(), parcel('p-2', { state: 'SORTED' }), T0);
    const moved = await PARCELS.update(database(), {
      key: 'p-2',
      event: 'transition',
      from: ['NEW', 'SORTED'],
      set: { state: 'SHIPPED', carrier_reference: 'CR-77', updated_at: T1, lease_until: null },
      at: T1,
      errorCode: null,
    });
    expect(moved).toStrictEqual(parcel('p-2', { state: 'SHIPPED', carrier_reference: 'CR-77', updated_at: T1, audit_seq: 2, prev_state: 'SORTED' }));
    const lost = await PARCELS.update(database(), { key: 'p-2', event: 'transition', from: ['NEW', 'SORTED'], set: { state: 'LOST' }, at: T2, errorCode: null });
    expect(lost).toBeUndefined();
    const trail = await new AuditTrail(database()).history('outgoing_payment', 'p-2');
    expect(trail.map((event) => [event.seq, event.event, event.fromState, event.toState, event.institutionReference])).toStrictEqual([
      [1, 'created', null, 'SORTED', 'p-2'],
      [2, 'transition', 'SORTED', 'SHIPPED', 'CR-77'],
    ]);
  });

  it('records an attempt in its one state, and applies an operator guard only to a flagged row whose lease has run out', async () => {
    await PARCELS.insert(database(), parcel('p-3', { lease_until: T2 }), T0);
    const attempt = await PARCELS.update(database(), { key: 'p-3', event: 'attempt', from: ['NEW'], set: { attempts: 1, needs_attention: 1 }, at: T1, errorCode: 'E'.repeat(80) });
    expect(attempt).toStrictEqual(parcel('p-3', { lease_until: T2, attempts: 1, needs_attention: 1, audit_seq: 2 }));
    const guard = { event: 'transition', from: ['NEW'], set: { state: 'RETURNED' }, errorCode: null, flagged: true } as const;
    expect(await PARCELS.update(database(), { ...guard, key: 'p-3', at: T1, leaseFreeAt: T1 })).toBeUndefined();
    expect(await PARCELS.update(database(), { ...guard, key: 'p-3', at: T2, leaseFreeAt: T2 })).toMatchObject({ state: 'RETURNED', audit_seq: 3, prev_state: 'NEW' });
    await PARCELS.insert(database(), parcel('p-4'), T0);
    expect(await PARCELS.update(database(), { ...guard, key: 'p-4', at: T2, leaseFreeAt: T2 })).toBeUndefined();
    const trail = await new AuditTrail(database()).history('outgoing_payment', 'p-3');
    expect(trail.map((event) => [event.seq, event.event, event.fromState, event.toState, event.attempt, event.errorCode, event.needsAttention])).toStrictEqual([
      [1, 'created', null, 'NEW', 0, null, false],
      [2, 'attempt', 'NEW', 'NEW', 1, 'E'.repeat(64), true],
      [3, 'transition', 'NEW', 'RETURNED', 1, null, true],
    ]);
  });

  it('refuses an update from no state, and an attempt from more than one', async () => {
    await expect(PARCELS.update(database(), { key: 'p-5', event: 'transition', from: [], set: { state: 'X' }, at: T1, errorCode: null })).rejects.toThrow(
      'parcels: an update from no state',
    );
    await expect(PARCELS.update(database(), { key: 'p-5', event: 'attempt', from: ['NEW', 'SORTED'], set: { attempts: 1 }, at: T1, errorCode: null })).rejects.toThrow(
      'parcels: an attempt names one state',
    );
  });
});
