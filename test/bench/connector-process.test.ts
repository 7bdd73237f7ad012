import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connectorEnvironment, processCpuMs } from '../../bench/connector-process.js';

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

describe('connectorEnvironment', () => {
  it('lets every deployment, the FX provider one included, keep a connection for the whole run', () => {
    const fx = connectorEnvironment({ CONNECTOR_MODE: 'fxp', DATABASE_URL: '/tmp/fx.db' }, 13203, { PATH: '/usr/bin', LOG_LEVEL: 'debug' });
    expect(fx).toStrictEqual({
      PATH: '/usr/bin',
      LOG_LEVEL: 'warn',
      OPERATIONS_PORT: '0',
      MAX_REQUESTS_PER_SOCKET: '1000000',
      CONNECTOR_MODE: 'fxp',
      DATABASE_URL: '/tmp/fx.db',
      INCOMING_PORT: '13203',
    });
    // The deployment's own settings, and the heap options, come after the defaults.
    expect(connectorEnvironment({ MAX_REQUESTS_PER_SOCKET: '500' }, 13003, {}, '--max-old-space-size=160')).toStrictEqual({
      NODE_OPTIONS: '--max-old-space-size=160',
      LOG_LEVEL: 'warn',
      OPERATIONS_PORT: '0',
      MAX_REQUESTS_PER_SOCKET: '500',
      INCOMING_PORT: '13003',
    });
  });
});
