import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import { SqliteDatabase } from '../../src/adapters/store/sqlite-database.js';
import { buildConnector, type ConnectorBuild } from './support/connector-build.js';
import { crashSeed, runCrashHarness } from './support/crash-run.js';
import { describeRun, expectCrashSafe } from './support/expect-crash-safe.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '30');

let build: ConnectorBuild | undefined;
let workDir = '';
beforeAll(async () => {
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-crash-sqlite-'));
}, 120_000);
afterAll(() => {
  build?.remove();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

describe('crash safety on SQLite', () => {
  it('SIGKILL at random moments under retried, duplicated traffic and a failing institution loses and doubles no money', async () => {
    expect(build).toBeDefined();
    const seed = crashSeed();
    console.log(`crash harness (sqlite) seed=${seed}`);
    const path = join(workDir, 'connector.db');
    const result = await runCrashHarness({
      seed,
      kills: KILLS,
      databaseUrl: path,
      openDatabase: () => Promise.resolve(new SqliteDatabase(path)),
      faultRate: '0.2',
      mainPath: build?.mainPath ?? '',
      workDir,
      workers: 6,
      maxFlows: 3000,
      drainDeadlineMs: 60_000,
      outgoingPayments: 120,
    });
    console.log(describeRun('sqlite', seed, result));
    expectCrashSafe(result, demoAccounts, KILLS);
  }, 300_000);
});
