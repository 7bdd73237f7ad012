import { describe, expect, it } from 'vitest';
import { forEachConcurrently } from './bounded.js';

/** A promise resolved from outside, to hold a unit of work open. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('forEachConcurrently', () => {
  it('never has more than the limit under way and runs every item once', async () => {
    const gates = Array.from({ length: 7 }, () => gate());
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const done = forEachConcurrently([0, 1, 2, 3, 4, 5, 6], 3, async (item) => {
      started.push(item);
      running += 1;
      most = Math.max(most, running);
      await gates[item]?.promise;
      running -= 1;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    gates[1]?.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2, 3]);
    for (const each of gates) each.open();
    await done;
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(most).toBe(3);
  });

  it('starts nothing after a failure, waits for the work under way, then throws the first failure', async () => {
    const slow = gate();
    const started: number[] = [];
    let finished = 0;
    const done = forEachConcurrently([0, 1, 2, 3, 4], 2, async (item) => {
      started.push(item);
      if (item === 0) {
        await slow.promise;
        finished += 1;
        return;
      }
      throw new Error(`item ${item} failed`);
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    slow.open();
    await expect(done).rejects.toThrow('item 1 failed');
    expect(started).toEqual([0, 1]);
    expect(finished).toBe(1);
  });

  it('refuses a limit below one', async () => {
    await expect(forEachConcurrently([1], 0, async () => undefined)).rejects.toThrow('concurrency limit 0 is not a positive whole number');
  });
});
