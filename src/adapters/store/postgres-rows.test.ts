import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { shapedQuery, shapedSending } from './postgres-rows.js';

/** Everything a caller can see of a result: its command, count, rows (keys in order) and fields. */
function seen(result: pg.QueryResult): unknown {
  return {
    command: result.command,
    rowCount: result.rowCount,
    rows: result.rows.map((row: Record<string, unknown>) => ({ keys: Object.keys(row), prototype: Object.getPrototypeOf(row) === Object.prototype, row })),
    fields: result.fields.map((field) => [field.name, field.dataTypeID, field.format]),
  };
}

describe('shapedQuery on a real PostgreSQL server', () => {
  let database: TestDatabase | undefined;
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(`create table shaped (id text primary key, amount numeric(30, 4) not null, n integer, big bigint, ok boolean, at timestamptz,
      body jsonb, tags text[], "__proto__" text, "it""s" text)`);
  });

  afterAll(async () => {
    await client.end();
  });

  const send = (query: pg.Query): unknown => client.query(query);

  it('answers what pg answers, for every column type the connector reads and for nulls', async () => {
    const insert = `insert into shaped values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning *`;
    const full = ['a', '12345678901234567890.1234', 7, '9007199254740993', true, '2026-11-26T10:00:00.123Z', { x: [1, 'two'] }, ['p', 'q'], 'not a prototype', 'quoted'];
    const empty = ['b', '0', null, null, null, null, null, null, null, null];
    // Each insert through pg is undone, then made again through shapedQuery.
    for (const [values, name] of [[full, 'shaped_insert'], [empty, undefined]] as const) {
      await client.query('begin');
      const viaPg = await client.query(insert, [...values]);
      await client.query('rollback');
      expect(seen(await shapedQuery(send, insert, [...values], name))).toStrictEqual(seen(viaPg));
    }

    const select = 'select *, amount as amount, id as "__proto__" from shaped order by id';
    const shaped = await shapedQuery(send, select, []);
    expect(seen(shaped)).toStrictEqual(seen(await client.query(select)));
    const first = shaped.rows[0] as Record<string, unknown>;
    // The values as pg parses them: numeric and bigint as text, timestamptz as a Date, jsonb parsed.
    expect(first).toStrictEqual({
      id: 'a',
      amount: '12345678901234567890.1234',
      n: 7,
      big: '9007199254740993',
      ok: true,
      at: new Date('2026-11-26T10:00:00.123Z'),
      body: { x: [1, 'two'] },
      tags: ['p', 'q'],
      ['__proto__']: 'a',
      'it"s': 'quoted',
    });
    // A later column of the same name wins, in the earlier one's place; "__proto__" stays a property.
    expect(Object.keys(first)).toStrictEqual(['id', 'amount', 'n', 'big', 'ok', 'at', 'body', 'tags', '__proto__', 'it"s']);
    expect(Object.getOwnPropertyDescriptor(first, '__proto__')?.value).toBe('a');
    expect(Object.getPrototypeOf(first)).toBe(Object.prototype);

    const update = await shapedQuery(send, 'update shaped set n = coalesce(n, 0) + 1 where id = any($1)', [['a', 'b', 'none']]);
    expect([update.command, update.rowCount, update.rows]).toStrictEqual(['UPDATE', 2, []]);
  });

  it('reads a statement again when its result changes shape, and fails as pg does', async () => {
    const text = 'select * from shaped where id = $1';
    expect((await shapedQuery(send, text, ['a'])).rows[0]).not.toHaveProperty('added');
    await client.query('alter table shaped add column added integer not null default 5');
    try {
      const again = await shapedQuery(send, text, ['a']);
      expect(again.rows[0]).toMatchObject({ id: 'a', added: 5 });
      expect(seen(again)).toStrictEqual(seen(await client.query(text, ['a'])));
    } finally {
      await client.query('alter table shaped drop column added');
    }
    await expect(shapedQuery(send, 'insert into shaped (id, amount) values ($1, $2)', ['a', '1'])).rejects.toThrow(
      'duplicate key value violates unique constraint "shaped_pkey"',
    );
    await expect(shapedQuery(send, 'select $1::integer', ['seven'])).rejects.toThrow('invalid input syntax for type integer: "seven"');
    // The connection is still in order after a failure.
    expect((await shapedQuery(send, 'select 1 as one', [])).rows).toStrictEqual([{ one: 1 }]);
  });

  it('fails a statement whose value a parser refuses once the server is done with it, and the client goes on', async () => {
    const types = new Map<number, (text: string) => unknown>([[23, () => { throw new Error('refused integer'); }]]);
    const strict = new pg.Client({
      connectionString: database?.url,
      types: { getTypeParser: (oid: number, format?: string) => types.get(oid) ?? pg.types.getTypeParser(oid, format as 'text') },
    });
    await strict.connect();
    try {
      const sendStrict = (query: pg.Query): unknown => strict.query(query);
      await expect(shapedQuery(sendStrict, 'select 1::integer as n', [])).rejects.toThrow('refused integer');
      expect((await shapedQuery(sendStrict, "select 'x' as t", [])).rows).toStrictEqual([{ t: 'x' }]);
    } finally {
      await strict.end();
    }
  });

  it('describes a named statement once per connection, and later runs answer what pg answers', async () => {
    const other = new pg.Client({ connectionString: database?.url });
    await other.connect();
    const connection = (client as unknown as { connection: { describe(message: unknown): void } }).connection;
    const describe = connection.describe.bind(connection);
    const described: unknown[] = [];
    connection.describe = (message: unknown): void => {
      described.push(message);
      describe(message);
    };
    try {
      await client.query(`insert into shaped (id, amount, n, at, body) values ('d1', '1.5', 1, '2026-11-26T10:00:00Z', '{"k":1}'), ('d2', '2.5', 2, null, null)`);
      const select = 'select id, amount, n, at, body, tags from shaped where id = any($1) and (at is null or at < $2) order by id';
      const update = 'update shaped set n = n + $1 where id = any($2)';
      const runs: Array<[string, unknown[]]> = [
        [select, [['d1', 'd2'], new Date('2026-11-27T00:00:00Z')]],
        [select, [['d2'], new Date('2026-11-27T00:00:00Z')]],
        [update, [10, ['d1', 'd2']]],
        [select, [['d1', 'd2'], '2026-11-27T00:00:00Z']],
        [update, [1, ['none']]],
        [select, [['d1'], null]],
      ];
      for (const [text, values] of runs) {
        const name = text === select ? 'shaped_described_select' : 'shaped_described_update';
        await other.query('begin');
        const viaPg = await other.query({ name, text, values: [...values] });
        await other.query('rollback');
        expect(seen(await shapedQuery(send, text, [...values], name))).toStrictEqual(seen(viaPg));
      }
      // Once for each statement: its first run. An update without RETURNING was described too
      // (it answers no rows), and a statement without a name each time it runs.
      expect(described).toStrictEqual([
        { type: 'P', name: '' },
        { type: 'P', name: '' },
      ]);
      await shapedQuery(send, 'select $1::text as v', ['unnamed']);
      await shapedQuery(send, 'select $1::text as v', ['unnamed']);
      expect(described).toHaveLength(4);
      const rows = await shapedQuery(send, select, [['d1', 'd2'], '2026-11-28T00:00:00Z'], 'shaped_described_select');
      expect(rows.rows).toStrictEqual([
        { id: 'd1', amount: '1.5000', n: 11, at: new Date('2026-11-26T10:00:00Z'), body: { k: 1 }, tags: null },
        { id: 'd2', amount: '2.5000', n: 12, at: null, body: null, tags: null },
      ]);
      expect(described).toHaveLength(4);
    } finally {
      connection.describe = describe;
      await client.query("delete from shaped where id in ('d1', 'd2')");
      await other.end();
    }
  });

  it('keeps no description past a change of the table: the prepared statement fails as pg\'s own does, and one that cannot be bound stays prepared, at its first run too', async () => {
    const other = new pg.Client({ connectionString: database?.url });
    await other.connect();
    const text = 'select * from shaped where id = $1';
    const name = 'shaped_star';
    try {
      expect((await shapedQuery(send, text, ['a'], name)).rows[0]).toMatchObject({ id: 'a' });
      await other.query({ name, text, values: ['a'] });
      // A value pg cannot convert: refused before anything is sent for it; the statement stays.
      const unconvertible = { toPostgres: (): never => { throw new Error('no conversion'); } };
      await expect(shapedQuery(send, text, [unconvertible], name)).rejects.toThrow('no conversion');
      expect((await shapedQuery(send, text, ['a'], name)).rows[0]).toMatchObject({ id: 'a' });
      // The same at a statement's first run, parsed in the same message as the refused values:
      // it stays prepared and is described at its next run. pg's own code closes it there, and
      // its connection then fails every later run of it.
      await expect(shapedQuery(send, text, [unconvertible], 'shaped_first_refused')).rejects.toThrow('no conversion');
      expect(seen(await shapedQuery(send, text, ['a'], 'shaped_first_refused'))).toStrictEqual(seen(await other.query(text, ['a'])));
      await expect(other.query({ name: 'shaped_first_refused', text, values: [unconvertible] })).rejects.toThrow('no conversion');
      await expect(other.query({ name: 'shaped_first_refused', text, values: ['a'] })).rejects.toThrow('prepared statement "shaped_first_refused" does not exist');
      await client.query('alter table shaped add column later integer');
      try {
        const viaPg = other.query({ name, text, values: ['a'] });
        await expect(viaPg).rejects.toMatchObject({ code: '0A000', message: 'cached plan must not change result type' });
        await expect(shapedQuery(send, text, ['a'], name)).rejects.toMatchObject({ code: '0A000', message: 'cached plan must not change result type' });
        // The client goes on: a statement of another name describes the new shape.
        expect((await shapedQuery(send, text, ['a'], 'shaped_star_again')).rows[0]).toMatchObject({ id: 'a', later: null });
      } finally {
        await client.query('alter table shaped drop column later');
      }
    } finally {
      await other.end();
    }
  });

  it('sends through shapedSending only text with values, or a name, text and values; anything else as it came', async () => {
    const calls: unknown[][] = [];
    const query = shapedSending((...args: unknown[]) => {
      calls.push(args);
      return client.query(...(args as [string]));
    });
    const plain = (await query('select $1::text as v', ['x'])) as pg.QueryResult;
    const named = (await query({ name: 'shaped_named', text: 'select $1::text as v', values: ['y'] })) as pg.QueryResult;
    const other = (await query({ text: 'select $1::text as v', values: ['z'], rowMode: 'array' })) as pg.QueryResult;
    const bare = (await query('select 2 as two')) as pg.QueryResult;
    expect([plain.rows, named.rows, other.rows, bare.rows]).toStrictEqual([[{ v: 'x' }], [{ v: 'y' }], [['z']], [{ two: 2 }]]);
    expect(calls.map((args) => (args[0] instanceof pg.Query ? `query object${(args[0] as { name?: string }).name ? ' named' : ''}` : 'as it came'))).toStrictEqual([
      'query object',
      'query object named',
      'as it came',
      'as it came',
    ]);
  });
});
