import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDatabase } from './sqlite-database.js';
import { readingStatement } from './sqlite-rows.js';

describe('readingStatement on a real SQLite file', () => {
  let dir: string;
  let connection: BetterSqlite3.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cc-rows-'));
    connection = new BetterSqlite3(join(dir, 'rows.db'));
    connection.exec(`create table t (id integer primary key, name text, amount text, blob blob, n integer);
      insert into t values (1, 'one', '10.50', x'0102', 7), (2, null, '0', null, -3);`);
  });

  afterEach(() => {
    connection.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every reading form with the rows better-sqlite3 itself gives', () => {
    const queries: Array<[string, unknown[]]> = [
      ['select * from t order by id', []],
      ['select id, name as id from t where id = ?', [2]],
      ['update t set n = n + 1 where id = ? returning *', [1]],
      ['insert into t (id, name, amount) values (?, ?, ?) returning id, amount, blob', [3, 'three', '1']],
      ['select count(*), max(amount) from t', []],
      ['select * from t where id = ?', [99]],
    ];
    for (const [text, parameters] of queries) {
      const ours = readingStatement(connection.prepare(text));
      expect(ours.reader).toBe(true);
      const rows = ours.all(parameters);
      // Undo the write, then read the same statement the way better-sqlite3 makes rows.
      connection.exec('delete from t where id = 3; update t set n = 7 where id = 1');
      const theirs = connection.prepare(text).all(parameters);
      connection.exec('delete from t where id = 3; update t set n = 7 where id = 1');
      expect(rows, text).toStrictEqual(theirs);
      expect(rows.map((row) => Object.keys(row as object)), text).toEqual(theirs.map((row) => Object.keys(row as object)));
    }
    expect(readingStatement(connection.prepare('select * from t order by id')).all([])).toStrictEqual([
      { id: 1, name: 'one', amount: '10.50', blob: Buffer.from([1, 2]), n: 7 },
      { id: 2, name: null, amount: '0', blob: null, n: -3 },
    ]);
    expect([...readingStatement(connection.prepare('select id, amount from t where id > ? order by id')).iterate([0])]).toEqual([
      { id: 1, amount: '10.50' },
      { id: 2, amount: '0' },
    ]);
  });

  it('leaves a statement that reads nothing as it is', () => {
    const statement = connection.prepare('update t set n = ? where id = ?');
    expect(readingStatement(statement)).toBe(statement);
    expect(statement.run([5, 2]).changes).toBe(1);
    expect(connection.prepare('select n from t where id = 2').get()).toEqual({ n: 5 });
  });
});

describe('SqliteDatabase rows', () => {
  it('reads through Kysely the same rows, on the writer and the reader connection', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cc-rows-db-'));
    const database = new SqliteDatabase(join(dir, 'c.db'));
    try {
      await database.migrate([
        {
          id: 'test-001-rows',
          async up(db) {
            await sql`create table accounts (id text primary key, balance text not null, held text not null, note text)`.execute(db);
          },
        },
      ]);
      const written = await database.autocommit(async (db) => (await sql<Record<string, unknown>>`insert into accounts values ('a-1', '100.00', '0', null) returning *`.execute(db)).rows);
      expect(written).toStrictEqual([{ id: 'a-1', balance: '100.00', held: '0', note: null }]);
      const read = await sql<Record<string, unknown>>`select held, id, held as balance from accounts`.execute(database.reader());
      expect(read.rows).toStrictEqual([{ held: '0', id: 'a-1', balance: '0' }]);
      expect(Object.keys(read.rows[0]!)).toEqual(['held', 'id', 'balance']);
    } finally {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
