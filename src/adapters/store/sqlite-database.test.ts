import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FileSync } from './durability-gate.js';
import { queryTemplate } from './query-template.js';
import type { Migration } from './sql-database.js';
import { PAGE_CACHE_KIB, SqliteDatabase } from './sqlite-database.js';
import { openDescriptors } from '../../../test/support/open-files.js';

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

/**
 * A log sync the test holds: while `held`, each sync waits for `release` or `fail`; otherwise it
 * is done at once. `paths` records which file each was asked for.
 */
function heldLog(): { logSync: (path: string) => FileSync; paths: string[]; syncs: number; held: boolean; release(): void; fail(error: Error): void } {
  const waiting: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const log = {
    paths: [] as string[],
    syncs: 0,
    held: false,
    logSync: (path: string): FileSync => {
      log.paths.push(path);
      return {
        sync: () => {
          log.syncs += 1;
          return log.held ? new Promise<void>((resolve, reject) => waiting.push({ resolve, reject })) : Promise.resolve();
        },
        close: () => Promise.resolve(),
      };
    },
    release() {
      log.held = false;
      for (const next of waiting.splice(0)) next.resolve();
    },
    fail(error: Error) {
      for (const next of waiting.splice(0)) next.reject(error);
    },
  };
  return log;
}

/** better-sqlite3's path, for a child process that holds a file's write lock. */
const BETTER_SQLITE3 = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Another process holding the file's write lock (BEGIN IMMEDIATE), as an operator's sqlite3 shell
 * in the middle of a change would, after running `writes` inside it. It lets go when told (a line
 * on its stdin), or by itself `releaseAfterMs` after taking it: a group waiting on the lock blocks
 * this process's event loop (busy_timeout), so only the holder's own clock can end that wait.
 */
async function holdWriteLock(path: string, options: { writes?: string[]; releaseAfterMs?: number } = {}): Promise<{ release(): void; exited: Promise<void> }> {
  const script = `
    const Database = require(${JSON.stringify(BETTER_SQLITE3)});
    const db = new Database(${JSON.stringify(path)});
    db.exec('begin immediate');
    for (const text of ${JSON.stringify(options.writes ?? [])}) db.exec(text);
    const release = () => { db.exec('commit'); db.close(); process.exit(0); };
    process.stdout.write('held\\n');
    process.stdin.once('data', release);
    ${options.releaseAfterMs === undefined ? '' : `setTimeout(release, ${options.releaseAfterMs});`}
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding the lock`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('held')) resolve();
    });
  });
  return {
    release: () => {
      if (child.exitCode === null) child.stdin?.write('release\n');
    },
    exited,
  };
}

/** Lets the event loop turn a few times, long enough for a group to be committed. */
async function turns(count = 5): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

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
    const before = database.work().commits;
    /** What ran and what settled, in order, with the groups committed when each ran. */
    const events: string[] = [];
    const later: Promise<void>[] = [];
    await database
      .transaction<ItemsSchema, void>(async (trx) => {
        events.push(`first runs after ${database.work().commits - before} commits`);
        await trx.insertInto('items').values({ id: 1, label: 'first' }).execute();
        // Queued, not awaited, while the first group is being written.
        later.push(
          database
            .transaction<ItemsSchema, void>(async (inner) => {
              events.push(`second runs after ${database.work().commits - before} commits`);
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
    // Had the second joined the first's group, it would have run before that group's commit.
    // It may run while the first's log is synced: the first is answered once the sync is done.
    expect(events).toStrictEqual(['first runs after 0 commits', 'second runs after 1 commits', 'first committed', 'second committed']);
    expect(database.work().commits - before).toBe(2);
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

  it('answers neither a transaction nor a read of its row before the log is synced', async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    expect(log.paths).toStrictEqual([`${path}-wal`]);
    const syncsBefore = log.syncs;
    const commitsBefore = database.work().commits;
    log.held = true;
    const events: string[] = [];
    const written = database
      .transaction<ItemsSchema, void>(async (trx) => {
        await trx.insertInto('items').values({ id: 7, label: 'seven' }).execute();
      })
      .then(() => events.push('transaction answered'));
    await turns();
    expect(database.work().commits).toBe(commitsBefore + 1);
    // Committed in SQLite, so the reader connection sees the row, but it is not on disk yet.
    const read = database
      .reader<ItemsSchema>()
      .selectFrom('items')
      .selectAll()
      .execute()
      .then((rows) => {
        events.push('read answered');
        return rows;
      });
    await turns();
    expect(events).toStrictEqual([]);
    expect(log.syncs).toBe(syncsBefore + 1);
    log.release();
    expect(await read).toStrictEqual([{ id: 7, label: 'seven' }]);
    await written;
    expect(events.sort()).toStrictEqual(['read answered', 'transaction answered']);
    // Nothing left to sync: a read goes straight through.
    expect(await database.reader<ItemsSchema>().selectFrom('items').select('label').execute()).toStrictEqual([{ label: 'seven' }]);
    expect(log.syncs).toBe(syncsBefore + 1);
    await database.close();
  });

  it('refuses the group whose log could not be synced, and all work after it', async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    log.held = true;
    const written = database.transaction<ItemsSchema, string>(async (trx) => {
      await trx.insertInto('items').values({ id: 8, label: 'eight' }).execute();
      return 'done';
    });
    await turns();
    log.fail(new Error('EIO: i/o error, fsync'));
    const message = "the database's log could not be written to disk; restart the connector: EIO: i/o error, fsync";
    await expect(written).rejects.toThrow(message);
    await expect(database.transaction(async () => 'never')).rejects.toThrow(message);
    await expect(database.health()).rejects.toThrow(message);
    await expect(database.reader<ItemsSchema>().selectFrom('items').selectAll().execute()).rejects.toThrow(message);
    await database.close();
  });

  it('returns no row from the reader between its commit and the count of that commit, by template or through Kysely', async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    const find = queryTemplate<ItemsSchema, { id: number }, ItemsSchema['items']>('find item', (db, p) => db.selectFrom('items').selectAll().where('id', '=', p.id));
    const reader = database.reader<ItemsSchema>();
    log.held = true;
    // Reads that poll for the row at every step of the event loop's microtasks while the group
    // commits: SQLite shows the row to the reader as soon as it has made the commit, some steps
    // before the group learns that its commit is done.
    const seen: string[] = [];
    const poll = async (how: 'template' | 'kysely'): Promise<void> => {
      for (let step = 0; step < 60; step += 1) {
        const rows = how === 'template' ? await find.rows(reader, { id: 31 }) : await reader.selectFrom('items').selectAll().where('id', '=', 31).execute();
        if (rows.length > 0) {
          seen.push(`${how} read the row with ${log.held ? 'its sync not done' : 'its sync done'}`);
          return;
        }
      }
    };
    let polls: Promise<unknown> = Promise.resolve();
    const commitsBefore = database.work().commits;
    const written = database.transaction<ItemsSchema, void>(async (trx) => {
      await trx.insertInto('items').values({ id: 31, label: 'polled' }).execute();
      // Not awaited: they run on while the group is released and committed.
      polls = Promise.all([poll('template'), poll('kysely')]);
    });
    await turns();
    expect(database.work().commits).toBe(commitsBefore + 1);
    expect(seen).toStrictEqual([]);
    log.release();
    await written;
    await polls;
    expect(seen.sort()).toStrictEqual(['kysely read the row with its sync done', 'template read the row with its sync done']);
    await database.close();
  });

  it('rolls back work queued before a failed sync instead of committing it', async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    log.held = true;
    const first = database.transaction<ItemsSchema, void>(async (trx) => {
      await trx.insertInto('items').values({ id: 41, label: 'synced in vain' }).execute();
    });
    await turns();
    // Accepted while the gate had not failed, and queued behind the sync that will fail.
    let ran = false;
    const queued = database.transaction<ItemsSchema, void>(async (trx) => {
      ran = true;
      await trx.insertInto('items').values({ id: 42, label: 'never committed' }).execute();
    });
    log.fail(new Error('EIO: i/o error, fsync'));
    const message = "the database's log could not be written to disk; restart the connector: EIO: i/o error, fsync";
    await expect(first).rejects.toThrow(message);
    await expect(queued).rejects.toThrow(message);
    expect(ran).toBe(true);
    await database.close();
    // After the restart the failure asks for: the refused transaction left nothing.
    const reopened = new SqliteDatabase(path);
    try {
      expect(await reopened.reader<ItemsSchema>().selectFrom('items').select('id').where('id', '=', 42).execute()).toStrictEqual([]);
    } finally {
      await reopened.close();
    }
  });

  it('makes rows with the columns a migration left, on both connections, for statements prepared before it', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([
      itemsMigration,
      {
        id: 'test-002-item-notes',
        async up(db) {
          await db.schema.alterTable('items').addColumn('note', 'varchar(32)').execute();
          await db.schema.alterTable('items').addColumn('colour', 'varchar(16)').execute();
          await db.insertInto('items').values({ id: 51, label: 'fifty-one', note: 'n', colour: 'red' }).execute();
        },
      },
    ]);
    const readAll = <S>(db: Kysely<S>): Promise<unknown[]> => (db as unknown as Kysely<{ items: Record<string, unknown> }>).selectFrom('items').selectAll().execute();
    expect(await readAll(database.reader())).toStrictEqual([{ id: 51, label: 'fifty-one', note: 'n', colour: 'red' }]);
    expect(await database.transaction(readAll)).toStrictEqual([{ id: 51, label: 'fifty-one', note: 'n', colour: 'red' }]);
    // A column renamed: rows as long as before, under another name.
    await database.migrate([
      {
        id: 'test-003-item-shade',
        async up(db) {
          await db.schema.alterTable('items').renameColumn('colour', 'shade').execute();
        },
      },
    ]);
    expect(await readAll(database.reader())).toStrictEqual([{ id: 51, label: 'fifty-one', note: 'n', shade: 'red' }]);
    expect(await database.transaction(readAll)).toStrictEqual([{ id: 51, label: 'fifty-one', note: 'n', shade: 'red' }]);
    // A column dropped by a schema change the migrations did not make (another connection's):
    // shorter rows tell a kept statement that SQLite prepared it again.
    const other = new BetterSqlite3(path);
    other.exec('alter table items drop column note');
    other.close();
    expect(await readAll(database.reader())).toStrictEqual([{ id: 51, label: 'fifty-one', shade: 'red' }]);
    expect(await database.transaction(readAll)).toStrictEqual([{ id: 51, label: 'fifty-one', shade: 'red' }]);
    await database.close();
  });

  it("runs templates without Kysely's executor, answering as Kysely does, only inside an open group, and reads only once synced", async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    const insert = queryTemplate<ItemsSchema, { id: number; label: string }, never>('insert item', (db, p) =>
      db.insertInto('items').values({ id: p.id, label: p.label }).onConflict((oc) => oc.doNothing()),
    );
    const strictInsert = queryTemplate<ItemsSchema, { id: number; label: string }, never>('insert item, no conflict allowed', (db, p) =>
      db.insertInto('items').values({ id: p.id, label: p.label }),
    );
    const relabel = queryTemplate<ItemsSchema, { id: number; label: string }, ItemsSchema['items']>('relabel item', (db, p) =>
      db.updateTable('items').set({ label: p.label }).where('id', '=', p.id).returningAll(),
    );
    const find = queryTemplate<ItemsSchema, { id: number }, ItemsSchema['items']>('find item', (db, p) => db.selectFrom('items').selectAll().where('id', '=', p.id));
    // The same statement through Kysely's executor and driver.
    const viaKysely = (db: Kysely<ItemsSchema>, text: string, parameters: unknown[]): Promise<unknown> => db.executeQuery(CompiledQuery.raw(text, parameters));

    let leaked: Kysely<ItemsSchema> | undefined;
    const answers = await database.transaction<ItemsSchema, unknown[]>(async (trx) => {
      leaked = trx;
      const executeQuery = vi.spyOn(trx.getExecutor(), 'executeQuery');
      const direct = [
        await insert.execute(trx, { id: 21, label: 'a' }),
        await insert.execute(trx, { id: 21, label: 'b' }),
        await relabel.execute(trx, { id: 21, label: 'c' }),
        await find.execute(trx, { id: 21 }),
      ];
      expect(executeQuery).not.toHaveBeenCalled();
      const kysely = [
        await viaKysely(trx, insert.sqlFor(trx), [22, 'a']),
        await viaKysely(trx, insert.sqlFor(trx), [22, 'b']),
        await viaKysely(trx, relabel.sqlFor(trx), ['c', 22]),
        await viaKysely(trx, find.sqlFor(trx), [22]),
      ];
      expect(executeQuery).toHaveBeenCalledTimes(4);
      return [direct, kysely];
    });
    expect(answers).toStrictEqual([
      [
        { numAffectedRows: 1n, insertId: 21n, rows: [] },
        { numAffectedRows: 0n, insertId: 21n, rows: [] },
        { rows: [{ id: 21, label: 'c' }] },
        { rows: [{ id: 21, label: 'c' }] },
      ],
      [
        { numAffectedRows: 1n, insertId: 22n, rows: [] },
        { numAffectedRows: 0n, insertId: 22n, rows: [] },
        { rows: [{ id: 22, label: 'c' }] },
        { rows: [{ id: 22, label: 'c' }] },
      ],
    ]);

    // A statement that fails undoes its unit only; the group's other unit is committed.
    const failing = database.transaction<ItemsSchema, void>(async (trx) => {
      await insert.execute(trx, { id: 23, label: 'undone' });
      await strictInsert.execute(trx, { id: 21, label: 'duplicate' });
    });
    const kept = database.transaction<ItemsSchema, void>(async (trx) => {
      await insert.execute(trx, { id: 24, label: 'kept' });
    });
    await expect(failing).rejects.toThrow('UNIQUE constraint failed: items.id');
    await kept;

    // The group has ended: its transaction refuses a template instead of writing outside it.
    if (leaked === undefined) throw new Error('the transaction ran no work');
    await expect(insert.execute(leaked, { id: 25, label: 'late' })).rejects.toThrow('Transaction has already ended');

    // A read on the reader goes without Kysely's executor, and still waits for the log's sync.
    const reader = database.reader<ItemsSchema>();
    const readerQueries = vi.spyOn(reader.getExecutor(), 'executeQuery');
    log.held = true;
    const written = database.transaction<ItemsSchema, void>(async (trx) => {
      await insert.execute(trx, { id: 26, label: 'held' });
    });
    await turns();
    let readAnswered = false;
    const read = find.rows(reader, { id: 26 }).then((rows) => {
      readAnswered = true;
      return rows;
    });
    await turns();
    expect(readAnswered).toBe(false);
    log.release();
    expect(await read).toStrictEqual([{ id: 26, label: 'held' }]);
    await written;
    expect(await Promise.all([21, 22, 23, 24, 25].map((id) => find.first(reader, { id })))).toStrictEqual([
      { id: 21, label: 'c' },
      { id: 22, label: 'c' },
      undefined,
      { id: 24, label: 'kept' },
      undefined,
    ]);
    expect(readerQueries).not.toHaveBeenCalled();
    await database.close();
  });

  it("gives the writer and the reader SQLite's own 2,000 KiB page cache, not better-sqlite3's 16,000", async () => {
    const database = new SqliteDatabase(path);
    const cacheSize = sql<{ cache_size: number }>`pragma cache_size`;
    expect(PAGE_CACHE_KIB).toBe(2000);
    expect((await cacheSize.execute(database.reader())).rows).toEqual([{ cache_size: -2000 }]);
    expect(await database.transaction(async (trx) => (await cacheSize.execute(trx)).rows)).toEqual([{ cache_size: -2000 }]);
    await database.close();
  });

  it('answers a unit that fills the disk with SQLITE_FULL, and commits its group mates, which SQLite undid with it, in the next group', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    // The file may not grow by one page more: a row that needs a page of its own is SQLITE_FULL,
    // and SQLite then rolls the whole transaction back itself, savepoints and all.
    await database.transaction(async (trx) => {
      await sql`pragma max_page_count = 1`.execute(trx);
    });
    const insert = (id: number, label: string): Promise<number> =>
      database.transaction<ItemsSchema, number>(async (trx) => {
        await trx.insertInto('items').values({ id, label }).execute();
        return id;
      });
    const runs: number[] = [];
    // One turn: one group, the large row between two that fit in the table's page.
    const answers = await Promise.allSettled([
      insert(1, 'small'),
      database.transaction<ItemsSchema, number>(async (trx) => {
        runs.push(2);
        await trx.insertInto('items').values({ id: 2, label: 'x'.repeat(20_000) }).execute();
        return 2;
      }),
      insert(3, 'also small'),
    ]);
    expect(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : (answer.reason as { code: string }).code))).toStrictEqual([1, 'SQLITE_FULL', 3]);
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'database or disk is full' });
    expect(runs).toStrictEqual([2]);
    expect(await database.reader<ItemsSchema>().selectFrom('items').select(['id', 'label']).orderBy('id').execute()).toStrictEqual([
      { id: 1, label: 'small' },
      { id: 3, label: 'also small' },
    ]);
    await database.close();
  });

  it('waits for another process\'s write lock once per group, at its start, even for work that reads first', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    // The holder writes a row of its own under the lock and lets go 1 s later, well within
    // busy_timeout (5 s): the group, begun meanwhile, must wait for it and then see that row.
    const holder = await holdWriteLock(path, { writes: [`insert into items (id, label) values (1, 'the other process')`], releaseAfterMs: 1_000 });
    try {
      // Reads, then writes: a deferred BEGIN would be refused at once when it came to write.
      const moved = await database.transaction<ItemsSchema, number>(async (trx) => {
        const before = await trx.selectFrom('items').select('id').execute();
        await trx.insertInto('items').values({ id: before.length + 1, label: 'after the lock' }).execute();
        return before.length + 1;
      });
      expect(moved).toBe(2);
    } finally {
      holder.release();
    }
    await holder.exited;
    expect(await database.reader<ItemsSchema>().selectFrom('items').select(['id', 'label']).orderBy('id').execute()).toStrictEqual([
      { id: 1, label: 'the other process' },
      { id: 2, label: 'after the lock' },
    ]);
    await database.close();
  });

  it('fails a whole group that cannot have the write lock within busy_timeout, and commits the next once it is free', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    const holder = await holdWriteLock(path);
    const insert = (id: number): Promise<string> =>
      database.transaction<ItemsSchema, void>(async (trx) => void (await trx.insertInto('items').values({ id, label: 'waited' }).execute())).then(
        () => 'committed',
        (error: { code?: string }) => String(error.code),
      );
    const read = (): Promise<string> =>
      database.transaction<ItemsSchema, unknown>(async (trx) => trx.selectFrom('items').select('id').execute()).then(
        (rows) => JSON.stringify(rows),
        (error: { code?: string }) => String(error.code),
      );
    try {
      // The holder keeps the lock until the three have their answer. The group fails whole, at its
      // BEGIN IMMEDIATE: the unit that only reads too (a deferred BEGIN would have let it read).
      expect(await Promise.all([insert(1), read(), insert(3)])).toStrictEqual(['SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY']);
    } finally {
      holder.release();
    }
    await holder.exited;
    expect(await insert(4)).toBe('committed');
    expect(await database.reader<ItemsSchema>().selectFrom('items').select('id').execute()).toStrictEqual([{ id: 4 }]);
    await database.close();
  }, 20_000);

  it('says it is unhealthy after the storage refused a write, until a later transaction commits', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    await database.transaction(async (trx) => {
      await sql`pragma max_page_count = 1`.execute(trx);
    });
    await expect(database.health()).resolves.toBeUndefined();
    const large = database.transaction<ItemsSchema, void>(async (trx) => {
      await trx.insertInto('items').values({ id: 2, label: 'x'.repeat(20_000) }).execute();
    });
    await expect(large).rejects.toMatchObject({ code: 'SQLITE_FULL' });
    // Health's own transaction writes nothing and would pass: the refusal is what it reports.
    await expect(database.health()).rejects.toThrow('the storage refused the last write (database or disk is full); no write has succeeded since');
    await expect(database.health()).rejects.toThrow('the storage refused the last write (database or disk is full); no write has succeeded since');
    // Space again (here: the limit lifted), and a write that commits.
    await database.transaction<ItemsSchema, void>(async (trx) => {
      await sql`pragma max_page_count = 1000000`.execute(trx);
      await trx.insertInto('items').values({ id: 2, label: 'x'.repeat(20_000) }).execute();
    });
    await expect(database.health()).resolves.toBeUndefined();
    await database.close();
  });

  it('says it is unhealthy once its files are removed, and reports no commit as done from the next check on', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    const insert = (id: number): Promise<string> =>
      database.transaction<ItemsSchema, void>(async (trx) => void (await trx.insertInto('items').values({ id, label: 'kept?' }).execute())).then(
        () => 'reported done',
        (error: Error) => error.message,
      );
    expect(await insert(1)).toBe('reported done');
    await expect(database.health()).resolves.toBeUndefined();
    // The data directory removed under the running connector: SQLite writes on into the unlinked
    // files, and their fsync succeeds; all of it would vanish when the process closes them.
    rmSync(directory, { recursive: true, force: true });
    await expect(database.health()).rejects.toThrow(`the SQLite file ${path} was removed while the connector ran: nothing written since is kept; restore the data and restart`);
    // Syncs check the files at most once a second.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const removed = `the SQLite file ${path} was removed while the connector ran: nothing written since is kept; restore the data and restart`;
    // The check fails the durability gate, as a failed fsync does: every commit from then on.
    expect(await insert(2)).toBe(`the database's log could not be written to disk; restart the connector: ${removed}`);
    expect(await insert(3)).toBe(`the database's log could not be written to disk; restart the connector: ${removed}`);
    await database.close();
  });

  it('says it is unhealthy once its file is replaced by another at the same path', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    await expect(database.health()).resolves.toBeUndefined();
    rmSync(path);
    const other = new BetterSqlite3(path);
    other.close();
    await expect(database.health()).rejects.toThrow(`the SQLite file ${path} was replaced while the connector ran: nothing written since is kept; restore the data and restart`);
    await database.close();
  });

  it('refuses a transaction after close', async () => {
    const database = new SqliteDatabase(path);
    await database.close();
    await expect(database.transaction(async () => 'never')).rejects.toThrow('database is closed');
    await expect(database.snapshot(async () => 'never')).rejects.toThrow('database is closed');
  });

  it('reads a snapshot as the file was at its first read, across commits and turns of the event loop, on a connection of its own', async () => {
    const database = new SqliteDatabase(path);
    await database.migrate([itemsMigration]);
    const write = (id: number, label: string) =>
      database.transaction<ItemsSchema, void>(async (trx) => {
        await trx.insertInto('items').values({ id, label }).onConflict((c) => c.column('id').doUpdateSet({ label })).execute();
      });
    await write(1, 'first');
    const statementsBefore = database.work().statements;
    const seen = await database.snapshot<ItemsSchema, unknown[]>(async (db) => {
      const labels = async () => (await db.selectFrom('items').select('label').orderBy('id').execute()).map((row) => row.label);
      const atStart = await labels();
      // Committed (and synced) while the snapshot is open: the writer is not held by it, the
      // reader sees the change, the snapshot does not.
      await write(2, 'second');
      await write(1, 'changed');
      await turns();
      const reader = (await database.reader<ItemsSchema>().selectFrom('items').select('label').orderBy('id').execute()).map((row) => row.label);
      return [atStart, await labels(), reader];
    });
    expect(seen).toStrictEqual([['first'], ['first'], ['changed', 'second']]);
    // Its statements are counted with the rest: its BEGIN, two reads and COMMIT, the reader's
    // read, and each write's BEGIN IMMEDIATE, savepoint, insert, release and COMMIT.
    expect(database.work().statements - statementsBefore).toBe(4 + 1 + 2 * 5);
    // Its connection is closed after it: twenty more leave the process holding no more of the
    // file's descriptors than after the first (SQLite keeps a closed connection's descriptor for
    // the next while others hold locks on the file), and the next one sees the file as it is now.
    const opened = openDescriptors(path);
    for (let snapshot = 0; snapshot < 20; snapshot += 1) await database.snapshot<ItemsSchema, unknown>((db) => db.selectFrom('items').selectAll().execute());
    expect(openDescriptors(path)).toBe(opened);
    expect(await database.snapshot<ItemsSchema, string[]>(async (db) => (await db.selectFrom('items').select('label').orderBy('id').execute()).map((row) => row.label))).toStrictEqual(['changed', 'second']);
    await database.close();
  });

  it('returns no row from a snapshot before every commit it could show is on disk, and ends its read transaction on an error', async () => {
    const log = heldLog();
    const database = new SqliteDatabase(path, { logSync: log.logSync });
    await database.migrate([itemsMigration]);
    log.held = true;
    const written = database.transaction<ItemsSchema, void>(async (trx) => {
      await trx.insertInto('items').values({ id: 3, label: 'three' }).execute();
    });
    await turns();
    let answered = false;
    const read = database
      .snapshot<ItemsSchema, unknown[]>((db) => db.selectFrom('items').selectAll().execute())
      .then((rows) => {
        answered = true;
        return rows;
      });
    await turns();
    expect(answered).toBe(false);
    log.release();
    expect(await read).toStrictEqual([{ id: 3, label: 'three' }]);
    await written;
    await expect(
      database.snapshot<ItemsSchema, never>(async (db) => {
        await db.selectFrom('items').selectAll().execute();
        throw new Error('stopped by its reader');
      }),
    ).rejects.toThrow('stopped by its reader');
    // Closed under a snapshot, the database says so, and the snapshot's connection is gone.
    const reading = database.snapshot<ItemsSchema, unknown>(async (db) => {
      await db.selectFrom('items').selectAll().execute();
      await turns();
      return db.selectFrom('items').selectAll().execute();
    });
    await turns(1);
    const closing = database.close();
    await expect(reading).rejects.toThrow('database is closed');
    await closing;
    expect(openDescriptors(path)).toBe(0);
    // No read transaction left open on the file: a checkpoint can take the whole log.
    const checkpoint = new BetterSqlite3(path);
    try {
      expect(checkpoint.pragma('wal_checkpoint(TRUNCATE)')).toStrictEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
    } finally {
      checkpoint.close();
    }
  });
});
