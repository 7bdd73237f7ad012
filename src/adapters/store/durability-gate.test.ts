import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DurabilityGate, fileSync } from './durability-gate.js';
import { openDescriptors } from '../../../test/support/open-files.js';

/** A sync the test finishes by hand: each call waits until `finish` (the oldest), `finishLast` or `fail` ends it. */
function manualSync(): { sync: () => Promise<void>; calls: number; finish(): void; finishLast(): void; fail(error: Error): void } {
  const pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const control = {
    calls: 0,
    sync: () =>
      new Promise<void>((resolve, reject) => {
        control.calls += 1;
        pending.push({ resolve, reject });
      }),
    finish() {
      const next = pending.shift();
      if (next === undefined) throw new Error('no sync is running');
      next.resolve();
    },
    finishLast() {
      const last = pending.pop();
      if (last === undefined) throw new Error('no sync is running');
      last.resolve();
    },
    fail(error: Error) {
      const next = pending.shift();
      if (next === undefined) throw new Error('no sync is running');
      next.reject(error);
    },
  };
  return control;
}


/** Lets every settled promise run its callbacks. */
const drain = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('DurabilityGate', () => {
  it('answers a commit only after a sync that started after it has finished', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync);
    const order: string[] = [];
    void gate.committed().then(() => order.push('first on disk'));
    await drain();
    expect(disk.calls).toBe(1);
    // Made while the first sync runs: that sync may not cover it.
    void gate.committed().then(() => order.push('second on disk'));
    void gate.committed().then(() => order.push('third on disk'));
    await drain();
    expect(disk.calls).toBe(1);
    expect(order).toStrictEqual([]);

    disk.finish();
    await drain();
    expect(order).toStrictEqual(['first on disk']);
    // One sync for both commits made meanwhile.
    expect(disk.calls).toBe(2);
    disk.finish();
    await drain();
    expect(order).toStrictEqual(['first on disk', 'second on disk', 'third on disk']);
    expect(disk.calls).toBe(2);
  });

  it('lets a read through at once when everything it could see is on disk, and holds it otherwise', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync);
    expect(gate.settled()).toBeUndefined();
    const committed = gate.committed();
    const read = gate.settled();
    expect(read).toBeInstanceOf(Promise);
    let readDone = false;
    void read?.then(() => {
      readDone = true;
    });
    await drain();
    expect(readDone).toBe(false);
    disk.finish();
    await committed;
    await drain();
    expect(readDone).toBe(true);
    expect(gate.settled()).toBeUndefined();
    expect(disk.calls).toBe(1);
  });

  it('holds a read while a commit is under way, until it is made and synced or abandoned', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync);
    const order: string[] = [];
    // Nothing counted yet, but a commit begun: the read may already see it.
    const made = gate.beginCommit();
    void gate.settled()?.then(() => order.push('read after the made commit'));
    await drain();
    expect(order).toStrictEqual([]);
    expect(disk.calls).toBe(0);
    const durable = made.made();
    await drain();
    expect(disk.calls).toBe(1);
    expect(order).toStrictEqual([]);
    disk.finish();
    await durable;
    await drain();
    expect(order).toStrictEqual(['read after the made commit']);
    expect(() => made.made()).toThrow('this commit has already been made or abandoned');

    // An abandoned commit lets the read through with no sync, as nothing was made.
    const given = gate.beginCommit();
    void gate.settled()?.then(() => order.push('read after the abandoned commit'));
    await drain();
    expect(order).toStrictEqual(['read after the made commit']);
    given.abandoned();
    await drain();
    expect(order).toStrictEqual(['read after the made commit', 'read after the abandoned commit']);
    expect(() => given.abandoned()).toThrow('this commit has already been made or abandoned');
    expect(gate.settled()).toBeUndefined();
    expect(disk.calls).toBe(1);
  });

  it('refuses the commits a failed sync covered, and every later one, without syncing again', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync);
    const first = gate.committed();
    await drain();
    const second = gate.committed();
    disk.fail(new Error('EIO: i/o error, fsync'));
    const message = "the database's log could not be written to disk; restart the connector: EIO: i/o error, fsync";
    await expect(first).rejects.toThrow(message);
    await expect(second).rejects.toThrow(message);
    await expect(gate.committed()).rejects.toThrow(message);
    await expect(gate.settled()).rejects.toThrow(message);
    expect(gate.failure?.message).toBe(message);
    expect(disk.calls).toBe(1);
  });

  it('runs up to `inFlight` syncs at once, and a later sync that finishes first covers the earlier commits', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync, { inFlight: 2 });
    const order: string[] = [];
    void gate.committed().then(() => order.push('1 on disk'));
    void gate.committed().then(() => order.push('2 on disk'));
    void gate.committed().then(() => order.push('3 on disk'));
    await drain();
    // Commit 1 started a sync, commit 2 a second one (the first may not cover it), commit 3 waits.
    expect(disk.calls).toBe(2);
    expect(order).toStrictEqual([]);
    // The second sync ends first: it started after commits 1 and 2, so both are on disk.
    disk.finishLast();
    await drain();
    expect(order).toStrictEqual(['1 on disk', '2 on disk']);
    expect(gate.settled()).toBeInstanceOf(Promise);
    // Its slot went to commit 3's sync.
    expect(disk.calls).toBe(3);
    disk.finishLast();
    await drain();
    expect(order).toStrictEqual(['1 on disk', '2 on disk', '3 on disk']);
    expect(gate.settled()).toBeUndefined();
    // The first sync ends last and changes nothing.
    disk.finish();
    await drain();
    expect(order).toStrictEqual(['1 on disk', '2 on disk', '3 on disk']);
    expect(disk.calls).toBe(3);
  });

  it('refuses a number of syncs in flight that is not a positive integer', () => {
    expect(() => new DurabilityGate(() => Promise.resolve(), { inFlight: 0 })).toThrow('syncs in flight must be a positive integer, not 0');
    expect(() => new DurabilityGate(() => Promise.resolve(), { inFlight: 1.5 })).toThrow('syncs in flight must be a positive integer, not 1.5');
  });

  it('is idle once the syncs it started have finished', async () => {
    const disk = manualSync();
    const gate = new DurabilityGate(disk.sync);
    void gate.committed();
    await drain();
    void gate.committed();
    let idle = false;
    const waiting = gate.idle().then(() => {
      idle = true;
    });
    disk.finish();
    await drain();
    expect(idle).toBe(false);
    disk.finish();
    await waiting;
    expect(idle).toBe(true);
    expect(disk.calls).toBe(2);
  });
});

describe('fileSync', () => {
  it('syncs a real file, opening it at the first sync and keeping it open for the next, and fails for a file that is not there', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'cc-sync-'));
    try {
      const path = join(directory, 'log');
      writeFileSync(path, 'frames');
      const log = fileSync(path);
      expect(openDescriptors(path)).toBe(0);
      await log.sync();
      expect(openDescriptors(path)).toBe(1);
      await log.sync();
      expect(openDescriptors(path)).toBe(1);
      await log.close();
      expect(openDescriptors(path)).toBe(0);
      await log.close();

      const missing = fileSync(join(directory, 'absent'));
      await expect(missing.sync()).rejects.toThrow(/ENOENT/);
      await missing.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
