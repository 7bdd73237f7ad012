import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import { sql } from 'kysely';
import type { AnySchema } from '../../src/adapters/store/sql-database.js';
import { SqliteDatabase } from '../../src/adapters/store/sqlite-database.js';
import { INCOMING_TRANSFERS, OUTGOING_PAYMENTS, stateCounts } from '../../src/adapters/store/state-counts.js';
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
    const seed = crashSeed(4701);
    console.log(`crash harness (sqlite) seed=${seed}`);
    const path = join(workDir, 'connector.db');
    const result = await runCrashHarness({
      seed,
      kills: KILLS,
      databaseUrl: path,
      openDatabase: () => Promise.resolve(new SqliteDatabase(path)),
      faultRate: '0.2',
      mainPath: build?.mainPath ?? '',
      testMainPath: build?.testMainPath ?? '',
      workDir,
      workers: 6,
      maxFlows: 3000,
      drainDeadlineMs: 60_000,
      outgoingPayments: 120,
    });
    console.log(describeRun('sqlite', seed, result));
    expectCrashSafe(result, demoAccounts, KILLS);
    // The metrics' figures by state, kept by triggers through every kill, are the tables' own.
    const database = new SqliteDatabase(path);
    try {
      for (const counted of [INCOMING_TRANSFERS, OUTGOING_PAYMENTS]) {
        const rows = await sql<{ state: string; count: number }>`
          select state, count(*) as count from ${sql.table(counted.table)} group by state order by state`.execute(database.reader<AnySchema>());
        expect(rows.rows.length).toBeGreaterThan(1);
        expect(await stateCounts(database, counted)).toEqual(rows.rows.map((row) => ({ state: row.state, count: Number(row.count) })));
      }
    } finally {
      await database.close();
    }
  }, 300_000);
});
