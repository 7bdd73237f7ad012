import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Migration } from './sql-database.js';
import { SqliteDatabase } from './sqlite-database.js';

interface ItemsSchema {
  items: { id: number; label: string };
}

const itemsMigration: Migration = {
  id: 'test-001-items',
  async up(db) {
    await db.schema
      .createTable('items')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('label', 'varchar(32)', (c) => c.notNull())
      .execute();
  },
};

describe('SqliteDatabase group commit', () => {
  let directory = '';
  let path = '';

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'cc-sqlite-'));
    path = join(directory, 'connector.db');
  });

  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it('gives its one process slot 0 of any space, refuses a space or count it cannot take, and nothing once closed', async () => {
    const database = new SqliteDatabase(path);
    expect(await database.claimSlot(0x6c616e65, 4)).toBe(0);
    expect(await database.claimSlot(-1, 1)).toBe(0);
    await expect(database.claimSlot(2 ** 31, 4)).rejects.toThrow('slot key space 2147483648 is not a 32-bit integer');
    await expect(database.claimSlot(1, 0)).rejects.toThrow('slot count 0 is not between 1 and 1024');
    await database.close();
    await expect(database.claimSlot(1, 4)).rejects.toThrow('database is closed');
  });

  it('commits 200 parallel transactions together, isolating the one that throws', async () => {
    const failing = 137;
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    const started: number[] = [];
    /** How many units had started when each one settled: all of them, if they were one group. */
    const startedWhenSettled: number[] = [];
    const units = Array.from({ length: 200 }, (_, index) =>
      database
        .transaction<ItemsSchema, number>(async (trx) => {
          started.push(index);
          await trx.insertInto('items').values({ id: index, label: `item-${index}` }).execute();
          if (index === failing) throw new Error(`unit ${index} fails after its insert`);
          return index;
        })
        .finally(() => startedWhenSettled.push(started.length)),
    );
    const outcomes = await Promise.allSettled(units);
    await database.close();

    expect(startedWhenSettled).toStrictEqual(Array.from({ length: 200 }, () => 200));
    outcomes.forEach((outcome, index) => {
      if (index === failing) expect(outcome).toStrictEqual({ status: 'rejected', reason: new Error(`unit ${index} fails after its insert`) });
      else expect(outcome).toStrictEqual({ status: 'fulfilled', value: index });
    });

    const reopened = new SqliteDatabase(path);
    try {
      const rows = await reopened.reader<ItemsSchema>().selectFrom('items').selectAll().orderBy('id').execute();
      const expected = Array.from({ length: 200 }, (_, id) => ({ id, label: `item-${id}` })).filter((row) => row.id !== failing);
      expect(rows).toStrictEqual(expected);
    } finally {
      await reopened.close();
    }
  });

  it('commits what arrives during a group in the next group', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    /** What ran and what settled, in order: the second must not run inside the first's group. */
    const events: string[] = [];
    const later: Promise<void>[] = [];
    await database
      .transaction<ItemsSchema, void>(async (trx) => {
        events.push('first runs');
        await trx.insertInto('items').values({ id: 1, label: 'first' }).execute();
        // Queued, not awaited, while the first group is being written.
        later.push(
          database
            .transaction<ItemsSchema, void>(async (inner) => {
              events.push('second runs');
              await inner.insertInto('items').values({ id: 2, label: 'second' }).execute();
            })
            .then(() => {
              events.push('second committed');
            }),
        );
      })
      .then(() => {
        events.push('first committed');
      });
    await Promise.all(later);
    // Had the second joined the first's group, it would have run before the first committed.
    expect(events).toStrictEqual(['first runs', 'first committed', 'second runs', 'second committed']);
    await database.close();

    const reopened = new SqliteDatabase(path);
    try {
      expect(await reopened.reader<ItemsSchema>().selectFrom('items').selectAll().orderBy('id').execute()).toStrictEqual([
        { id: 1, label: 'first' },
        { id: 2, label: 'second' },
      ]);
    } finally {
      await reopened.close();
    }
  });

  it('refuses a transaction after close', async () => {
    const database = new SqliteDatabase(path);
    await database.close();
    await expect(database.transaction(async () => 'never')).rejects.toThrow('database is closed');
  });
});
