import { describe, expect, it } from 'vitest';
import { KeyedSerializer } from './keyed-serializer.js';

describe('KeyedSerializer', () => {
  it('runs work for one key in arrival order, other keys alongside, and survives a failure', async () => {
    const serial = new KeyedSerializer();
    const order: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = serial.run('a', async () => {
      await gate;
      order.push('a1');
      throw new Error('a1 failed');
    });
    const second = serial.run('a', async () => {
      order.push('a2');
      return 2;
    });
    const other = serial.run('b', async () => {
      order.push('b1');
      return 'b';
    });
    expect(await other).toBe('b');
    expect(serial.isBusy('a')).toBe(true);
    release();
    await expect(first).rejects.toThrow('a1 failed');
    expect(await second).toBe(2);
    await serial.idle();
    expect(order).toEqual(['b1', 'a1', 'a2']);
    expect(serial.isBusy('a')).toBe(false);
  });
});
