import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../../bench/connector-process.js';

describe('processCpuMs', () => {
  it('adds utime and stime, counted after a command name that holds spaces and parentheses', () => {
    // Fields from proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194304 9123 0 3 0 1234 56 0 0 20 0 11 0 777 1000000 5000';
    expect(processCpuMs(stat)).toBe(12_900);
  });

  it('refuses a line it cannot read', () => {
    expect(() => processCpuMs('4242 (node) S 1')).toThrow('unreadable /proc stat line: 4242 (node) S 1');
  });

  it('reads the CPU a real process has used', async () => {
    // Spins until it has used 300 ms of CPU by its own count (getrusage), then waits to be read.
    const spin = 'let used; do { used = process.cpuUsage(); } while (used.user + used.system < 300_000); setInterval(() => {}, 1000); console.log("spun")';
    const child = spawn(process.execPath, ['-e', spin], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const used = processCpuMs(readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
      // At least the spin, less /proc's rounding down to whole 10 ms ticks (user and system each).
      expect(used).toBeGreaterThanOrEqual(280);
      expect(used).toBeLessThan(3_000);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
