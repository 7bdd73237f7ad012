/**
 * Accounts kept in shards: an account's balance and held amount are the sums of its shard rows,
 * so that operations under different references change different rows and do not queue behind
 * one row's lock. Used by the sandbox institution's float and the sandbox exchange's liquidity.
 */

/** One shard's figures, in minor units. */
export interface ShardFigures {
  readonly shard: number;
  readonly balance: bigint;
  readonly held: bigint;
}

/** Change of a shard's figures, in minor units. */
export interface ShardDelta {
  readonly balance: bigint;
  readonly held: bigint;
}

/** The shard a key belongs to: FNV-1a (32-bit) of the key's UTF-16 code units, modulo `count`. */
export function shardOf(key: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index += 1) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % count;
}

/** `amount` in `count` equal parts, the remainder of the division added to part 0. */
export function evenParts(amount: bigint, count: number): bigint[] {
  const share = amount / BigInt(count);
  const remainder = amount - share * BigInt(count);
  return Array.from({ length: count }, (_, index) => (index === 0 ? share + remainder : share));
}

/**
 * Spreads what an account's shards have available (balance minus held) again so that the shard
 * `preferred` can take `delta`, a change that lowers what is available (a hold: held up; a payment
 * out: balance down). The preferred shard gets what is needed plus an equal share of the rest,
 * every other shard an equal share, and the remainder of the division stays on the preferred
 * shard. Every shard keeps what it holds. Answers the new figures of every shard, in the order
 * given, or undefined when the shards together cannot cover the change. Throws when `preferred`
 * is not among the shards (the books have fewer shards than the operation hashed to).
 */
export function spreadFor(shards: readonly ShardFigures[], preferred: number, delta: ShardDelta): ShardFigures[] | undefined {
  if (!shards.some((shard) => shard.shard === preferred)) throw new Error(`no shard ${preferred} among ${shards.length} to spread onto`);
  const need = delta.held - delta.balance;
  const available = shards.reduce((total, shard) => total + (shard.balance - shard.held), 0n);
  if (available < need) return undefined;
  const rest = available - need;
  const share = rest / BigInt(shards.length);
  const remainder = rest - share * BigInt(shards.length);
  return shards.map((shard) => {
    if (shard.shard !== preferred) return { shard: shard.shard, balance: shard.held + share, held: shard.held };
    const held = shard.held + delta.held;
    return { shard: shard.shard, balance: held + share + remainder, held };
  });
}
