import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { interceptCoreBanking } from '../../src/adapters/core-banking/intercept.js';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';
import { refundReference } from '../../src/domain/outgoing-references.js';
import { reportJson, type ReconciliationReport } from '../../src/aggregate/reconciliation.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { notification } from '../support/backend-bodies.js';
import { TEST_OPERATOR_TOKENS } from '../support/harness.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { acceptRefusedBySwitch, initiate, sendMoneyBody } from '../support/outgoing-bodies.js';
import { customerWith, reserveIncoming, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
/** The harness of the running test, if it started one (the command line's own tests start none). */
let running: Harness | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await database?.drop();
  database = undefined;
});

let build: ConnectorBuild | undefined;
beforeAll(async () => {
  build = await buildConnector();
}, 180_000);
afterAll(() => build?.remove());

const payee = customerWith((c) => c.status === 'active');

async function committed(amount: string): Promise<string> {
  const transferId = await reserveIncoming(h, amount);
  await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
  return transferId;
}

/** The reconciliation command of the built connector, as operator alice, against the harness (or another operations server). */
function reconcileCli(args: string[], url = h.operationsUrl, cwd = h.dataDir): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'reconcile', ...args, '--url', url],
      { env: { PATH: process.env['PATH'] ?? '', OPERATOR_TOKEN: TEST_OPERATOR_TOKENS.alice }, cwd },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
    );
  });
}

interface Report {
  counts: Record<string, number>;
  lines: Array<Record<string, unknown>>;
}

describe('daily reconciliation against the sandbox institution', () => {
  it.each(['SQLite', 'PostgreSQL'])('reports every seeded discrepancy by category, as JSON and CSV, and the command line writes the report (%s)', async (store) => {
    database = store === 'PostgreSQL' ? await createTestDatabase() : undefined;
    const env = { RECOVERY_ATTENTION_AFTER_ATTEMPTS: '1', ...(database === undefined ? {} : { DATABASE_URL: database.url }) };
    h = running = await startHarness({ env, overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['commit'], failures: 1, kind: 'unavailable' }) } });
    expect(h.app.database.dialect).toBe(store === 'PostgreSQL' ? 'postgres' : 'sqlite');
    const ledger = h.app.sandbox;
    if (ledger === undefined) throw new Error('sandbox expected');
    // Pending: the first commit fails, so this transfer is still COMMITTING.
    const pending = await committed('10');
    const matched = await committed('100');
    const reversed = await committed('20');
    const altered = await committed('30');
    // A bank-flow payment refunded after a switch error: the channel's debit and our refund.
    const { home, transferId } = await acceptRefusedBySwitch(h);

    // The institution's side, seeded: a credit taken back, a credit of another amount, and a credit
    // under a reference the connector never gave.
    await sql`update sandbox_holds set state = 'RELEASED' where reference = ${reversed}`.execute(h.app.database.reader());
    await sql`update sandbox_holds set amount = '2900' where reference = ${altered}`.execute(h.app.database.reader());
    await ledger.reserve('stranger-0001', { amount: '5', currency: 'ZMW' }, payee.accountId);
    await ledger.commit('stranger-0001', { amount: '5', currency: 'ZMW' }, payee.accountId);

    const answer = await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23');
    expect(answer.status).toBe(200);
    const report = answer.body as Report;
    expect(report.counts).toEqual({ matched: 3, missing_at_institution: 1, unknown_to_connector: 1, amount_mismatch: 1, pending: 1 });
    const pick = (line: Record<string, unknown>): unknown[] => [line['category'], line['reference'], line['direction'], line['connectorState'], line['expectedAmount'], line['institutionAmount']];
    const expected = [
      ['matched', home, 'customer-debit', 'REFUNDED', '100', '100'],
      ['matched', refundReference(transferId), 'customer-credit', 'REFUNDED', '100', '100'],
      ['matched', matched, 'customer-credit', 'COMMITTED', '99', '99'],
      ['missing_at_institution', reversed, 'customer-credit', 'COMMITTED', '19.8', null],
      ['unknown_to_connector', 'stranger-0001', 'customer-credit', null, null, '5'],
      ['amount_mismatch', altered, 'customer-credit', 'COMMITTED', '29.7', '29'],
      ['pending', pending, 'customer-credit', 'COMMITTING', '9.9', null],
    ];
    // Lines are sorted by category, then reference.
    const sortedMatched = expected.slice(0, 3).sort((a, b) => String(a[1]).localeCompare(String(b[1])));
    expect(report.lines.map(pick)).toEqual([...sortedMatched, ...expected.slice(3)]);
    expect(report.lines.find((line) => line['category'] === 'amount_mismatch')?.['note']).toBe('expected 29.7 ZMW, booked 29 ZMW');
    expect(report).toMatchObject({ period: { from: '2026-11-23T00:00:00.000Z', to: '2026-11-24T00:00:00.000Z' }, adapter: 'sandbox' });

    const csv = await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23&format=csv');
    const rows = String(csv.body).trimEnd().split('\r\n');
    expect(rows[0]).toBe('category,reference,direction,subject,subject_id,connector_state,currency,expected_amount,institution_amount,institution_id,booked_at,note');
    expect(rows).toHaveLength(8);
    expect(rows).toContain(`amount_mismatch,${altered},customer-credit,incoming_transfer,${altered},COMMITTED,ZMW,29.7,29,hold:${altered},2026-11-23T10:00:00.000Z,"expected 29.7 ZMW, booked 29 ZMW"`);
    expect(rows).toContain('unknown_to_connector,stranger-0001,customer-credit,,,,ZMW,,5,hold:stranger-0001,2026-11-23T10:00:00.000Z,no record of the connector carries this reference');

    // Another day: nothing of the 23rd shows.
    expect(((await h.callOperations('GET', '/operations/reconciliation?date=2026-11-22')).body as Report).counts).toEqual({ matched: 0, missing_at_institution: 0, unknown_to_connector: 0, amount_mismatch: 0, pending: 0 });
    expect(await h.callOperations('GET', '/operations/reconciliation?date=2026-13-01')).toEqual({ status: 400, body: { statusCode: '3100', message: 'Generic validation error: date: "2026-13-01" is not a day (YYYY-MM-DD)' } });

    const out = join(h.dataDir, 'recon.csv');
    expect(await reconcileCli(['--date', '2026-11-23', '--out', out])).toEqual({
      code: 3,
      stdout: `2026-11-23: matched 3, missing_at_institution 1, unknown_to_connector 1, amount_mismatch 1, pending 1\nreport: ${out}\n`,
      stderr: '',
    });
    expect(readFileSync(out, 'utf8')).toBe(String(csv.body));
  }, 60_000);

  it.each(['SQLite', 'PostgreSQL'])('a refund booked on one day whose payment became REFUNDED the next belongs to that next day, as its debit does (%s)', async (store) => {
    database = store === 'PostgreSQL' ? await createTestDatabase() : undefined;
    const env = database === undefined ? {} : { DATABASE_URL: database.url };
    h = running = await startHarness({ env, overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['refund'], failures: 1, kind: 'timeout' }) } });
    // The switch refuses the accept; the institution books the refund on the 23rd, its answer is lost.
    const { home, transferId } = await acceptRefusedBySwitch(h);
    expect((await new SqlOutgoingStore(h.app.database).findByHomeTransactionId(home))?.state).toBe('REFUNDING');
    // The next day the recovery worker refunds again under the same reference (paid once) and finishes.
    h.clock.advance(24 * 3600 * 1000);
    await h.app.outgoingRecovery.runOnce();
    expect((await new SqlOutgoingStore(h.app.database).findByHomeTransactionId(home))?.state).toBe('REFUNDED');

    const none = { matched: 0, missing_at_institution: 0, unknown_to_connector: 0, amount_mismatch: 0, pending: 0 };
    // The 23rd, when both movements were booked: the payment changed last on the 24th, so neither is the 23rd's.
    expect((await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23')).body).toMatchObject({ counts: none, lines: [] });
    const next = (await h.callOperations('GET', '/operations/reconciliation?date=2026-11-24')).body as Report;
    expect(next.counts).toEqual({ ...none, matched: 2 });
    const pick = (line: Record<string, unknown>): unknown[] => [line['category'], line['reference'], line['direction'], line['subjectId'], line['connectorState'], line['bookedAt']];
    const lines = [
      ['matched', home, 'customer-debit', home, 'REFUNDED', '2026-11-23T10:00:00.000Z'],
      ['matched', refundReference(transferId), 'customer-credit', home, 'REFUNDED', '2026-11-23T10:00:00.000Z'],
    ].sort((a, b) => String(a[1]).localeCompare(String(b[1])));
    expect(next.lines.map(pick)).toEqual(lines);
    expect(await reconcileCli(['--date', '2026-11-23', '--out', join(h.dataDir, 'day.csv')])).toEqual({
      code: 0,
      stdout: `2026-11-23: matched 0, missing_at_institution 0, unknown_to_connector 0, amount_mismatch 0, pending 0\nreport: ${join(h.dataDir, 'day.csv')}\n`,
      stderr: '',
    });
  }, 60_000);

  it('refuses, before reading the institution, a period with more records than RECONCILIATION_MAX_RECORDS, counting transfers and payments together', async () => {
    let listed = 0;
    h = running = await startHarness({
      env: { RECONCILIATION_MAX_RECORDS: '3' },
      overrides: {
        wrapCoreBanking: (inner) =>
          interceptCoreBanking(inner, (operation, call) => {
            if (operation === 'listMovements') listed += 1;
            return call();
          }),
      },
    });
    await committed('10');
    await committed('20');
    const body = sendMoneyBody();
    await initiate(h, body);
    // Three records: within the limit.
    const within = await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23');
    expect(within.status).toBe(200);
    expect((within.body as Report).counts).toEqual({ matched: 2, missing_at_institution: 0, unknown_to_connector: 0, amount_mismatch: 0, pending: 0 });
    expect(listed).toBe(1);
    // A fourth (a payment) is one too many.
    await initiate(h, sendMoneyBody());
    expect(await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23')).toEqual({
      status: 400,
      body: {
        statusCode: '3100',
        message: 'Generic validation error: more than 3 records in the period (RECONCILIATION_MAX_RECORDS); reconcile it in parts (from, to)',
      },
    });
    expect(listed).toBe(1);
    // The command line says why, and takes a period of its own (a busy day in parts).
    expect(await reconcileCli(['--date', '2026-11-23'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'the connector refused: HTTP 400 Generic validation error: more than 3 records in the period (RECONCILIATION_MAX_RECORDS); reconcile it in parts (from, to)\n',
    });
    const out = join(h.dataDir, 'early.csv');
    expect(await reconcileCli(['--from', '2026-11-22T00:00:00.000Z', '--to', '2026-11-22T06:00:00.000Z', '--out', out])).toEqual({
      code: 0,
      stdout: `2026-11-22T00:00:00.000Z..2026-11-22T06:00:00.000Z: matched 0, missing_at_institution 0, unknown_to_connector 0, amount_mismatch 0, pending 0\nreport: ${out}\n`,
      stderr: '',
    });
    expect(readFileSync(out, 'utf8').split('\r\n')[0]).toBe('category,reference,direction,subject,subject_id,connector_state,currency,expected_amount,institution_amount,institution_id,booked_at,note');
  }, 60_000);

  it('an adapter that cannot list transactions answers NotSupported', async () => {
    h = running = await startHarness({
      overrides: {
        wrapCoreBanking: (inner) => {
          const wrapped: CoreBanking = interceptCoreBanking(inner, (_operation, call) => call());
          const { listMovements: _unused, ...withoutListing } = wrapped;
          return withoutListing;
        },
      },
    });
    expect(await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23')).toEqual({
      status: 422,
      body: { statusCode: '2001', message: "Operation not supported by this institution: the sandbox adapter cannot list the institution's transactions" },
    });
  });
});

describe('npm run reconcile, against an operations server of its own', () => {
  let server: Server | undefined;
  let directory: string | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    directory = undefined;
  });

  /** An operations server answering the report as JSON, and a CSV request (which the command must not send) with 503; the paths asked. */
  async function operations(json: { status: number; body: string }): Promise<{ url: string; asked: string[] }> {
    const asked: string[] = [];
    server = createServer((request, response) => {
      asked.push(request.url ?? '');
      const answer = request.url?.includes('format=csv') === true ? { status: 503, body: JSON.stringify({ statusCode: '2003', message: 'Service currently unavailable: institution unavailable' }) } : json;
      response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' }).end(answer.body);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    directory = mkdtempSync(join(tmpdir(), 'cc-reconcile-'));
    return { url: `http://127.0.0.1:${address.port}`, asked };
  }

  const report: ReconciliationReport = {
    period: { from: '2026-11-23T00:00:00.000Z', to: '2026-11-24T00:00:00.000Z' },
    adapter: 'sandbox',
    generatedAt: '2026-11-24T01:00:00.000Z',
    counts: { matched: 1, missing_at_institution: 0, unknown_to_connector: 1, amount_mismatch: 0, pending: 0 },
    lines: [
      { category: 'matched', reference: 'tr-1', direction: 'customer-credit', subject: 'incoming_transfer', subjectId: 'tr-1', connectorState: 'COMMITTED', currency: 'ZMW', expectedAmount: '99', institutionAmount: '99', institutionId: 'hold:tr-1', bookedAt: '2026-11-23T10:00:00.000Z', note: '' },
      { category: 'unknown_to_connector', reference: '=stranger', direction: 'customer-credit', subject: null, subjectId: null, connectorState: null, currency: 'ZMW', expectedAmount: null, institutionAmount: '5', institutionId: 'hold:x', bookedAt: '2026-11-23T11:00:00.000Z', note: 'no record, of the connector' },
    ],
  };

  it('asks for the report once and writes its CSV, the counts and the exit code from that same report', async () => {
    const { url, asked } = await operations({ status: 200, body: [...reportJson(report)].join('') });
    const out = join(directory ?? '', 'day.csv');
    expect(await reconcileCli(['--date', '2026-11-23', '--out', out], url, directory)).toEqual({
      code: 3,
      stdout: `2026-11-23: matched 1, missing_at_institution 0, unknown_to_connector 1, amount_mismatch 0, pending 0\nreport: ${out}\n`,
      stderr: '',
    });
    expect(asked).toEqual(['/operations/reconciliation?date=2026-11-23']);
    expect(readFileSync(out, 'utf8')).toBe(
      'category,reference,direction,subject,subject_id,connector_state,currency,expected_amount,institution_amount,institution_id,booked_at,note\r\n' +
        'matched,tr-1,customer-credit,incoming_transfer,tr-1,COMMITTED,ZMW,99,99,hold:tr-1,2026-11-23T10:00:00.000Z,\r\n' +
        "unknown_to_connector,'=stranger,customer-credit,,,,ZMW,,5,hold:x,2026-11-23T11:00:00.000Z,\"no record, of the connector\"\r\n",
    );
    const json = join(directory ?? '', 'day.json');
    expect((await reconcileCli(['--date', '2026-11-23', '--format', 'json', '--out', json], url, directory)).code).toBe(3);
    expect(asked).toHaveLength(2);
    expect(readFileSync(json, 'utf8')).toBe(`${JSON.stringify(report, null, 2)}\n`);
  });

  it('a refusal exits 1 with the server\'s message and writes no report', async () => {
    const { url, asked } = await operations({ status: 503, body: JSON.stringify({ statusCode: '2003', message: 'Service currently unavailable: institution unavailable' }) });
    const out = join(directory ?? '', 'day.csv');
    expect(await reconcileCli(['--date', '2026-11-23', '--out', out], url, directory)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'the connector refused: HTTP 503 Service currently unavailable: institution unavailable\n',
    });
    expect(asked).toEqual(['/operations/reconciliation?date=2026-11-23']);
    expect(existsSync(out)).toBe(false);
  });

  it.each([
    ['not JSON', 'upstream gone'],
    ['counts that are not its lines\'', [...reportJson({ ...report, counts: { ...report.counts, unknown_to_connector: 0 } })].join('')],
    ['a line without its note', JSON.stringify({ ...report, lines: [{ ...report.lines[0], note: undefined }, report.lines[1]] })],
  ])('an answer of 200 that is no report (%s) exits 1 and writes nothing', async (_case, body) => {
    const { url } = await operations({ status: 200, body });
    const out = join(directory ?? '', 'day.csv');
    expect(await reconcileCli(['--date', '2026-11-23', '--out', out], url, directory)).toEqual({
      code: 1,
      stdout: '',
      stderr: "the connector's answer is not a reconciliation report (HTTP 200); nothing written\n",
    });
    expect(existsSync(out)).toBe(false);
  });
});
