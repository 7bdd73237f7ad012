import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { heldWhile, intentHold } from './held-while.js';

describe('intentHold', () => {
  it('renews at a third of the staleness, each renewal lasting all of it', () => {
    expect(intentHold(5000)).toEqual({ everyMs: 1666, forMs: 5000 });
    expect(intentHold(2)).toEqual({ everyMs: 1, forMs: 2 });
  });
});

describe('heldWhile', () => {
  it('writes nothing for work that ends before the first interval', async () => {
    let renewals = 0;
    const answer = await heldWhile(
      1000,
      async () => void (renewals += 1),
      () => undefined,
      async () => 'done',
    );
    expect(answer).toBe('done');
    expect(renewals).toBe(0);
  });

  it('renews while slow work runs, and never after it ended', async () => {
    let renewals = 0;
    await heldWhile(
      20,
      async () => void (renewals += 1),
      () => undefined,
      () => sleep(130),
    );
    const atEnd = renewals;
    // Timers slip on a loaded machine: at least one renewal in 130 ms at 20 ms intervals.
    expect(atEnd).toBeGreaterThanOrEqual(1);
    await sleep(80);
    expect(renewals).toBe(atEnd);
  });

  it('runs one renewal at a time and waits for the one under way before answering', async () => {
    const events: string[] = [];
    let running = 0;
    let most = 0;
    await heldWhile(
      10,
      async () => {
        running += 1;
        most = Math.max(most, running);
        events.push('renew start');
        await sleep(60);
        events.push('renew end');
        running -= 1;
      },
      () => undefined,
      async () => {
        await sleep(30);
        events.push('work end');
      },
    );
    events.push('answered');
    expect(most).toBe(1);
    expect(events).toEqual(['renew start', 'work end', 'renew end', 'answered']);
  });

  it('reports a failed renewal, tries again at the next interval, and still answers the work', async () => {
    const failures: unknown[] = [];
    let calls = 0;
    const answer = await heldWhile(
      20,
      async () => {
        calls += 1;
        if (calls === 1) throw new Error('store unavailable');
      },
      (error) => failures.push(error),
      async () => {
        // Until the renewal after the failed one (timers slip on a loaded machine).
        while (calls < 2) await sleep(5);
        return 42;
      },
    );
    expect(answer).toBe(42);
    expect(failures).toEqual([new Error('store unavailable')]);
    expect(calls).toBe(2);
  });

  it('passes the work\'s own failure on once the renewals stop', async () => {
    let renewals = 0;
    await expect(
      heldWhile(
        15,
        async () => void (renewals += 1),
        () => undefined,
        async () => {
          await sleep(50);
          throw new Error('institution unavailable');
        },
      ),
    ).rejects.toThrow('institution unavailable');
    const atEnd = renewals;
    await sleep(50);
    expect(renewals).toBe(atEnd);
  });
});
