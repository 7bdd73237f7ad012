import { sql, type Kysely } from 'kysely';
import type { AnySchema, Migration } from './sql-database.js';

/**
 * Applies migrations in order, each in its own transaction together with its bookkeeping row.
 * `runInTransaction` is the database's own transaction function, so that a PostgreSQL store can
 * serialise concurrent replicas (see postgres-database.ts).
 */
export async function applyMigrations(
  db: Kysely<AnySchema>,
  migrations: readonly Migration[],
  runInTransaction: (work: (trx: Kysely<AnySchema>) => Promise<void>) => Promise<void>,
): Promise<string[]> {
  const ids = new Set<string>();
  for (const migration of migrations) {
    if (ids.has(migration.id)) throw new Error(`duplicate migration id ${migration.id}`);
    ids.add(migration.id);
  }
  await db.schema
    .createTable('schema_migrations')
    .ifNotExists()
    .addColumn('id', 'varchar(200)', (c) => c.primaryKey())
    .addColumn('applied_at', 'varchar(30)', (c) => c.notNull())
    .execute();
  const applied: string[] = [];
  for (const migration of migrations) {
    await runInTransaction(async (trx) => {
      const done = await trx.selectFrom('schema_migrations').select('id').where('id', '=', migration.id).executeTakeFirst();
      if (done !== undefined) return;
      await migration.up(trx);
      await trx
        .insertInto('schema_migrations')
        .values({ id: migration.id, applied_at: new Date().toISOString() })
        .execute();
      applied.push(migration.id);
    });
  }
  return applied;
}

export async function ping(db: Kysely<AnySchema>): Promise<void> {
  await sql`select 1`.execute(db);
}
