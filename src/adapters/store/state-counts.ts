import { SqliteAdapter, sql, type Kysely } from 'kysely';
import type { AnySchema, Migration, SqlDatabase } from './sql-database.js';

/**
 * How many records of a kind are in each state, for the metrics' gauges.
 *
 * Counting a table at each scrape grows with the table: on SQLite, whose reads run on the event
 * loop, `group by state` over 1.5 million incoming transfers took 87 ms with the file in the page
 * cache and 1.1 s without, at every scrape, every payment in flight waiting as long. So on SQLite
 * each counted table keeps its figures in `state_counts`, one row per kind and state, kept by
 * triggers: an insert adds one to its state, a change of state moves one from the old state to
 * the new, a delete (by hand: the connector deletes nothing) takes one away. The triggers run
 * inside the statement that changes the record, so the figures commit with it, or are undone with
 * it (a failed unit's savepoint, a group rolled back), whoever writes (the connector, or an
 * operator's shell on the file). A scrape reads a handful of rows. SQLite has one writer at a time, so
 * the shared rows cost no waiting: a few µs per write (3–7 µs inside a group's savepoints, measured).
 *
 * PostgreSQL keeps no such rows: replicas' commit groups would all update the same few rows,
 * the hot row the sharded float removed. Its scrape counts the table (an index-only scan), which
 * loads the server as the table grows but does not hold the connector's event loop.
 */
export interface CountedTable {
  readonly table: string;
  /** The kind's name in `state_counts` (the audit trail's subject where there is one). */
  readonly kind: string;
  /** The column holding the record's state; none for a table counted whole (its rows never change state). */
  readonly stateColumn?: string;
}

/** The state under which a table counted whole keeps its figure. */
const WHOLE = 'all';

interface StateCountsTable {
  kind: string;
  state: string;
  count: number;
}

/**
 * On SQLite: the `state_counts` table (if another module's migration has not made it yet), the
 * table's triggers, and its figures, counted in the migration's own transaction, so that no
 * change falls between the count and the triggers. Run again (its `schema_migrations` row
 * deleted), it replaces the triggers and counts the table afresh: the way to mend figures that
 * drifted from the table (a table restored on its own from a backup, say). On PostgreSQL, nothing.
 */
export function stateCountsMigration(id: string, counted: CountedTable): Migration {
  return {
    id,
    async up(db) {
      if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
      await db.schema
        .createTable('state_counts')
        .ifNotExists()
        .addColumn('kind', 'varchar(32)', (c) => c.notNull())
        .addColumn('state', 'varchar(32)', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('state_counts_pk', ['kind', 'state'])
        .execute();
      const table = sql.table(counted.table);
      const kind = sql.lit(counted.kind);
      const trigger = (event: string) => sql.id(`${counted.table}_count_${event}`);
      for (const event of ['insert', 'update', 'delete']) await sql`drop trigger if exists ${trigger(event)}`.execute(db);
      await sql`delete from state_counts where kind = ${kind}`.execute(db);
      const column = counted.stateColumn;
      // The state of the row inserted, deleted, or changed from or to.
      const stateOf = (row: 'new' | 'old') => sql.raw(column === undefined ? `'${WHOLE}'` : `${row}.${quoted(column)}`);
      const add = (row: 'new' | 'old') => sql`
        insert into state_counts (kind, state, count) values (${kind}, ${stateOf(row)}, 1)
          on conflict (kind, state) do update set count = count + 1;`;
      const remove = (row: 'new' | 'old') => sql`
        update state_counts set count = count - 1 where kind = ${kind} and state = ${stateOf(row)};`;
      await sql`create trigger ${trigger('insert')} after insert on ${table} begin ${add('new')} end`.execute(db);
      // Nothing in the connector deletes a record; a row deleted by hand is still followed.
      await sql`create trigger ${trigger('delete')} after delete on ${table} begin ${remove('old')} end`.execute(db);
      if (column === undefined) {
        await sql`insert into state_counts (kind, state, count) select ${kind}, ${sql.lit(WHOLE)}, count(*) from ${table}`.execute(db);
        return;
      }
      await sql`
        create trigger ${trigger('update')} after update of ${sql.id(column)} on ${table}
          when old.${sql.id(column)} is not new.${sql.id(column)}
        begin ${remove('old')} ${add('new')} end`.execute(db);
      await sql`
        insert into state_counts (kind, state, count)
          select ${kind}, ${sql.id(column)}, count(*) from ${table} group by ${sql.id(column)}`.execute(db);
    },
  };
}

/** An identifier quoted for SQL (the column names here are the connector's own, never input). */
function quoted(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a column name: ${name}`);
  return `"${name}"`;
}

/**
 * The table's records in each state (states with none left out; a table counted whole under the
 * state `all`): on SQLite from `state_counts`, on PostgreSQL counted.
 */
export async function stateCounts(database: SqlDatabase, counted: CountedTable): Promise<Array<{ state: string; count: number }>> {
  if (database.dialect === 'sqlite') {
    const rows = await database
      .reader<{ state_counts: StateCountsTable }>()
      .selectFrom('state_counts')
      .select(['state', 'count'])
      .where('kind', '=', counted.kind)
      .where('count', '<>', 0)
      .orderBy('state')
      .execute();
    return rows.map((row) => ({ state: row.state, count: Number(row.count) }));
  }
  const reader = database.reader<AnySchema>() as Kysely<AnySchema>;
  if (counted.stateColumn === undefined) {
    const row = await reader.selectFrom(counted.table).select((eb) => eb.fn.countAll<string | number>().as('count')).executeTakeFirst();
    const count = Number(row?.count ?? 0);
    return count === 0 ? [] : [{ state: WHOLE, count }];
  }
  const rows = await reader
    .selectFrom(counted.table)
    .select([sql.ref<string>(counted.stateColumn).as('state'), (eb) => eb.fn.countAll<string | number>().as('count')])
    .groupBy(counted.stateColumn)
    .orderBy(counted.stateColumn)
    .execute();
  return rows.map((row) => ({ state: String(row['state']), count: Number(row['count']) }));
}

export const INCOMING_TRANSFERS: CountedTable = { table: 'inbound_transfers', kind: 'incoming_transfer', stateColumn: 'state' };
export const OUTGOING_PAYMENTS: CountedTable = { table: 'outgoing_payments', kind: 'outgoing_payment', stateColumn: 'state' };
export const IDENTIFIERS: CountedTable = { table: 'identifier_registry', kind: 'identifier', stateColumn: 'state' };
export const FX_CONVERSIONS: CountedTable = { table: 'fx_conversions', kind: 'fx_conversion', stateColumn: 'state' };
export const FX_QUOTES: CountedTable = { table: 'fx_quotes', kind: 'fx_quote' };
