import { describe, expect, it } from 'vitest';
import { evenParts, shardOf, spreadFor } from './shards.js';

describe('shardOf', () => {
  it('is the 32-bit FNV-1a hash of the key modulo the count', () => {
    // FNV-1a 32-bit: "" is 0x811c9dc5, "a" is 0xe40c292c, "foobar" is 0xbf9cf968.
    expect(shardOf('', 8)).toBe(0x811c9dc5 % 8);
    expect(shardOf('a', 8)).toBe(0xe40c292c % 8);
    expect(shardOf('foobar', 7)).toBe(0xbf9cf968 % 7);
  });
});

describe('evenParts', () => {
  it('splits into equal parts with the remainder on part 0', () => {
    expect(evenParts(100003n, 8)).toEqual([12503n, 12500n, 12500n, 12500n, 12500n, 12500n, 12500n, 12500n]);
    expect(evenParts(5n, 8)).toEqual([5n, 0n, 0n, 0n, 0n, 0n, 0n, 0n]);
    expect(evenParts(-1000n, 2)).toEqual([-500n, -500n]);
  });
});

describe('spreadFor', () => {
  const shards = [
    { shard: 0, balance: 100n, held: 40n },
    { shard: 1, balance: 10n, held: 10n },
    { shard: 2, balance: 55n, held: 0n },
  ];

  it('gives the preferred shard what a hold needs and shares the rest evenly, each shard keeping what it holds', () => {
    // Available 60 + 0 + 55 = 115; a hold of 100 on shard 1 leaves 15, 5 a shard.
    expect(spreadFor(shards, 1, { balance: 0n, held: 100n })).toEqual([
      { shard: 0, balance: 45n, held: 40n },
      { shard: 1, balance: 115n, held: 110n },
      { shard: 2, balance: 5n, held: 0n },
    ]);
  });

  it('takes a payment out of the preferred shard, the remainder of the division staying there', () => {
    // Available 115; a payment of 101 out of shard 2 leaves 14: 4 a shard, 2 over on shard 2.
    expect(spreadFor(shards, 2, { balance: -101n, held: 0n })).toEqual([
      { shard: 0, balance: 44n, held: 40n },
      { shard: 1, balance: 14n, held: 10n },
      { shard: 2, balance: 6n, held: 0n },
    ]);
  });

  it('answers undefined when the shards together cannot cover the change', () => {
    expect(spreadFor(shards, 0, { balance: 0n, held: 116n })).toBeUndefined();
    expect(spreadFor(shards, 0, { balance: 0n, held: 115n })?.map((shard) => shard.balance - shard.held)).toEqual([0n, 0n, 0n]);
  });

  it('refuses to spread onto a shard the account does not have', () => {
    expect(() => spreadFor(shards, 3, { balance: 0n, held: 1n })).toThrow('no shard 3 among 3 to spread onto');
  });
});
