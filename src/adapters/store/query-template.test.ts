import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { withAuditCause } from '../../audit/audit-cause.js';
import { STORE_TARGETS, sqliteTarget, useStoreTarget } from '../../../test/support/store-targets.js';
import { AuditTrail, AuditedWriteTemplate, auditColumnsMigration, auditMigrations, auditedWrite } from './audit-trail.js';
import { TemplateFamily, queryTemplate, slotRow, type Slots } from './query-template.js';
import type { Migration } from './sql-database.js';

interface ThingsTable {
  id: string;
  state: string;
  amount: string;
  note: string | null;
  attempts: number;
  needs_attention: number;
}

interface Schema {
  things: ThingsTable;
}

type Db = Kysely<Schema>;

const thingsMigrations: readonly Migration[] = [
  {
    id: 'template-test-001-things',
    async up(db) {
      await db.schema
        .createTable('things')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('state', 'varchar(32)', (c) => c.notNull())
        .addColumn('amount', 'varchar(40)', (c) => c.notNull())
        .addColumn('note', 'varchar(100)')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('needs_attention', 'integer', (c) => c.notNull())
        .execute();
    },
  },
  auditColumnsMigration('template-test-002-audit-columns', 'things'),
];

const THING_COLUMNS: Readonly<Record<keyof ThingsTable, true>> = { id: true, state: true, amount: true, note: true, attempts: true, needs_attention: true };

function thing(id: string, changes: Partial<ThingsTable> = {}): ThingsTable {
  return { id, state: 'NEW', amount: '10.25', note: null, attempts: 0, needs_attention: 0, ...changes };
}

let builds = 0;

const INSERT_THING = queryTemplate('insert thing', (db: Db, p: Slots<ThingsTable>) => {
  builds += 1;
  return db
    .insertInto('things')
    .values(slotRow(p, THING_COLUMNS))
    .onConflict((oc) => oc.column('id').doNothing());
});

const FIND_THING = queryTemplate('find thing', (db: Db, p: Slots<{ id: string }>) => db.selectFrom('things').selectAll().where('id', '=', p.id));

const THINGS_IN = new TemplateFamily('things in', (count: number, name) =>
  queryTemplate(name, (db: Db, p: Slots<Record<`id${number}`, string>>) =>
    db
      .selectFrom('things')
      .select('id')
      .where(
        'id',
        'in',
        Array.from({ length: count }, (_, index) => p[`id${index}`] as string),
      )
      .orderBy('id'),
  ),
);

/** The same change as auditedWrite makes it, for comparing the two. */
const MOVE_THING = new AuditedWriteTemplate<Schema, { id: string; from: string; to: string }, ThingsTable>('move thing', {
  subject: 'incoming_transfer',
  table: 'things',
  event: 'transition',
  fromPrevious: false,
  flags: true,
  write: (db, p) =>
    db
      .updateTable('things')
      .set({ state: p.to, prev_state: sql<string>`state`, audit_seq: sql<number>`audit_seq + 1` } as never)
      .where('id', '=', p.id)
      .where('state', '=', p.from)
      .returningAll(),
  key: (p) => sql`changed.id = ${p.id}`,
  institutionReference: sql`changed.id`,
});

describe.each(STORE_TARGETS)('query templates on %s', (_name, open) => {
  const database = useStoreTarget(open, [...thingsMigrations, ...auditMigrations], ['things', 'audit_events']);

  it('runs with each call\'s values, built once per database however often it runs', async () => {
    const buildsBefore = builds;
    const inserted: number[] = [];
    for (const id of ['t-1', 't-2', 't-3']) {
      inserted.push(await database().autocommit<Schema, number>((db) => INSERT_THING.changed(db, thing(id, { amount: `${id.slice(2)}.50`, note: id === 't-2' ? 'second' : null }))));
    }
    inserted.push(await database().autocommit<Schema, number>((db) => INSERT_THING.changed(db, thing('t-1', { amount: '999.00' }))));
    expect(inserted).toStrictEqual([1, 1, 1, 0]);
    // The writer and the reader of one database are separate Kysely instances; each compiles once.
    expect(builds - buildsBefore).toBe(1);
    const reader = database().reader<Schema>();
    expect(await FIND_THING.first(reader, { id: 't-2' })).toStrictEqual({
      id: 't-2',
      state: 'NEW',
      amount: '2.50',
      note: 'second',
      attempts: 0,
      needs_attention: 0,
      audit_seq: 0,
      prev_state: null,
    });
    expect(await FIND_THING.first(reader, { id: 't-1' })).toMatchObject({ amount: '1.50', note: null });
    expect(await FIND_THING.first(reader, { id: 'absent' })).toBeUndefined();
    expect(await FIND_THING.rows(reader, { id: 't-3' })).toHaveLength(1);
  });

  it('writes the same SQL as the query built directly', async () => {
    const reader = database().reader<Schema>();
    const direct = reader.selectFrom('things').selectAll().where('id', '=', 'x').compile();
    expect(FIND_THING.sqlFor(reader)).toBe(direct.sql);
  });

  it('runs inside a transaction and is undone with it', async () => {
    const failure = new Error('undo this');
    await expect(
      database().transaction<Schema, void>(async (trx) => {
        expect(await INSERT_THING.changed(trx, thing('t-undone'))).toBe(1);
        expect(await FIND_THING.first(trx, { id: 't-undone' })).toMatchObject({ id: 't-undone' });
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await FIND_THING.first(database().reader<Schema>(), { id: 't-undone' })).toBeUndefined();
  });

  it('keeps one template per shape of a family', async () => {
    for (const id of ['a', 'b', 'c']) await database().autocommit<Schema, number>((db) => INSERT_THING.changed(db, thing(id)));
    const reader = database().reader<Schema>();
    const one = await THINGS_IN.get('1', 1).rows(reader, { id0: 'b' });
    const three = await THINGS_IN.get('3', 3).rows(reader, { id0: 'c', id1: 'a', id2: 'absent' });
    expect(one).toStrictEqual([{ id: 'b' }]);
    expect(three).toStrictEqual([{ id: 'a' }, { id: 'c' }]);
    expect(THINGS_IN.get('3', 3)).toBe(THINGS_IN.get('3', 3));
    expect(THINGS_IN.get('3', 3).sqlFor(reader)).toMatch(/in \((\?|\$1), (\?|\$2), (\?|\$3)\)/);
  });

  it('refuses a run that leaves a slot without a value', async () => {
    const reader = database().reader<Schema>();
    await expect(async () => FIND_THING.first(reader, {} as { id: string })).rejects.toThrow('query find thing: no value for id');
  });

  it('runs with the values of two objects as with their spread, the second winning, a null in it kept', async () => {
    // Typed whole here: the test gives each part on its own, which the types would refuse.
    const changed = (values: object, more: object): Promise<number> =>
      database().autocommit<Schema, number>(async (db) => Number((await INSERT_THING.executeWith(db, values as ThingsTable, more as ThingsTable)).numAffectedRows ?? 0n));
    expect(await changed(thing('w-1', { note: 'from the first' }), { amount: '7.77', note: null })).toBe(1);
    // A slot the second leaves undefined takes the first's value.
    expect(await changed({ id: 'w-2', state: 'NEW', amount: '1.00', note: 'kept' }, { attempts: 3, needs_attention: 0, note: undefined })).toBe(1);
    const reader = database().reader<Schema>();
    expect(await FIND_THING.rows(reader, { id: 'w-1' })).toStrictEqual([
      { id: 'w-1', state: 'NEW', amount: '7.77', note: null, attempts: 0, needs_attention: 0, audit_seq: 0, prev_state: null },
    ]);
    expect(await FIND_THING.first(reader, { id: 'w-2' })).toMatchObject({ amount: '1.00', note: 'kept', attempts: 3 });
    await expect(async () => changed({ id: 'w-3', state: 'NEW', amount: '1.00' }, { note: null, attempts: 0 })).rejects.toThrow(
      'query insert thing: no value for needs_attention',
    );
  });

  it('makes an audited change and its audit row as auditedWrite does, and nothing when the compare-and-set is lost', async () => {
    for (const id of ['m-1', 'm-2']) await database().autocommit<Schema, number>((db) => INSERT_THING.changed(db, thing(id, { needs_attention: 1 })));
    const at = '2026-11-26T01:00:00.000Z';
    const templated = await withAuditCause({ cause: 'operator', operator: 'ops-ana', reason: 'checked with the bank' }, () =>
      MOVE_THING.run(database(), { id: 'm-1', from: 'NEW', to: 'DONE' }, { subjectId: 'm-1', at, fromState: 'NEW', errorCode: 'E'.repeat(70) }),
    );
    const direct = await withAuditCause({ cause: 'operator', operator: 'ops-ana', reason: 'checked with the bank' }, () =>
      auditedWrite<ThingsTable>(database(), {
        subject: 'incoming_transfer',
        subjectId: 'm-2',
        table: 'things',
        key: sql`changed.id = ${'m-2'}`,
        write: database()
          .reader<Schema>()
          .updateTable('things')
          .set({ state: 'DONE', prev_state: sql<string>`state`, audit_seq: sql<number>`audit_seq + 1` } as never)
          .where('id', '=', 'm-2')
          .where('state', '=', 'NEW')
          .returningAll(),
        event: 'transition',
        fromState: 'NEW',
        at,
        errorCode: 'E'.repeat(70),
        institutionReference: sql`changed.id`,
        flags: true,
      }),
    );
    expect(templated).toMatchObject({ id: 'm-1', state: 'DONE', audit_seq: 1, prev_state: 'NEW' });
    expect(direct).toMatchObject({ id: 'm-2', state: 'DONE', audit_seq: 1, prev_state: 'NEW' });
    const lost = await MOVE_THING.run(database(), { id: 'm-1', from: 'NEW', to: 'AGAIN' }, { subjectId: 'm-1', at, fromState: 'NEW', errorCode: null });
    expect(lost).toBeUndefined();
    const trail = new AuditTrail(database());
    const [first] = await trail.history('incoming_transfer', 'm-1');
    const [second] = await trail.history('incoming_transfer', 'm-2');
    expect(await trail.history('incoming_transfer', 'm-1')).toHaveLength(1);
    expect(first).toStrictEqual({
      subject: 'incoming_transfer',
      subjectId: 'm-1',
      seq: 1,
      at,
      event: 'transition',
      fromState: 'NEW',
      toState: 'DONE',
      cause: 'operator',
      operator: 'ops-ana',
      reason: 'checked with the bank',
      evidence: null,
      attempt: 0,
      institutionReference: 'm-1',
      errorCode: 'E'.repeat(64),
      needsAttention: true,
    });
    expect({ ...second, subjectId: 'm-1', institutionReference: 'm-1' }).toStrictEqual(first);
  });
});

describe('query templates refuse what they cannot repeat', () => {
  it('refuses a query with a value written into it instead of a slot', async () => {
    const { database, cleanup } = await sqliteTarget();
    try {
      await database.migrate(thingsMigrations);
      const frozen = queryTemplate('frozen', (db: Db, p: Slots<{ id: string }>) => db.selectFrom('things').selectAll().where('id', '=', p.id).where('state', '=', 'NEW'));
      await expect(async () => frozen.first(database.reader<Schema>(), { id: 'x' })).rejects.toThrow('query frozen: parameter 2 is a value, not a slot');
    } finally {
      await database.close();
      await cleanup();
    }
  });

  it('refuses a slot named like a property every object inherits, which a missing value would take', async () => {
    const { database, cleanup } = await sqliteTarget();
    try {
      await database.migrate(thingsMigrations);
      for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf'] as const) {
        const inherited = queryTemplate(`by ${name}`, (db: Db, p: Slots<Record<typeof name, string>>) => db.selectFrom('things').selectAll().where('id', '=', p[name]));
        await expect(async () => inherited.first(database.reader<Schema>(), { [name]: 'x' } as Record<typeof name, string>)).rejects.toThrow(
          `query by ${name}: slot ${name} is named like a property every object has; name it otherwise`,
        );
      }
    } finally {
      await database.close();
      await cleanup();
    }
  });

  it('keeps at most maxShapes shapes of a family, and makes any other afresh each time', () => {
    let made = 0;
    const family = new TemplateFamily('few', (shape: number, name) => {
      made += 1;
      return { shape, name, serial: made };
    }, 2);
    expect(family.get('a', 1)).toStrictEqual({ shape: 1, name: 'few[a]', serial: 1 });
    expect(family.get('b', 2)).toStrictEqual({ shape: 2, name: 'few[b]', serial: 2 });
    expect(family.get('a', 99)).toStrictEqual({ shape: 1, name: 'few[a]', serial: 1 });
    expect(family.get('c', 3)).toStrictEqual({ shape: 3, name: 'few[c]', serial: 3 });
    expect(family.get('c', 3)).toStrictEqual({ shape: 3, name: 'few[c]', serial: 4 });
    expect(made).toBe(4);
  });
});
