import { describe, expect, it } from 'vitest';
import type { Clock } from '../ports/clock.js';
import { pino } from 'pino';
import { RecoveryLoop, workWithinLease } from './recovery.js';

class StepClock implements Clock {
  ms = Date.parse('2026-11-23T10:00:00.000Z');
  now(): Date {
    return new Date(this.ms);
  }
}

describe('workWithinLease', () => {
  it('starts items only while the lease lasts and answers how many were left', async () => {
    const clock = new StepClock();
    const worked: string[] = [];
    const left = await workWithinLease(['a', 'b', 'c', 'd'], '2026-11-23T10:01:00.000Z', clock, async (item) => {
      worked.push(item);
      clock.ms += 25_000;
    });
    // a at 0 s, b at 25 s, c at 50 s; d would start at 75 s, after the lease.
    expect(worked).toEqual(['a', 'b', 'c']);
    expect(left).toBe(1);
  });

  it('works everything when the lease is long enough, and nothing once it is over', async () => {
    const clock = new StepClock();
    const worked: number[] = [];
    expect(await workWithinLease([1, 2, 3], '2026-11-23T10:01:00.000Z', clock, async (item) => void worked.push(item))).toBe(0);
    expect(worked).toEqual([1, 2, 3]);
    expect(await workWithinLease([4, 5], '2026-11-23T10:00:00.000Z', clock, async (item) => void worked.push(item))).toBe(2);
    expect(worked).toEqual([1, 2, 3]);
  });

  it('ends at a stop between two items: the item under way is finished, the rest left', async () => {
    const clock = new StepClock();
    const stop = new AbortController();
    const worked: string[] = [];
    const left = await workWithinLease(['a', 'b', 'c', 'd'], '2026-11-23T10:01:00.000Z', clock, async (item) => {
      worked.push(item);
      // The stop comes while b is being worked: b is finished, c and d are not started.
      if (item === 'b') stop.abort();
      await Promise.resolve();
      worked.push(`${item} done`);
    }, stop.signal);
    expect(worked).toEqual(['a', 'a done', 'b', 'b done']);
    expect(left).toBe(2);
  });
});

describe('RecoveryLoop', () => {
  it('stop() aborts the signal of the pass under way and waits for the pass to end', async () => {
    const seen: string[] = [];
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const loop = new RecoveryLoop(async (stop) => {
      started();
      while (!stop.aborted) await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push('pass ended');
    }, 1, pino({ level: 'silent' }));
    loop.start();
    await running;
    await loop.stop();
    expect(seen).toEqual(['pass ended']);
  });
});
