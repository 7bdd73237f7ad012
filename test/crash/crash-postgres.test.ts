import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import { PostgresDatabase } from '../../src/adapters/store/postgres-database.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { buildConnector, type ConnectorBuild } from './support/connector-build.js';
import { crashSeed, runCrashHarness } from './support/crash-run.js';
import { describeRun, expectCrashSafe } from './support/expect-crash-safe.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '30');

let build: ConnectorBuild | undefined;
let database: TestDatabase | undefined;
let workDir = '';
beforeAll(async () => {
  // A missing server fails here, loudly: the PostgreSQL suites never skip.
  database = await createTestDatabase();
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-crash-pg-'));
}, 120_000);
afterAll(async () => {
  build?.remove();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
  await database?.drop();
});

describe('crash safety on PostgreSQL', () => {
  it('SIGKILL at random moments under retried, duplicated traffic and a failing institution loses and doubles no money', async () => {
    expect(build).toBeDefined();
    expect(database).toBeDefined();
    const url = database?.url ?? '';
    const seed = crashSeed(4702);
    console.log(`crash harness (postgres) seed=${seed}`);
    const result = await runCrashHarness({
      seed,
      kills: KILLS,
      databaseUrl: url,
      openDatabase: () => Promise.resolve(new PostgresDatabase({ url, poolMax: 2 })),
      faultRate: '0.2',
      mainPath: build?.mainPath ?? '',
      testMainPath: build?.testMainPath ?? '',
      workDir,
      workers: 6,
      maxFlows: 3000,
      drainDeadlineMs: 60_000,
      outgoingPayments: 120,
    });
    console.log(describeRun('postgres', seed, result));
    expectCrashSafe(result, demoAccounts, KILLS);
  }, 300_000);
});
