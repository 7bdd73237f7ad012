import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { AnySchema } from './sql-database.js';

/** Rows read per page, and so the most rows one UPDATE names. */
const PAGE_ROWS = 500;

/** Whether the database holds this table (for a migration whose work needs it; both stores). */
export async function hasTable(db: Kysely<AnySchema>, table: string): Promise<boolean> {
  const tables = await db.introspection.getTables();
  return tables.some((candidate) => candidate.name === table && !candidate.isView);
}

export interface ColumnBackfill {
  readonly table: string;
  /** The table's primary key: rows are read in its order, a page at a time. */
  readonly key: readonly string[];
  /** Further columns `valueOf` needs. */
  readonly read: readonly string[];
  /** Only the rows that may need a value. */
  readonly where?: RawBuilder<unknown> | undefined;
  readonly column: string;
  readonly type: 'integer' | 'text';
  /** The row's new value, or undefined to leave it as it is. */
  valueOf(row: Readonly<Record<string, unknown>>): string | number | undefined;
}

/**
 * Sets one column of existing rows to a value worked out in JavaScript: for a migration whose
 * value SQL cannot compute alike on SQLite and PostgreSQL (a digest). Pages of rows in key
 * order, so a large table is never held whole; each page's changes go in one UPDATE over a
 * VALUES list. Runs inside the migration's transaction.
 */
export async function backfillColumn(db: Kysely<AnySchema>, spec: ColumnBackfill): Promise<void> {
  const keys = sql.join(spec.key.map((column) => sql.ref(column)));
  const columns = sql.join([...spec.key, ...spec.read].map((column) => sql.ref(column)));
  const filter = spec.where ?? sql`1 = 1`;
  let after: readonly unknown[] | undefined;
  for (;;) {
    const from = after === undefined ? sql`` : sql`and (${keys}) > (${sql.join(after.map((value) => sql`${value}`))})`;
    const page = await sql<Record<string, unknown>>`
      select ${columns} from ${sql.table(spec.table)} where ${filter} ${from} order by ${keys} limit ${sql.lit(PAGE_ROWS)}`.execute(db);
    const last = page.rows.at(-1);
    if (last === undefined) return;
    after = spec.key.map((column) => last[column]);
    const updates: RawBuilder<unknown>[] = [];
    for (const row of page.rows) {
      const value = spec.valueOf(row);
      if (value !== undefined) updates.push(sql`(${sql.join([...spec.key.map((column) => row[column]), String(value)])})`);
    }
    if (updates.length > 0) {
      const width = spec.key.length + 1;
      const matches = sql.join(
        spec.key.map((column, index) => sql`${sql.ref(`${spec.table}.${column}`)} = ${sql.ref(`v.column${index + 1}`)}`),
        sql` and `,
      );
      const value = sql`cast(${sql.ref(`v.column${width}`)} as ${sql.raw(spec.type)})`;
      await sql`
        update ${sql.table(spec.table)} set ${sql.ref(spec.column)} = ${value}
          from (values ${sql.join(updates)}) as v where ${matches}`.execute(db);
    }
    if (page.rows.length < PAGE_ROWS) return;
  }
}
