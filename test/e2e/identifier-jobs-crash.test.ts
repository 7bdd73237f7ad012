import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startFakeSwitchServer, type FakeSwitchServer } from '../../bench/fake-switch-server.js';
import { openDatabase } from '../../src/adapters/store/open-database.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { ConnectorChild, freePort } from '../crash/support/connector-child.js';

/**
 * A bulk registration cut off by SIGKILL, more than once: after the restarts the job finishes,
 * every line has its result, every identifier is in the registry once and registered at the
 * platform once. A registration whose answer the kill cut off is sent again (the platform
 * treats a repeat as an update): only identifiers in flight at a kill can be sent twice.
 */

const LINES = 6000;
const KEY = 'bulk-crash-channel-key-0123456789';
let build: ConnectorBuild | undefined;
let workDir = '';
let fakeSwitch: FakeSwitchServer | undefined;
beforeAll(async () => {
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-bulk-crash-'));
  fakeSwitch = await startFakeSwitchServer();
}, 120_000);
afterAll(async () => {
  build?.remove();
  await fakeSwitch?.close();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

describe('bulk registration under SIGKILL', () => {
  it('finishes after the restarts with every line accounted for and each identifier registered once', async () => {
    const msisdn = (index: number): string => `2609${String(index).padStart(8, '0')}`;
    const accountsFile = join(workDir, 'accounts.json');
    writeFileSync(accountsFile, JSON.stringify({
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000' },
      customers: Array.from({ length: LINES }, (_, index) => ({ accountId: `acc-${index}`, idType: 'MSISDN', idValue: msisdn(index), firstName: 'Bulk', lastName: `C${index}`, status: 'active', balance: '0' })),
    }));
    const port = await freePort();
    const outgoingPort = await freePort();
    const database = join(workDir, 'connector.db');
    const env = {
      DATABASE_URL: database,
      SANDBOX_ACCOUNTS_FILE: accountsFile,
      SDK_BASE_URL: fakeSwitch?.url ?? '',
      OUTGOING_PORT: String(outgoingPort),
      OPERATIONS_PORT: '0',
      OUTGOING_API_KEY: KEY,
      CALLBACK_SECRET: 'bulk-crash-callback-secret-0123456789',
      RECOVERY_INTERVAL_MS: '200',
      IDENTIFIER_BATCH_SIZE: '500',
      // A killed job's leased batch is free again 7 s later.
      SDK_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'warn',
    };
    const start = (): Promise<ConnectorChild> => ConnectorChild.start({ mainPath: build?.mainPath ?? '', cwd: workDir, env, incomingPort: port });
    let child = await start();
    const outgoing = `http://127.0.0.1:${outgoingPort}`;
    const csv = ['idType,idValue,idSubValue,consentBy,consentAt,consentChannel', ...Array.from({ length: LINES }, (_, index) => `MSISDN,${msisdn(index)},,bulk,2026-11-20T08:00:00Z,branch`)].join('\n');
    const submitted = await request(`${outgoing}/identifiers/jobs?action=register`, { method: 'POST', headers: { 'content-type': 'text/csv', 'x-api-key': KEY }, body: csv });
    expect(submitted.statusCode).toBe(202);
    const jobId = String(((await submitted.body.json()) as { jobId: string }).jobId);

    const viewOf = async (): Promise<{ state: string; processed: number; outcomes: Record<string, number> }> => {
      const answer = await request(`${outgoing}/identifiers/jobs/${jobId}`, { headers: { 'x-api-key': KEY } });
      return (await answer.body.json()) as { state: string; processed: number; outcomes: Record<string, number> };
    };
    let kills = 0;
    for (const delay of [400, 700, 900]) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      if ((await viewOf()).state === 'DONE') break;
      if (await child.kill()) kills += 1;
      child = await start();
    }
    let view = await viewOf();
    const deadline = Date.now() + 120_000;
    while (view.state !== 'DONE' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      view = await viewOf();
    }
    await child.stop();
    console.log(`bulk registration under SIGKILL: ${kills} kills, ${LINES} lines, outcomes ${JSON.stringify(view.outcomes)}`);
    expect(kills).toBeGreaterThanOrEqual(1);
    expect(view).toMatchObject({ state: 'DONE', processed: LINES, outcomes: { REGISTERED: LINES } });

    const db = await openDatabase({ kind: 'sqlite', location: database, poolMax: 1 });
    try {
      const rows = await db.reader<{ identifier_registry: { state: string } }>().selectFrom('identifier_registry').select('state').execute();
      expect(rows.length).toBe(LINES);
      expect(rows.every((row) => row.state === 'REGISTERED')).toBe(true);
    } finally {
      await db.close();
    }
    const sent = (fakeSwitch?.requests ?? []).filter((call) => call.method === 'POST' && call.path === '/accounts').flatMap((call) => (call.body as Array<{ idValue: string }>).map((item) => item.idValue));
    const counts = new Map<string, number>();
    for (const value of sent) counts.set(value, (counts.get(value) ?? 0) + 1);
    expect(fakeSwitch?.registeredIdentifiers.size).toBe(LINES);
    // Sent again only if a kill cut off the platform's answer: at most one batch per kill.
    const repeated = [...counts.values()].filter((count) => count > 1).length;
    console.log(`bulk registration under SIGKILL: ${sent.length} identifiers sent, ${repeated} of them twice (answers cut off by a kill)`);
    expect(repeated).toBeLessThanOrEqual(kills * 500);
  }, 300_000);
});
