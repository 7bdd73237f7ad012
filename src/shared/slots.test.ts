import { describe, expect, it } from 'vitest';
import { Slots } from './slots.js';

describe('Slots', () => {
  it('serves waiters in their order of asking as slots are given back', async () => {
    const slots = new Slots(1);
    expect(await slots.acquire(1000)).toBe(true);
    const order: string[] = [];
    const first = slots.acquire(1000).then((held) => order.push(`first ${held}`));
    const second = slots.acquire(1000).then((held) => order.push(`second ${held}`));
    expect(slots.waiting).toBe(2);
    slots.release();
    await first;
    expect(order).toEqual(['first true']);
    slots.release();
    await second;
    expect(order).toEqual(['first true', 'second true']);
    slots.release();
    expect(await slots.acquire(0)).toBe(true);
  });

  it('a waiter whose deadline passes holds nothing and is never served; the slot goes to the next', async () => {
    const slots = new Slots(1);
    expect(await slots.acquire(1000)).toBe(true);
    expect(await slots.acquire(20)).toBe(false);
    expect(slots.waiting).toBe(0);
    const later = slots.acquire(1000);
    slots.release();
    expect(await later).toBe(true);
    expect(slots.waiting).toBe(0);
  });

  it('refuses a size that is not a positive whole number', () => {
    expect(() => new Slots(0)).toThrow('slots 0 is not a positive whole number');
    expect(() => new Slots(1.5)).toThrow('slots 1.5 is not a positive whole number');
  });
});
