import { sql, type Kysely } from 'kysely';
import { assert } from '../../domain/errors.js';
import { queryTemplate, rawQuery, type Slots } from './query-template.js';
import { spreadFor, type ShardDelta, type ShardFigures } from '../../shared/shards.js';

/**
 * Rows of an account kept in shards (src/shared/shards.ts): a table keyed by (account_id, shard)
 * with balance and held as decimal strings of minor units. The sandbox float and the sandbox
 * exchange's accounts both keep their figures so; both go through these functions so that their
 * shards are changed and locked alike.
 */
export type ShardTable = 'sandbox_float_shards' | 'fx_exchange_shards';

interface ShardRow {
  account_id: string;
  shard: number;
  balance: string;
  held: string;
  updated_at: string;
}

export interface ShardRowsContext<S> {
  readonly trx: Kysely<S>;
  /** True on PostgreSQL; SQLite's write transaction is already exclusive. */
  readonly lockRows: boolean;
  readonly now: string;
}

/** A stored figure: an integer of minor units, nothing else. */
function storedMinor(text: string): bigint {
  assert(/^-?(0|[1-9][0-9]*)$/.test(text), `stored shard figure "${text}" is not an integer`);
  return BigInt(text);
}

function rows<S>(context: ShardRowsContext<S>): Kysely<Record<ShardTable, ShardRow>> {
  return context.trx as unknown as Kysely<Record<ShardTable, ShardRow>>;
}

/**
 * Adds `delta` to one shard unless that would make it hold a negative amount or more than its
 * balance; answers whether it did (false for a shard that does not exist). On PostgreSQL one
 * conditional UPDATE (the row lock taken by the write itself, numeric arithmetic on the stored
 * integers); on SQLite a read and a write.
 */
export async function tryShardRow<S>(context: ShardRowsContext<S>, table: ShardTable, accountId: string, shard: number, delta: ShardDelta): Promise<boolean> {
  if (context.lockRows) {
    const values = { balance: delta.balance.toString(), held: delta.held.toString(), now: context.now, accountId, shard };
    return (await TRY_SHARD_AT_ONCE[table].rows(rows(context), values)).length === 1;
  }
  const row = await READ_SHARD[table].first(rows(context), { accountId, shard });
  if (row === undefined) return false;
  const figures = { shard, balance: storedMinor(row.balance) + delta.balance, held: storedMinor(row.held) + delta.held };
  if (figures.held < 0n || figures.balance < figures.held) return false;
  await writeShardRow(context, table, accountId, figures);
  return true;
}

/** Every shard of an account, locked on PostgreSQL in shard order (the order every spread takes). */
export async function lockShardRows<S>(context: ShardRowsContext<S>, table: ShardTable, accountId: string): Promise<ShardFigures[]> {
  let query = rows(context).selectFrom(table).select(['shard', 'balance', 'held']).where('account_id', '=', accountId).orderBy('shard');
  if (context.lockRows) query = query.forNoKeyUpdate();
  const found = await query.execute();
  return found.map((row) => ({ shard: row.shard, balance: storedMinor(row.balance), held: storedMinor(row.held) }));
}

/**
 * Locks every shard of an account in shard order and spreads what it has available so that the
 * shard `preferred` takes `delta` (spreadFor), writing only the shards that change. Answers
 * undefined when the account has no shards, false (nothing changed) when the shards together
 * cannot cover the change, true when it was taken.
 */
export async function spreadShardRows<S>(context: ShardRowsContext<S>, table: ShardTable, accountId: string, preferred: number, delta: ShardDelta): Promise<boolean | undefined> {
  const shards = await lockShardRows(context, table, accountId);
  if (shards.length === 0) return undefined;
  const spread = spreadFor(shards, preferred, delta);
  if (spread === undefined) return false;
  for (const [index, figures] of spread.entries()) {
    const before = shards[index] as ShardFigures;
    if (figures.balance === before.balance && figures.held === before.held) continue;
    assert(figures.held >= 0n && figures.balance >= figures.held, `${table} ${accountId} shard ${figures.shard} would hold ${figures.held} of ${figures.balance}`);
    await writeShardRow(context, table, accountId, figures);
  }
  return true;
}

/** Sets one shard's figures; the caller has checked its invariants. */
export async function writeShardRow<S>(context: ShardRowsContext<S>, table: ShardTable, accountId: string, figures: ShardFigures): Promise<void> {
  await WRITE_SHARD[table].execute(rows(context), { balance: figures.balance.toString(), held: figures.held.toString(), now: context.now, accountId, shard: figures.shard });
}

type ShardDb = Kysely<Record<ShardTable, ShardRow>>;

/** One template per table (a table's name is part of the statement, not a value). */
function perTable<T>(make: (table: ShardTable) => T): Readonly<Record<ShardTable, T>> {
  return { sandbox_float_shards: make('sandbox_float_shards'), fx_exchange_shards: make('fx_exchange_shards') };
}

const TRY_SHARD_AT_ONCE = perTable((table) =>
  queryTemplate(`change ${table} at once`, (db: ShardDb, p: Slots<{ balance: string; held: string; now: string; accountId: string; shard: number }>) => {
    const balance = sql`(balance::numeric + ${p.balance}::numeric)`;
    const held = sql`(held::numeric + ${p.held}::numeric)`;
    const update = sql<{ shard: number }>`
      update ${sql.table(table)} set balance = ${balance}::text, held = ${held}::text, updated_at = ${p.now}
      where account_id = ${p.accountId} and shard = ${p.shard} and ${held} >= 0 and ${balance} >= ${held}
      returning shard`;
    return rawQuery(update, db);
  }),
);

const READ_SHARD = perTable((table) =>
  queryTemplate(`read ${table}`, (db: ShardDb, p: Slots<{ accountId: string; shard: number }>) =>
    db.selectFrom(table).select(['balance', 'held']).where('account_id', '=', p.accountId).where('shard', '=', p.shard),
  ),
);

const WRITE_SHARD = perTable((table) =>
  queryTemplate(`write ${table}`, (db: ShardDb, p: Slots<{ balance: string; held: string; now: string; accountId: string; shard: number }>) =>
    db.updateTable(table).set({ balance: p.balance, held: p.held, updated_at: p.now }).where('account_id', '=', p.accountId).where('shard', '=', p.shard),
  ),
);
