import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { seededRandom } from '../support/seeded-random.js';
import { openDatabase } from '../../src/adapters/store/open-database.js';
import type { SqlDatabase } from '../../src/adapters/store/sql-database.js';
import { formatMinorUnits, toMinorUnits } from '../../src/domain/money.js';
import { ExchangeLedger } from '../../src/fxp/adapters/sandbox-exchange/exchange-ledger.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { ConnectorChild, freePort } from '../crash/support/connector-child.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { fxQuoteBody, fxTransferBody } from './support/fxp-harness.js';

/**
 * Crash safety of FX provider mode: the connector runs as its own process (CONNECTOR_MODE=fxp)
 * on a real database while concurrent conversion flows retry every call as the switch
 * connector does; SIGKILL at seeded random moments, a restart on the same database after each.
 * Then every conversion must have ended as its flow asked (committed or released), each exactly
 * once on the exchange's books, with nothing held and the books balanced per currency.
 */

const KILLS = Number(process.env['FX_CRASH_KILLS'] ?? '10');
const FLOWS = 600;

let build: ConnectorBuild | undefined;
let workDir = '';
beforeAll(async () => {
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-fx-crash-'));
}, 120_000);
afterAll(() => {
  build?.remove();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** The current process's URL, swapped by the killer; calls retry on a refused connection or a 5xx. */
class Target {
  url = '';
}

async function call(target: Target, method: 'POST' | 'PUT', path: string, body: unknown): Promise<Answer> {
  for (let attempt = 0; attempt < 2000; attempt += 1) {
    try {
      const answer = await request(`${target.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), headersTimeout: 10_000, bodyTimeout: 10_000 });
      const text = await answer.body.text();
      if (answer.statusCode < 500) return { status: answer.statusCode, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
    } catch {
      // refused or cut off by the kill: the switch connector retries
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${method} ${path}: never answered`);
}

async function runCrashes(databaseUrl: string, seed: number): Promise<{ kills: number; flows: Array<{ id: string; commit: boolean; source: string; target: string }>; problems: string[] }> {
  const random = seededRandom(seed);
  const port = await freePort();
  const env = {
    CONNECTOR_MODE: 'fxp',
    DATABASE_URL: databaseUrl,
    FX_QUOTE_EXPIRY_SECONDS: '3600',
    RECOVERY_INTERVAL_MS: '200',
    RECOVERY_BASE_BACKOFF_MS: '100',
    LOG_LEVEL: 'warn',
  };
  const start = (): Promise<ConnectorChild> => ConnectorChild.start({ mainPath: build?.mainPath ?? '', cwd: workDir, env, incomingPort: port });
  const target = new Target();
  let child = await start();
  target.url = child.url;
  const problems: string[] = [];
  const flows: Array<{ id: string; commit: boolean; source: string; target: string }> = [];
  let running = true;
  const flow = async (index: number): Promise<void> => {
    const quote = fxQuoteBody({ amountType: index % 2 === 0 ? 'SEND' : 'RECEIVE', source: 'ZMW', target: 'MWK', amount: index % 2 === 0 ? String(20 + index) : String(2000 + index * 7), expiration: '2099-01-01T00:00:00.000Z' });
    const quoted = await call(target, 'POST', '/fxQuotes', quote);
    if (quoted.status !== 200) return void problems.push(`quote ${index}: ${JSON.stringify(quoted)}`);
    const again = await call(target, 'POST', '/fxQuotes', quote);
    if (JSON.stringify(again) !== JSON.stringify(quoted)) problems.push(`quote ${index} answered differently on a retry`);
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    const id = String(transfer['commitRequestId']);
    const reserved = await call(target, 'POST', '/fxTransfers', transfer);
    if (reserved.status !== 200) return void problems.push(`transfer ${index}: ${JSON.stringify(reserved)}`);
    const commit = index % 4 !== 3;
    const notified = await call(target, 'PUT', `/fxTransfers/${id}`, { conversionState: commit ? 'COMMITTED' : 'ABORTED' });
    if (notified.status !== 200) return void problems.push(`notify ${index}: ${JSON.stringify(notified)}`);
    const terms = (quoted.body as { conversionTerms: { sourceAmount: { amount: string }; targetAmount: { amount: string } } }).conversionTerms;
    flows.push({ id, commit, source: terms.sourceAmount.amount, target: terms.targetAmount.amount });
  };
  let kills = 0;
  const killer = (async () => {
    while (running && kills < KILLS) {
      await new Promise((resolve) => setTimeout(resolve, 30 + Math.floor(random() * 250)));
      if (!running) break;
      if (await child.kill()) kills += 1;
      child = await start();
      target.url = child.url;
    }
  })();
  const queue = Array.from({ length: FLOWS }, (_, index) => index);
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let index = queue.shift(); index !== undefined; index = queue.shift()) await flow(index);
    }),
  );
  running = false;
  await killer;
  // The last process runs on: its recovery worker finishes what the kills cut off.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await child.stop();
  return { kills, flows, problems };
}

async function checkBooks(database: SqlDatabase, flows: Array<{ id: string; commit: boolean; source: string; target: string }>): Promise<void> {
  const rows = await database.reader<{ fx_conversions: { commit_request_id: string; state: string } }>().selectFrom('fx_conversions').select(['commit_request_id', 'state']).execute();
  const states = new Map(rows.map((row) => [row.commit_request_id, row.state]));
  expect(flows.filter((flow) => states.get(flow.id) !== (flow.commit ? 'COMMITTED' : 'ABORTED')).map((flow) => `${flow.id} ${states.get(flow.id)}`)).toEqual([]);
  const postings = await database.reader<{ fx_exchange_postings: { movement_id: string } }>().selectFrom('fx_exchange_postings').select('movement_id').execute();
  expect(postings.filter((row) => row.movement_id.startsWith('commit:')).length).toBe(flows.filter((flow) => flow.commit).length * 4);
  const ledger = new ExchangeLedger(database, () => new Date());
  const balances = Object.fromEntries((await ledger.balances()).map((row) => [row.accountId, `${row.balance}/${row.held}`]));
  const source = flows.filter((flow) => flow.commit).reduce((sum, flow) => sum + toMinorUnits(flow.source, 'ZMW'), 0n);
  const target = flows.filter((flow) => flow.commit).reduce((sum, flow) => sum + toMinorUnits(flow.target, 'MWK'), 0n);
  expect(balances['liquidity-zmw']).toBe(`${formatMinorUnits(toMinorUnits('1000000', 'ZMW') + source, 'ZMW')}/0`);
  expect(balances['liquidity-mwk']).toBe(`${formatMinorUnits(toMinorUnits('50000000', 'MWK') - target, 'MWK')}/0`);
  expect(await ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
}

describe('FX provider mode under SIGKILL', () => {
  it('on SQLite: every conversion ends as asked, each once, books balanced', async () => {
    const seed = Number(process.env['CRASH_SEED'] ?? '4711');
    const path = join(workDir, 'fx.db');
    const run = await runCrashes(path, seed);
    console.log(`fx crash (sqlite) seed=${seed}: ${run.kills} kills, ${run.flows.length} conversions (${run.flows.filter((flow) => flow.commit).length} committed, ${run.flows.filter((flow) => !flow.commit).length} released)`);
    expect(run.problems).toEqual([]);
    expect(run.flows).toHaveLength(FLOWS);
    expect(run.kills).toBeGreaterThanOrEqual(5);
    const database = await openDatabase({ kind: 'sqlite', location: path, poolMax: 1 });
    try {
      await checkBooks(database, run.flows);
    } finally {
      await database.close();
    }
  }, 240_000);

  it('on PostgreSQL: every conversion ends as asked, each once, books balanced', async () => {
    const seed = Number(process.env['CRASH_SEED'] ?? '4712');
    const testDatabase: TestDatabase = await createTestDatabase();
    try {
      const run = await runCrashes(testDatabase.url, seed);
      console.log(`fx crash (postgres) seed=${seed}: ${run.kills} kills, ${run.flows.length} conversions (${run.flows.filter((flow) => flow.commit).length} committed, ${run.flows.filter((flow) => !flow.commit).length} released)`);
      expect(run.problems).toEqual([]);
      expect(run.flows).toHaveLength(FLOWS);
      const database = await openDatabase({ kind: 'postgres', location: testDatabase.url, poolMax: 2 });
      try {
        await checkBooks(database, run.flows);
      } finally {
        await database.close();
      }
    } finally {
      await testDatabase.drop();
    }
  }, 240_000);
});
