import { sql } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import { evenParts, shardOf as shardOfKey, type ShardDelta } from '../../../shared/shards.js';
import { lockShardRows, spreadShardRows, tryShardRow, writeShardRow } from '../../store/shard-rows.js';
import { recordFunding, type AccountRef, type BookContext } from './ledger-book.js';

/**
 * The float kept in shards: a float's balance and held amount are the sums of its rows in
 * `sandbox_float_shards`, so that transfers under different references change different rows
 * and do not queue behind one another on PostgreSQL's row lock (with one float row, every
 * reservation, commit, release, collection and refund of a currency waited for the one before
 * it to commit). The journal is unchanged: postings name the float account, never a shard, so
 * conservation (the float's balance equals its postings) holds for the sum of the shards.
 *
 * Each operation uses the shard its reference hashes to within the process's lane (shardOf); a
 * hold records its shard, so its commit or release gives back exactly what that shard holds,
 * whichever process runs it. A shard may not hold more
 * than its balance (the float's own invariant, per shard). When the preferred shard alone
 * cannot take a hold or a payment out, the operation is rolled back and runs again; that time
 * it locks every shard of the float, in shard order, and spreads what the float has available
 * again: the preferred shard gets what is needed, the rest is shared evenly. So a float is
 * short only when the sum of its shards is short.
 *
 * Locks on PostgreSQL: an operation changes one shard, with one conditional UPDATE, as the
 * last write of its transaction (after its reference's turn and any customer account); a
 * second run locks every shard in shard order at that same point, holding no shard before.
 * Two spreads, or a spread and a single-shard write, cannot deadlock.
 */

/** Shards of each float, numbered 0 to FLOAT_SHARDS - 1, created when the float is opened. */
export const FLOAT_SHARDS = 8;

export type { ShardDelta } from '../../../shared/shards.js';

/**
 * The shards a process picks from for the operations it starts: `size` shards from `first`.
 *
 * Why lanes: on PostgreSQL a replica's commit group (postgres-statement-groups.ts) is one
 * transaction holding the lock of every shard its statements changed until it commits. Two
 * replicas picking from all eight shards each changed most of them in every group, so each
 * group waited for the other replica's to commit: under the benchmark's payee lifecycle about
 * a fifth of the sessions' samples were waits on a shard row. With a lane of its own, each
 * replica's reservations (and the commits that follow on the shard a hold recorded) change only
 * its own shards. Lanes decide where money is taken from and put, never whether: any shard may
 * be changed by any process (a hold's commit, a spread), the float is the sum of all its shards,
 * and a lane that is short spreads the whole float as before.
 */
export interface FloatLane {
  readonly first: number;
  readonly size: number;
}

/** Every shard: SQLite, whose one process writes alone, and any books without a lane of their own. */
export const ALL_FLOAT_SHARDS: FloatLane = { first: 0, size: FLOAT_SHARDS };

/** Shards in one replica's lane on PostgreSQL: four lanes of two. */
export const FLOAT_LANE_SHARDS = 2;
export const FLOAT_LANES = FLOAT_SHARDS / FLOAT_LANE_SHARDS;

/** "lane" in ASCII: the advisory-lock key space in which a replica claims its lane (SqlDatabase.claimSlot). */
export const FLOAT_LANE_SPACE = 0x6c616e65;

/** The lane of slot `slot` (0 to FLOAT_LANES - 1), as claimed by a replica. */
export function floatLaneOf(slot: number): FloatLane {
  if (!Number.isSafeInteger(slot) || slot < 0 || slot >= FLOAT_LANES) throw new Error(`float lane ${slot} is not between 0 and ${FLOAT_LANES - 1}`);
  return { first: slot * FLOAT_LANE_SHARDS, size: FLOAT_LANE_SHARDS };
}

/** The shard a reference's operations use: FNV-1a of the reference, modulo the lane's size, from its first shard. */
export function shardOf(reference: string, lane: FloatLane): number {
  return lane.first + shardOfKey(reference, lane.size);
}

/**
 * The float account's id for `currency`, read without a lock and remembered: an account's id,
 * kind and currency never change once opened (the books only ever add accounts).
 * UnsupportedCurrency when the books have no float in it.
 */
const floatIds = new WeakMap<object, Map<string, string>>();

export async function floatOf(context: BookContext, currency: string): Promise<AccountRef> {
  const known = floatIds.get(context.books)?.get(currency);
  if (known !== undefined) return { accountId: known, currency };
  const row = await context.trx
    .selectFrom('sandbox_accounts')
    .select('account_id')
    .where('kind', '=', 'float')
    .where('currency', '=', currency)
    .orderBy('account_id')
    .limit(1)
    .executeTakeFirst();
  if (row === undefined) throw new ConnectorError('UnsupportedCurrency', `no float account in ${currency}`);
  const byCurrency = floatIds.get(context.books) ?? new Map<string, string>();
  byCurrency.set(currency, row.account_id);
  floatIds.set(context.books, byCurrency);
  return { accountId: row.account_id, currency };
}

/** Creates the shards of a newly opened float, all at zero. */
export async function openShards(context: BookContext, floatId: string): Promise<void> {
  await context.trx
    .insertInto('sandbox_float_shards')
    .values(Array.from({ length: FLOAT_SHARDS }, (_, shard) => ({ account_id: floatId, shard, balance: '0', held: '0', updated_at: context.now })))
    .execute();
}

/**
 * Changes one shard by a delta that its own figures must allow: the commit or release of what
 * it holds, or a credit. Anything else means the books are broken.
 */
export async function changeShard(context: BookContext, floatId: string, shard: number, delta: ShardDelta): Promise<void> {
  const changed = await tryShardRow(context, 'sandbox_float_shards', floatId, shard, delta);
  assert(changed, `sandbox: float ${floatId} shard ${shard} refused a change of balance ${delta.balance}, held ${delta.held}`);
}

/**
 * Thrown by takeFromFloat when the preferred shard alone is short. The ledger rolls the
 * operation back and runs it again with `context.spreadFloat`. The spread is not done at once
 * because on PostgreSQL an UPDATE that waited for a row and then found its condition false
 * still holds that row's lock: locking every shard after it could deadlock with another spread.
 */
export class ShardShort extends Error {
  constructor(floatId: string, shard: number) {
    super(`sandbox: float ${floatId} shard ${shard} is short; the operation runs again and spreads the float`);
  }
}

/**
 * Applies a delta that lowers what the float has available (a hold: held up; a payment out:
 * balance down) to the shard `preferred`. When that shard alone is short it throws ShardShort.
 * In the operation's second run (`context.spreadFloat`) it locks every shard of the float in
 * shard order, before touching any, and spreads what the float has available again: the
 * preferred shard gets what is needed and an equal share of the rest, every other shard an
 * equal share, the remainder stays on the preferred shard. Answers false, having changed
 * nothing, when the float as a whole is short.
 */
export async function takeFromFloat(context: BookContext, floatId: string, preferred: number, delta: ShardDelta): Promise<boolean> {
  if (context.spreadFloat !== true) {
    if (await tryShardRow(context, 'sandbox_float_shards', floatId, preferred, delta)) return true;
    throw new ShardShort(floatId, preferred);
  }
  const taken = await spreadShardRows(context, 'sandbox_float_shards', floatId, preferred, delta);
  assert(taken !== undefined, `sandbox: float ${floatId} has no shards`);
  return taken;
}

/**
 * Credits a float with money from outside the books (the opening balance, a funding): one
 * FUNDING posting on the float account, the amount spread evenly over its shards.
 */
export async function fundFloat(context: BookContext, movementId: string, float: AccountRef, minor: bigint): Promise<void> {
  await recordFunding(context, movementId, float, minor);
  const shards = await lockShardRows(context, 'sandbox_float_shards', float.accountId);
  assert(shards.length > 0, `sandbox: float ${float.accountId} has no shards`);
  const credits = evenParts(minor, shards.length);
  for (const [index, shard] of shards.entries()) {
    const credit = credits[index] as bigint;
    if (credit > 0n) await writeShard(context, float.accountId, shard.shard, shard.balance + credit, shard.held);
  }
}

async function writeShard(context: BookContext, floatId: string, shard: number, balance: bigint, held: bigint): Promise<void> {
  assert(held >= 0n && balance >= held, `sandbox: float ${floatId} shard ${shard} would hold ${held} of ${balance}`);
  await writeShardRow(context, 'sandbox_float_shards', floatId, { shard, balance, held });
}
