import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import type { AnySchema } from '../../src/adapters/store/sql-database.js';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { auditSubjectId, IdentifierStore } from '../../src/identifiers/identifier-store.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { startFakeSwitch } from '../support/fake-switch.js';
import { GatedSwitch } from '../support/gated-switch.js';
import { ManualClock } from '../support/harness.js';
import { createTestDatabase } from '../support/postgres.js';
import { startHarness, type Harness } from '../support/sandbox-harness.js';
import { request } from 'undici';

/** Bulk opt-in and opt-out: the upload endpoint, its jobs, and the command line in front of it. */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

let build: ConnectorBuild | undefined;
beforeAll(async () => {
  build = await buildConnector();
}, 120_000);
afterAll(() => build?.remove());

const HEADER = 'idType,idValue,idSubValue,consentBy,consentAt,consentChannel';
const FILE = [
  HEADER,
  'MSISDN,260971000001,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971000002,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971000003,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,0971000006,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971999999,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971000006,,branch agent 7,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971000008,,,2026-11-20T08:00:00Z,branch',
  'MSISDN,260971000001,,branch agent 7,2026-11-20T08:00:00Z,branch',
  '',
].join('\n');

/** The report of FILE's job, as the first test leaves it. */
const REPORT_CSV = [
  'line,idType,idValue,idSubValue,outcome,message',
  '2,MSISDN,260971000001,,REGISTERED,',
  '3,MSISDN,260971000002,,REGISTERED,',
  '4,MSISDN,260971000003,,REFUSED,Payer rejected the payment: the account is barred: only active accounts are registered',
  '5,MSISDN,0971000006,,INVALID,"Generic validation error: MSISDN must be an E.164 number in international format, without a leading 0 or 00"',
  '6,MSISDN,260971999999,,REFUSED,Party not found: no customer of the institution has this identifier',
  '7,MSISDN,260971000006,,FAILED,3003 already registered by another FSP',
  '8,,,,INVALID,"needs the consent: by, at (ISO 8601) and channel"',
  '9,MSISDN,260971000001,,REGISTERED,',
  '',
].join('\n');

/**
 * A bulk upload sent by hand: its headers now, with `Expect: 100-continue`, and its body when the
 * test says. Once the server has answered 100 Continue, the request has reached the route.
 */
async function heldUpload(harness: Harness): Promise<{ send(body: string): Promise<number>; drop(): void }> {
  const socket = net.connect(Number(new URL(harness.outgoingUrl).port), '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  socket.write(
    `POST /identifiers/jobs?action=register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\nX-Api-Key: ${TEST_CHANNEL_API_KEY}\r\n` +
      'Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n',
  );
  await vi.waitFor(() => expect(received).toContain('HTTP/1.1 100 Continue'));
  return {
    send: async (body) => {
      socket.write(`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`);
      const status = await vi.waitFor(() => {
        const found = /HTTP\/1\.1 ([2-5][0-9]{2}) /.exec(received);
        if (found?.[1] === undefined) throw new Error('no answer yet');
        return Number(found[1]);
      });
      socket.destroy();
      return status;
    },
    drop: () => socket.destroy(),
  };
}

async function upload(harness: Harness, body: string, type = 'text/csv', action = 'register'): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await request(`${harness.outgoingUrl}/identifiers/jobs?action=${action}`, { method: 'POST', headers: { 'content-type': type, 'x-api-key': TEST_CHANNEL_API_KEY }, body });
  return { status: answer.statusCode, body: (await answer.body.json()) as Record<string, unknown> };
}

async function done(harness: Harness, jobId: string): Promise<Record<string, unknown>> {
  await harness.app.identifierJobs.idle();
  return (await harness.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body as Record<string, unknown>;
}

/** A job's lines as GET /identifiers/jobs/{jobId}/lines answers them. */
async function jobLines(harness: Harness, jobId: unknown): Promise<Array<Record<string, unknown>>> {
  return ((await harness.callOutgoing('GET', `/identifiers/jobs/${String(jobId)}/lines`)).body as { lines: Array<Record<string, unknown>> }).lines;
}

function accountsPosts(harness: Harness): unknown[] {
  return harness.fakeSwitch.requests.filter((request) => request.method === 'POST' && request.path === '/accounts').map((request) => request.body);
}

describe('bulk identifier registration', () => {
  it('registers a CSV file in batches per currency, keeps every line\'s result, and a re-run of the file sends nothing registered again', async () => {
    h = await startHarness({ env: { IDENTIFIER_BATCH_SIZE: '2' } });
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'already registered by another FSP' });
    const submitted = await upload(h, FILE);
    expect(submitted.status).toBe(202);
    const jobId = String(submitted.body['jobId']);
    expect(await done(h, jobId)).toEqual({
      jobId,
      action: 'register',
      state: 'DONE',
      total: 8,
      processed: 8,
      outcomes: { FAILED: 1, INVALID: 2, REFUSED: 2, REGISTERED: 3 },
    });
    // Three to send, two per call: two calls; the repeated line was the same identifier.
    expect(accountsPosts(h)).toEqual([
      [{ idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW' }, { idType: 'MSISDN', idValue: '260971000002', currency: 'ZMW' }],
      [{ idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW' }],
    ]);
    const lines = await jobLines(h, jobId);
    expect(lines.map((line) => [line['line'], line['outcome'], line['message']])).toEqual([
      [2, 'REGISTERED', null],
      [3, 'REGISTERED', null],
      [4, 'REFUSED', 'Payer rejected the payment: the account is barred: only active accounts are registered'],
      [5, 'INVALID', 'Generic validation error: MSISDN must be an E.164 number in international format, without a leading 0 or 00'],
      [6, 'REFUSED', 'Party not found: no customer of the institution has this identifier'],
      [7, 'FAILED', '3003 already registered by another FSP'],
      [8, 'INVALID', 'needs the consent: by, at (ISO 8601) and channel'],
      [9, 'REGISTERED', null],
    ]);
    // The report is read a page at a time (5,000 lines a page; 3 here), in line order, whole.
    const pages: number[][] = [];
    for await (const page of h.app.identifierJobs.linePages(jobId, 3)) pages.push(page.map((line) => line.line));
    expect(pages).toEqual([[2, 3, 4], [5, 6, 7], [8, 9]]);
    const json = await request(`${h.outgoingUrl}/identifiers/jobs/${jobId}/lines`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } });
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(await json.body.text())).toEqual({ lines });
    const csv = await request(`${h.outgoingUrl}/identifiers/jobs/${jobId}/lines?format=csv`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } });
    expect(csv.headers['content-type']).toBe('text/csv');
    expect(await csv.body.text()).toBe(REPORT_CSV);
    expect(await (await request(`${h.outgoingUrl}/identifiers/jobs/${'0'.repeat(32)}/lines?format=csv`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } })).body.text()).toBe(
      'line,idType,idValue,idSubValue,outcome,message\n',
    );
    // The same file again, its job DONE: a new run of it. What is registered is not sent again;
    // the identifier the platform refused is asked again (and refused again).
    const again = await upload(h, FILE);
    expect(again.body['jobId']).toMatch(/^[0-9a-f]{32}$/);
    expect(again.body['jobId']).not.toBe(jobId);
    expect(await done(h, String(again.body['jobId']))).toMatchObject({ state: 'DONE', outcomes: { FAILED: 1, INVALID: 2, REFUSED: 2, REGISTERED: 3 } });
    expect(accountsPosts(h)).toEqual([
      [{ idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW' }, { idType: 'MSISDN', idValue: '260971000002', currency: 'ZMW' }],
      [{ idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW' }],
      [{ idType: 'MSISDN', idValue: '260971000006', currency: 'ZMW' }],
    ]);

    // Bulk opt-out, as JSON lines.
    const optOut = ['{"idType":"MSISDN","idValue":"260971000001","consent":{"by":"customer","at":"2026-11-24T08:00:00Z","channel":"ussd"}}', '{"idType":"MSISDN","idValue":"260971000005","consentBy":"c","consentAt":"2026-11-24T08:00:00Z","consentChannel":"ussd"}'].join('\n');
    const out = await upload(h, optOut, 'application/x-ndjson', 'opt-out');
    expect(await done(h, String(out.body['jobId']))).toMatchObject({ action: 'opt-out', state: 'DONE', total: 2, outcomes: { DEREGISTERED: 1, REFUSED: 1 } });
    expect([...h.fakeSwitch.registeredIdentifiers].sort()).toEqual(['MSISDN/260971000002']);
  });

  it('reads a job\'s report a page at a time on PostgreSQL too', async () => {
    const database = await createTestDatabase();
    try {
      const harness = await startHarness({ env: { DATABASE_URL: database.url, IDENTIFIER_BATCH_SIZE: '2' } });
      h = harness;
      harness.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'already registered by another FSP' });
      const jobId = String((await upload(harness, FILE)).body['jobId']);
      expect(await done(harness, jobId)).toMatchObject({ state: 'DONE', outcomes: { FAILED: 1, INVALID: 2, REFUSED: 2, REGISTERED: 3 } });
      const pages: number[][] = [];
      for await (const page of harness.app.identifierJobs.linePages(jobId, 3)) pages.push(page.map((line) => line.line));
      expect(pages).toEqual([[2, 3, 4], [5, 6, 7], [8, 9]]);
      const csv = await request(`${harness.outgoingUrl}/identifiers/jobs/${jobId}/lines?format=csv`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } });
      expect({ status: csv.statusCode, text: await csv.body.text() }).toEqual({ status: 200, text: REPORT_CSV });
    } finally {
      await h?.close();
      h = undefined;
      await database.drop();
    }
  });

  it('reads one bulk file at a time: another sent meanwhile is refused before its body is read, and the next once the first is answered (or dropped) is taken', async () => {
    const harness = await startHarness();
    h = harness;
    const busy = {
      status: 503,
      body: { statusCode: '2003', message: 'Service currently unavailable: another bulk file is being read and stored; send this one when it is answered' },
    };
    // The first file's request is in (the server has said 100 Continue), its body not yet sent.
    const first = await heldUpload(harness);
    expect(await upload(harness, FILE)).toEqual(busy);
    expect(await first.send(`${HEADER}\nMSISDN,260971000001,,branch agent 7,2026-11-20T08:00:00Z,branch\n`)).toBe(202);
    expect((await upload(harness, FILE)).status).toBe(202);
    // A file whose sender goes away half way frees the route too.
    const dropped = await heldUpload(harness);
    expect(await upload(harness, FILE)).toEqual(busy);
    dropped.drop();
    await vi.waitFor(async () => expect((await upload(harness, FILE)).status).toBe(202));
  });

  it('a job cut off by a restart resumes after it and registers each identifier once', async () => {
    h = await startHarness();
    const dataDir = h.dataDir;
    const submitted = await upload(h, [HEADER, 'MSISDN,260971000001,,a,2026-11-20T08:00:00Z,app', 'MSISDN,260971000002,,a,2026-11-20T08:00:00Z,app'].join('\n'));
    const jobId = String(submitted.body['jobId']);
    await h.app.identifierJobs.idle();
    // As if the process died before the second line was read: put it back to PENDING and the job to RUNNING.
    await h.app.database.transaction<{ identifier_job_lines: { outcome: string; job_id: string; line: number }; identifier_jobs: { state: string; job_id: string } }, void>(async (trx) => {
      await trx.updateTable('identifier_job_lines').set({ outcome: 'PENDING' }).where('job_id', '=', jobId).where('line', '=', 3).execute();
      await trx.updateTable('identifier_jobs').set({ state: 'RUNNING' }).where('job_id', '=', jobId).execute();
    });
    const fakeSwitch = h.fakeSwitch;
    await h.stop();
    const second = await startHarness({ dataDir, fakeSwitch });
    h = second;
    expect(await second.app.identifierJobs.resumeUnfinished()).toBe(1);
    expect(await done(second, jobId)).toMatchObject({ state: 'DONE', outcomes: { REGISTERED: 2 } });
    // The second identifier was registered in the first run already: nothing was sent twice.
    expect(accountsPosts(second)).toHaveLength(1);
  });

  it('a job under way at a stop ends between two pages of lines, and the next start resumes and finishes it', async () => {
    h = await startHarness();
    const dataDir = h.dataDir;
    // No such customers: each line is REFUSED, 500 lines a page.
    const lines = Array.from({ length: 1500 }, (_, index) => `MSISDN,2609${String(index).padStart(8, '0')},,a,2026-11-20T08:00:00Z,app`);
    const submitted = await upload(h, [HEADER, ...lines].join('\n'));
    expect(submitted.status).toBe(202);
    const jobId = String(submitted.body['jobId']);
    const fakeSwitch = h.fakeSwitch;
    // Before, the stop waited for the whole job: it was DONE with its 1500 lines once the stop ended.
    await h.stop();
    const second = await startHarness({ dataDir, fakeSwitch });
    h = second;
    const left = (await second.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body as Record<string, unknown>;
    expect(left['state']).toBe('RUNNING');
    expect(Number(left['processed'])).toBeLessThanOrEqual(500);
    expect(await second.app.identifierJobs.resumeUnfinished()).toBe(1);
    expect(await done(second, jobId)).toMatchObject({ state: 'DONE', total: 1500, processed: 1500, outcomes: { REFUSED: 1500 } });
  });

  it('a job stopped by an institution outage is finished by the recovery pass, whose changes the audit trail records as recovery', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['identifierEligibility'], failures: 1, kind: 'unavailable' }) } });
    const submitted = await upload(h, [HEADER, 'MSISDN,260971000001,,a,2026-11-20T08:00:00Z,app', 'MSISDN,260971000002,,a,2026-11-20T08:00:00Z,app'].join('\n'));
    const jobId = String(submitted.body['jobId']);
    expect(await done(h, jobId)).toMatchObject({ state: 'RUNNING' });
    expect(await h.app.identifierJobs.resumeUnfinished()).toBe(1);
    expect(await done(h, jobId)).toMatchObject({ state: 'DONE', outcomes: { REGISTERED: 2 } });
    const harness = h;
    const histories = await Promise.all(['260971000001', '260971000002'].map(async (idValue) => (await harness.app.audit.history('identifier', auditSubjectId({ idType: 'MSISDN', idValue }))).map((event) => [event.event, event.fromState, event.toState, event.cause])));
    // One line's eligibility check met the outage (the first to reach it, whichever line that
    // was): the resumed job created its record. The other line's record was created by the
    // upload. The resumed job sent both to the platform.
    expect(histories).toHaveLength(2);
    expect(histories).toEqual(
      expect.arrayContaining([
        [
          ['created', null, 'REQUESTED', 'recovery'],
          ['transition', 'REQUESTED', 'REGISTERED', 'recovery'],
        ],
        [
          ['created', null, 'REQUESTED', 'request'],
          ['transition', 'REQUESTED', 'REGISTERED', 'recovery'],
        ],
      ]),
    );
  });

  it('gives a running job\'s counted progress again for a while (never past 10 s), and counts a job that changed state afresh', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['identifierEligibility'], failures: 1, kind: 'unavailable' }) } });
    const submitted = await upload(h, [HEADER, 'MSISDN,260971000001,,a,2026-11-20T08:00:00Z,app', 'MSISDN,260971000002,,a,2026-11-20T08:00:00Z,app'].join('\n'));
    const jobId = String(submitted.body['jobId']);
    // The upload answered its count of the job as stored, every line pending; the test's clock
    // has not moved since, so that count is what the job's progress gives.
    const stored = { jobId, action: 'register', state: 'RUNNING', total: 2, processed: 0, outcomes: { PENDING: 2 } };
    expect(submitted.body).toEqual(stored);
    expect(await done(h, jobId)).toEqual(stored);
    // 10 s later: the outage stopped the job with one line read and one pending.
    h.clock.advance(10_000);
    const running = { ...stored, processed: 1, outcomes: { PENDING: 1, REQUESTED: 1 } };
    expect((await h.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body).toEqual(running);
    // The pending line changes under the count (as another replica would change it). The test's
    // clock has not moved: the count is given again, unchanged.
    await h.app.database.transaction<AnySchema, void>(async (trx) => {
      await sql`update identifier_job_lines set outcome = 'INVALID', message = 'set by the test' where job_id = ${jobId} and outcome = 'PENDING'`.execute(trx);
    });
    expect((await h.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body).toEqual(running);
    // 10 s later it is counted again.
    h.clock.advance(10_000);
    const recounted = { ...running, processed: 2, outcomes: { INVALID: 1, REQUESTED: 1 } };
    expect((await h.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body).toEqual(recounted);
    // The recovery pass finishes the job: DONE is counted at once, whatever the clock.
    expect(await h.app.identifierJobs.resumeUnfinished()).toBe(1);
    expect(await done(h, jobId)).toEqual({ ...recounted, state: 'DONE', outcomes: { INVALID: 1, REGISTERED: 1 } });
  });

  it('the command line stops with exit code 1 and says why when the job\'s progress is refused, instead of waiting on it for ever', async () => {
    const jobId = 'f'.repeat(32);
    const seen: string[] = [];
    const connector = createServer((incoming, answer) => {
      seen.push(`${incoming.method ?? ''} ${incoming.url ?? ''}`);
      incoming.resume();
      incoming.on('end', () => {
        const accepted = incoming.method === 'POST';
        answer.writeHead(accepted ? 202 : 503, { 'content-type': 'application/json' });
        answer.end(JSON.stringify(accepted ? { jobId, action: 'register', state: 'RUNNING', total: 8, processed: 0, outcomes: { PENDING: 8 } } : { statusCode: '2001', message: 'the store is unavailable' }));
      });
    });
    await new Promise<void>((listening) => connector.listen(0, '127.0.0.1', listening));
    try {
      const directory = mkdtempSync(join(tmpdir(), 'cc-cli-'));
      const file = join(directory, 'identifiers.csv');
      writeFileSync(file, FILE);
      const url = `http://127.0.0.1:${(connector.address() as AddressInfo).port}`;
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'identifiers', 'register', file, '--url', url], { env: { PATH: process.env['PATH'] ?? '', OUTGOING_API_KEY: TEST_CHANNEL_API_KEY }, cwd: directory, timeout: 20_000 }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : Number((error as { code?: number }).code), stdout, stderr }),
        );
      });
      rmSync(directory, { recursive: true, force: true });
      expect(result).toEqual({
        code: 1,
        stdout: '',
        stderr: `\nthe connector could not give the job's progress: HTTP 503 the store is unavailable\njob ${jobId} goes on; ask again with GET /identifiers/jobs/${jobId}\n`,
      });
      expect(seen).toEqual(['POST /identifiers/jobs?action=register', `GET /identifiers/jobs/${jobId}`]);
    } finally {
      await new Promise((closed) => connector.close(closed));
    }
  });

  it('the command line uploads the file, shows progress, prints a summary and writes the report', async () => {
    h = await startHarness();
    const file = join(h.dataDir, 'identifiers.csv');
    writeFileSync(file, FILE);
    const report = join(h.dataDir, 'report.csv');
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'identifiers', 'register', file, '--url', h?.outgoingUrl ?? '', '--report', report], { env: { PATH: process.env['PATH'] ?? '', OUTGOING_API_KEY: TEST_CHANNEL_API_KEY }, cwd: h?.dataDir }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : Number((error as { code?: number }).code), stdout, stderr }),
      );
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('[##############################] 100% 8/8');
    expect(result.stdout).toMatch(/^job [0-9a-f]{32}: 8 lines: INVALID 2, REFUSED 2, REGISTERED 4\nreport: .*report\.csv\n$/);
    const lines = readFileSync(report, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('line,idType,idValue,idSubValue,outcome,message');
    expect(lines[1]).toBe('2,MSISDN,260971000001,,REGISTERED,');
    expect(lines).toHaveLength(9);
  });
});

describe('bulk identifier opt-out', () => {
  it('a removal the platform refuses ends its line OPT_OUT_FAILED, a failure for the command line (exit 3); one never registered is removed locally', async () => {
    h = await startHarness();
    const consent = { by: 'customer', at: '2026-11-23T09:58:00.000Z', channel: 'app' };
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000002', { statusCode: '3003', message: 'identifier registered by another FSP' });
    for (const idValue of ['260971000001', '260971000006']) expect((await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue, consent })).body).toMatchObject({ state: 'REGISTERED' });
    expect((await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000002', consent })).body).toMatchObject({ state: 'FAILED' });
    // The platform now refuses to remove 260971000006.
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000006', { statusCode: '3003', message: 'not removed' });
    const file = join(h.dataDir, 'leavers.csv');
    writeFileSync(file, [HEADER, ...['260971000001', '260971000002', '260971000006'].map((idValue) => `MSISDN,${idValue},,agent,2026-11-20T08:00:00Z,branch`), ''].join('\n'));
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(process.execPath, [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'identifiers', 'opt-out', file, '--url', h?.outgoingUrl ?? ''], { env: { PATH: process.env['PATH'] ?? '', OUTGOING_API_KEY: TEST_CHANNEL_API_KEY }, cwd: h?.dataDir }, (error, stdout) =>
        resolve({ code: error === null ? 0 : Number((error as { code?: number }).code), stdout }),
      );
    });
    expect(result.stdout).toMatch(/^job [0-9a-f]{32}: 3 lines: DEREGISTERED 2, OPT_OUT_FAILED 1\n/);
    expect(result.code).toBe(3);
    expect(readFileSync(`${file}.report.csv`, 'utf8')).toBe(
      ['line,idType,idValue,idSubValue,outcome,message', '2,MSISDN,260971000001,,DEREGISTERED,', '3,MSISDN,260971000002,,DEREGISTERED,', '4,MSISDN,260971000006,,OPT_OUT_FAILED,3003 not removed', ''].join('\n'),
    );
    expect(h.fakeSwitch.requests.filter((call) => call.method === 'DELETE').map((call) => call.path)).toEqual(['/accounts/MSISDN/260971000001', '/accounts/MSISDN/260971000006']);
  });

  it('holds each identifier for its own DELETE: a batch longer than one lease is never sent twice alongside the recovery pass', async () => {
    const ids = [['ACCOUNT_ID', '1000234567', ''], ['MSISDN', '260971000001', ''], ['MSISDN', '260971000002', ''], ['MSISDN', '260971000006', ''], ['MSISDN', '260971000008', 'savings']] as const;
    const clock = new ManualClock();
    const fake = await startFakeSwitch({ now: () => clock.now() });
    try {
      const gated = new GatedSwitch(fake.url);
      // SDK_TIMEOUT_MS as in production: the job's lease is 105 s, and each DELETE takes 100 s, so
      // the batch of five takes 500 s; the recovery pass runs while the fourth is on its way.
      const harness = await startHarness({ clock, fakeSwitch: fake, env: { SDK_TIMEOUT_MS: '100000' }, overrides: { switchConnector: gated } });
      h = harness;
      for (const [idType, idValue, idSubValue] of ids) {
        const body = { idType, idValue, ...(idSubValue === '' ? {} : { idSubValue }), consent: { by: 'customer', at: '2026-11-23T09:58:00.000Z', channel: 'app' } };
        expect((await harness.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
      }
      let removals = 0;
      let pass: Promise<{ claimed: number }> | undefined;
      gated.removal = (_item, send) => {
        removals += 1;
        clock.advance(100_000);
        if (removals === 4) pass = harness.app.identifiers.runOnce(120_000);
        return send();
      };
      const file = [HEADER, ...ids.map(([idType, idValue, idSubValue]) => `${idType},${idValue},${idSubValue},agent,2026-11-20T08:00:00Z,branch`), ''].join('\n');
      const job = await upload(harness, file, 'text/csv', 'opt-out');
      await harness.app.identifierJobs.idle();
      // The pass took the one identifier whose hold had lapsed (the fifth); the job left it to it.
      expect(await pass).toEqual({ claimed: 1 });
      expect(fake.requests.filter((call) => call.method === 'DELETE').map((call) => call.path).sort()).toEqual([
        '/accounts/ACCOUNT_ID/1000234567',
        '/accounts/MSISDN/260971000001',
        '/accounts/MSISDN/260971000002',
        '/accounts/MSISDN/260971000006',
        '/accounts/MSISDN/260971000008/savings',
      ]);
      expect(await done(harness, String(job.body['jobId']))).toMatchObject({ state: 'DONE', outcomes: { DEREGISTERED: 5 } });
      expect([...fake.registeredIdentifiers]).toEqual([]);
    } finally {
      await h?.close();
      h = undefined;
      await fake.close();
    }
  });
});

describe('bulk upload input with a NUL character', () => {
  const consent = { by: 'agent', at: '2026-11-20T08:00:00Z', channel: 'branch' };
  const jsonl = [JSON.stringify({ idType: 'MSISDN', idValue: '260971000001', consent }), JSON.stringify({ idType: 'ALIAS', idValue: 'bad\u0000alias', consent }), ''].join('\n');
  const csv = [HEADER, 'MSISDN,260971000002,,agent,2026-11-20T08:00:00Z,branch', 'ALIAS,bad\u0000alias,,agent,2026-11-20T08:00:00Z,branch', ''].join('\n');

  async function uploadBoth(harness: Harness): Promise<void> {
    const fromJson = await upload(harness, jsonl, 'application/x-ndjson');
    expect(fromJson.status).toBe(202);
    const fromCsv = await upload(harness, csv);
    expect(fromCsv.status).toBe(202);
    expect(await done(harness, String(fromJson.body['jobId']))).toMatchObject({ state: 'DONE', total: 2, outcomes: { REGISTERED: 1, INVALID: 1 } });
    expect(await done(harness, String(fromCsv.body['jobId']))).toMatchObject({ state: 'DONE', total: 2, outcomes: { REGISTERED: 1, INVALID: 1 } });
    const lines = (jobId: unknown) => jobLines(harness, jobId);
    expect(await lines(fromJson.body['jobId'])).toEqual([
      { line: 1, idType: 'MSISDN', idValue: '260971000001', idSubValue: null, outcome: 'REGISTERED', message: null },
      { line: 2, idType: null, idValue: null, idSubValue: null, outcome: 'INVALID', message: 'holds a NUL character' },
    ]);
    expect(await lines(fromCsv.body['jobId'])).toEqual([
      { line: 2, idType: 'MSISDN', idValue: '260971000002', idSubValue: null, outcome: 'REGISTERED', message: null },
      { line: 3, idType: null, idValue: null, idSubValue: null, outcome: 'INVALID', message: 'holds a NUL character' },
    ]);
  }

  it('makes its line INVALID, on SQLite', async () => {
    h = await startHarness();
    await uploadBoth(h);
  });

  it('makes its line INVALID, on PostgreSQL too (the whole upload was a 500 there)', async () => {
    const database = await createTestDatabase();
    try {
      h = await startHarness({ env: { DATABASE_URL: database.url } });
      await uploadBoth(h);
      await h.close();
      h = undefined;
    } finally {
      await database.drop();
    }
  });
});

describe('a store error while a bulk line is processed', () => {
  it('leaves the line pending for the next pass, the rest of the job going on: the line is never REFUSED for it', async () => {
    h = await startHarness();
    const harness = h;
    // One read of the registry fails, as a dropped PostgreSQL connection or a busy SQLite does,
    // right after the line's REQUESTED row was written.
    const find = IdentifierStore.prototype.find;
    let failures = 0;
    const spy = vi.spyOn(IdentifierStore.prototype, 'find').mockImplementation(async function (this: IdentifierStore, key) {
      const found = await find.call(this, key);
      if (key.idValue === '260971000002' && found !== undefined && failures === 0) {
        failures += 1;
        throw new Error('Connection terminated unexpectedly');
      }
      return found;
    });
    try {
      const file = [HEADER, 'MSISDN,260971000001,,agent,2026-11-20T08:00:00Z,branch', 'MSISDN,260971000002,,agent,2026-11-20T08:00:00Z,branch', ''].join('\n');
      const jobId = String((await upload(harness, file)).body['jobId']);
      await harness.app.identifierJobs.idle();
      const lines = async () => (await jobLines(harness, jobId)).map((line) => line['outcome']);
      // The first line's batch was sent; the second line is pending, the job RUNNING.
      expect(await lines()).toEqual(['REGISTERED', 'PENDING']);
      expect((await harness.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body).toMatchObject({ state: 'RUNNING' });
      expect(failures).toBe(1);
      expect(await harness.app.identifierJobs.resumeUnfinished()).toBe(1);
      expect(await done(harness, jobId)).toMatchObject({ state: 'DONE', outcomes: { REGISTERED: 2 } });
      const report = await request(`${harness.outgoingUrl}/identifiers/jobs/${jobId}/lines?format=csv`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } });
      expect(await report.body.text()).toBe(['line,idType,idValue,idSubValue,outcome,message', '2,MSISDN,260971000001,,REGISTERED,', '3,MSISDN,260971000002,,REGISTERED,', ''].join('\n'));
      expect([...harness.fakeSwitch.registeredIdentifiers].sort()).toEqual(['MSISDN/260971000001', 'MSISDN/260971000002']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('a job naming an identifier that waits for the platform under another request', () => {
  it('stays RUNNING until the platform has answered for it, then is DONE', async () => {
    h = await startHarness();
    const harness = h;
    harness.fakeSwitch.failAccounts(504, 1);
    const single = await harness.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000001', consent: { by: 'customer', at: '2026-11-23T09:58:00.000Z', channel: 'app' } });
    expect(single).toMatchObject({ status: 202, body: { state: 'REQUESTED' } });
    const jobId = String((await upload(harness, [HEADER, 'MSISDN,260971000001,,agent,2026-11-20T08:00:00Z,branch', ''].join('\n'))).body['jobId']);
    await harness.app.identifierJobs.idle();
    const lines = async () => (await jobLines(harness, jobId)).map((line) => line['outcome']);
    expect(await lines()).toEqual(['REQUESTED']);
    expect((await harness.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body).toMatchObject({ state: 'RUNNING' });
    // The recovery pass retries the single request's registration; the job's next pass finds it answered.
    harness.clock.advance(1_000);
    expect(await harness.app.identifiers.runOnce(60_000)).toEqual({ claimed: 1 });
    expect(await harness.app.identifierJobs.resumeUnfinished()).toBe(1);
    expect(await done(harness, jobId)).toMatchObject({ state: 'DONE', total: 1, processed: 1, outcomes: { REGISTERED: 1 } });
    expect(accountsPosts(harness)).toHaveLength(2);
  });
});

describe('a bulk line whose consent breaks the individual API\'s rules', () => {
  // Date's own text of a date (62 characters): Date.parse reads it, PostgreSQL's consent_at (30) does not hold it.
  const file = [HEADER, 'MSISDN,260971000001,,agent,Fri Nov 20 2026 08:00:00 GMT+0000 (Coordinated Universal Time),branch'];
  for (let i = 0; i < 300; i += 1) file.push(`MSISDN,2609720${String(i).padStart(5, '0')},,agent,2026-11-20T08:00:00Z,branch`);

  async function uploadOneBadAnd300Good(harness: Harness): Promise<void> {
    const jobId = String((await upload(harness, file.join('\n'))).body['jobId']);
    // One pass: the bad line INVALID at once, the 300 others read (no such customers: refused).
    expect(await done(harness, jobId)).toEqual({ jobId, action: 'register', state: 'DONE', total: 301, processed: 301, outcomes: { INVALID: 1, REFUSED: 300 } });
    const lines = await jobLines(harness, jobId);
    expect(lines[0]).toEqual({ line: 2, idType: null, idValue: null, idSubValue: null, outcome: 'INVALID', message: 'consentAt must be an ISO 8601 date and time with its offset (2026-11-20T08:00:00Z)' });
    expect(accountsPosts(harness)).toEqual([]);
  }

  it('is INVALID and the job DONE with every other line processed, on PostgreSQL (the line had stopped its job at every pass)', async () => {
    const database = await createTestDatabase();
    try {
      h = await startHarness({ env: { DATABASE_URL: database.url } });
      await uploadOneBadAnd300Good(h);
      await h.close();
      h = undefined;
    } finally {
      await database.drop();
    }
  }, 60_000);

  it('is INVALID on SQLite too', async () => {
    h = await startHarness();
    await uploadOneBadAnd300Good(h);
  });

  it('is INVALID for each rule of the individual API, named as the line names the field; a field that is not text too, and a file starting with a byte order mark is read', async () => {
    h = await startHarness();
    const consent = { by: 'agent', at: '2026-11-20T08:00:00.123+02:00', channel: 'branch' };
    const body = [
      `\uFEFF${JSON.stringify({ idType: 'MSISDN', idValue: '260971000001', consent })}`,
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consent: { ...consent, by: 'x'.repeat(129) } }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consent: { ...consent, at: '1' } }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consentBy: 'agent', consentAt: '2026-11-20T08:00:00Z', consentChannel: 'c'.repeat(65) }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consent: { ...consent, by: '' } }),
      // A sub-value that is a number had been dropped, and the identifier without it registered.
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', idSubValue: 7, consent }),
      JSON.stringify({ idType: 'MSISDN', idValue: 260971000002, consent }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', idSubValue: null, consent }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consent: { ...consent, channel: 5 } }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000002', consent: 'yes' }),
      JSON.stringify({ idType: 'MSISDN', idValue: '260971000008', idSubValue: 'savings', consent: { ...consent, by: 'b'.repeat(128), channel: 'c'.repeat(64) } }),
      '',
    ].join('\n');
    const jobId = String((await upload(h, body, 'application/x-ndjson')).body['jobId']);
    expect(await done(h, jobId)).toMatchObject({ state: 'DONE', total: 11, processed: 11, outcomes: { INVALID: 9, REGISTERED: 2 } });
    const lines = await jobLines(h, jobId);
    expect(lines.map((line) => [line['line'], line['outcome'], line['message']])).toEqual([
      [1, 'REGISTERED', null],
      [2, 'INVALID', 'consent.by must be 1-128 characters'],
      [3, 'INVALID', 'consent.at must be an ISO 8601 date and time with its offset (2026-11-20T08:00:00Z)'],
      [4, 'INVALID', 'consentChannel must be 1-64 characters'],
      [5, 'INVALID', 'consent.by must be 1-128 characters'],
      [6, 'INVALID', 'idSubValue must be text'],
      [7, 'INVALID', 'idValue must be text'],
      [8, 'INVALID', 'idSubValue must be text'],
      [9, 'INVALID', 'consent.channel must be text'],
      [10, 'INVALID', 'consent must be an object'],
      [11, 'REGISTERED', null],
    ]);
    expect([...h.fakeSwitch.registeredIdentifiers].sort()).toEqual(['MSISDN/260971000001', 'MSISDN/260971000008/savings']);
    // The individual API refuses the same consents.
    const single = await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000002', consent: { ...consent, by: 'x'.repeat(129) } });
    expect(single.status).toBe(400);
  });
});

describe('a bulk line whose processing fails at every pass for no decision of the connector\'s', () => {
  it('leaves the rest of its page going on, and is FAILED with the error after 5 passes: the job is DONE', async () => {
    h = await startHarness();
    const harness = h;
    // The registry refuses to read one identifier, every time (as PostgreSQL refused a value too long to store).
    const find = IdentifierStore.prototype.find;
    const spy = vi.spyOn(IdentifierStore.prototype, 'find').mockImplementation(async function (this: IdentifierStore, key) {
      if (key.idValue === '260971000002') throw new Error('value too long for type character varying(30)');
      return find.call(this, key);
    });
    try {
      const file = [HEADER, ...['260971000001', '260971000002', '260971000006'].map((idValue) => `MSISDN,${idValue},,agent,2026-11-20T08:00:00Z,branch`), ''].join('\n');
      const jobId = String((await upload(harness, file)).body['jobId']);
      const lines = async () => (await jobLines(harness, jobId)).map((line) => [line['outcome'], line['message']]);
      await harness.app.identifierJobs.idle();
      // The line after it was read and sent in the same pass.
      expect(await lines()).toEqual([['REGISTERED', null], ['PENDING', null], ['REGISTERED', null]]);
      for (let pass = 2; pass <= 4; pass += 1) {
        harness.clock.advance(20_000);
        expect(await harness.app.identifierJobs.resumeUnfinished()).toBe(1);
        await harness.app.identifierJobs.idle();
      }
      expect(await lines()).toEqual([['REGISTERED', null], ['PENDING', null], ['REGISTERED', null]]);
      harness.clock.advance(20_000);
      expect(await harness.app.identifierJobs.resumeUnfinished()).toBe(1);
      expect(await done(harness, jobId)).toMatchObject({ state: 'DONE', total: 3, processed: 3, outcomes: { FAILED: 1, REGISTERED: 2 } });
      expect(await lines()).toEqual([['REGISTERED', null], ['FAILED', 'not processed after 5 attempts: value too long for type character varying(30)'], ['REGISTERED', null]]);
      expect(await harness.app.identifierJobs.resumeUnfinished()).toBe(0);
      expect(accountsPosts(harness)).toHaveLength(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('a bulk line that another replica finishes while this one gives it up', () => {
  it('keeps the other replica\'s outcome: the fifth failure writes FAILED only over a line still pending', async () => {
    h = await startHarness();
    const harness = h;
    let failures = 0;
    const find = IdentifierStore.prototype.find;
    const spy = vi.spyOn(IdentifierStore.prototype, 'find').mockImplementation(async function (this: IdentifierStore, key) {
      if (key.idValue !== '260971000002') return find.call(this, key);
      failures += 1;
      // At its fifth failure here, another replica working the same job has just registered it.
      if (failures === 5) await harness.app.database.transaction<AnySchema, unknown>((trx) => sql`update identifier_job_lines set outcome = 'ACCEPTED' where line = 3`.execute(trx));
      throw new Error('value too long for type character varying(30)');
    });
    try {
      const file = [HEADER, ...['260971000001', '260971000002'].map((idValue) => `MSISDN,${idValue},,agent,2026-11-20T08:00:00Z,branch`), ''].join('\n');
      const jobId = String((await upload(harness, file)).body['jobId']);
      await harness.app.identifierJobs.idle();
      for (let pass = 2; pass <= 5; pass += 1) {
        harness.clock.advance(20_000);
        await harness.app.identifierJobs.resumeUnfinished();
        await harness.app.identifierJobs.idle();
      }
      expect(failures).toBe(5);
      // Before, FAILED ("not processed after 5 attempts") overwrote the other replica's outcome.
      expect((await jobLines(harness, jobId)).map((line) => [line['outcome'], line['message']])).toEqual([['REGISTERED', null], ['ACCEPTED', null]]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('the same file uploaded again', () => {
  const file = [HEADER, 'MSISDN,260971000001,,a,2026-11-20T08:00:00Z,app', ''].join('\n');

  it('once its job is DONE, is a new run: an opt-in opted out since registers again', async () => {
    h = await startHarness();
    const first = String((await upload(h, file)).body['jobId']);
    expect(await done(h, first)).toMatchObject({ state: 'DONE', outcomes: { REGISTERED: 1 } });
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', { idType: 'MSISDN', idValue: '260971000001', consent: { by: 'a', at: '2026-11-21T08:00:00Z', channel: 'app' } })).body).toMatchObject({ state: 'DEREGISTERED' });
    // The customer opts in again; the back office sends its opt-in file again.
    const again = await upload(h, file);
    const second = String(again.body['jobId']);
    expect(second).not.toBe(first);
    expect(await done(h, second)).toEqual({ jobId: second, action: 'register', state: 'DONE', total: 1, processed: 1, outcomes: { REGISTERED: 1 } });
    expect((await h.callOutgoing('GET', '/identifiers/MSISDN/260971000001')).body).toMatchObject({ state: 'REGISTERED' });
    expect([...h.fakeSwitch.registeredIdentifiers]).toEqual(['MSISDN/260971000001']);
    // The first run's report stays as it was read (its line is the identifier's, as it stands now).
    expect(await jobLines(h, first)).toHaveLength(1);
  });

  it('once DONE, is a new run though its job was stored by a replica of the previous release (no content id)', async () => {
    h = await startHarness();
    const first = String((await upload(h, file)).body['jobId']);
    expect(await done(h, first)).toMatchObject({ state: 'DONE', outcomes: { REGISTERED: 1 } });
    // As the previous release stores a job, still running beside this one during an upgrade.
    await h.app.database.transaction<AnySchema, unknown>((trx) => sql`update identifier_jobs set content_id = null`.execute(trx));
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', { idType: 'MSISDN', idValue: '260971000001', consent: { by: 'a', at: '2026-11-21T08:00:00Z', channel: 'app' } })).body).toMatchObject({ state: 'DEREGISTERED' });
    const second = String((await upload(h, file)).body['jobId']);
    // Before, the finished job was answered for ever: nothing registered again.
    expect(second).not.toBe(first);
    expect(await done(h, second)).toEqual({ jobId: second, action: 'register', state: 'DONE', total: 1, processed: 1, outcomes: { REGISTERED: 1 } });
    const jobs = await sql<{ job_id: string; run: number }>`select job_id, run from identifier_jobs order by run`.execute(h.app.database.reader<AnySchema>());
    expect(jobs.rows).toEqual([
      { job_id: first, run: 1 },
      { job_id: second, run: 2 },
    ]);
  });

  it('while its job is unfinished, is that job, its lines stored once', async () => {
    h = await startHarness();
    // The platform does not answer: the job waits for it.
    h.fakeSwitch.failAccounts(504, 10);
    const first = await upload(h, file);
    const jobId = String(first.body['jobId']);
    expect(await done(h, jobId)).toMatchObject({ state: 'RUNNING', total: 1 });
    // (Its progress counted afresh: the upload's count is given again for a while.)
    h.clock.advance(10_000);
    const again = await upload(h, file);
    expect(again).toEqual({ status: 202, body: { jobId, action: 'register', state: 'RUNNING', total: 1, processed: 1, outcomes: { REQUESTED: 1 } } });
    await h.app.identifierJobs.idle();
    const rows = await sql<{ count: number }>`select count(*) as count from identifier_job_lines`.execute(h.app.database.reader<AnySchema>());
    expect(rows.rows).toEqual([{ count: 1 }]);
    const jobs = await sql<{ job_id: string; run: number }>`select job_id, run from identifier_jobs`.execute(h.app.database.reader<AnySchema>());
    expect(jobs.rows).toEqual([{ job_id: jobId, run: 1 }]);
  });
});

describe('the command line\'s exit code', () => {
  it('is 3 when an opt-in line did not end REGISTERED (its identifier DEREGISTERED), as for other failures', async () => {
    const jobId = 'e'.repeat(32);
    const view = { jobId, action: 'register', state: 'DONE', total: 2, processed: 2, outcomes: { DEREGISTERED: 1, REGISTERED: 1 } };
    const connector = createServer((incoming, answer) => {
      incoming.resume();
      incoming.on('end', () => {
        const report = incoming.url?.endsWith('/lines?format=csv') === true;
        answer.writeHead(incoming.method === 'POST' ? 202 : 200, { 'content-type': report ? 'text/csv' : 'application/json' });
        answer.end(report ? 'line,idType,idValue,idSubValue,outcome,message\n' : JSON.stringify(view));
      });
    });
    await new Promise<void>((listening) => connector.listen(0, '127.0.0.1', listening));
    try {
      const directory = mkdtempSync(join(tmpdir(), 'cc-cli-'));
      const file = join(directory, 'identifiers.csv');
      writeFileSync(file, FILE);
      const url = `http://127.0.0.1:${(connector.address() as AddressInfo).port}`;
      const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
        execFile(process.execPath, [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'identifiers', 'register', file, '--url', url], { env: { PATH: process.env['PATH'] ?? '', OUTGOING_API_KEY: TEST_CHANNEL_API_KEY }, cwd: directory, timeout: 20_000 }, (error, stdout) =>
          resolve({ code: error === null ? 0 : Number((error as { code?: number }).code), stdout }),
        );
      });
      rmSync(directory, { recursive: true, force: true });
      expect(result).toEqual({ code: 3, stdout: `job ${jobId}: 2 lines: DEREGISTERED 1, REGISTERED 1\nreport: ${file}.report.csv\n` });
    } finally {
      await new Promise((closed) => connector.close(closed));
    }
  });
});

describe('a job\'s CSV report', () => {
  it('quotes every field as RFC 4180 asks and guards each against formulas: an INVALID line\'s value as read forges no row', async () => {
    h = await startHarness();
    const consent = { by: 'a', at: '2026-11-20T08:00:00Z', channel: 'app' };
    const body = [
      JSON.stringify({ idType: 'ALIAS', idValue: '=HYPERLINK("http://evil.example","x")', consent }),
      JSON.stringify({ idType: 'MSISDN', idValue: 'x\n99,MSISDN,260971000009,,REGISTERED,', consent }),
      JSON.stringify({ idType: 'ALIAS', idValue: 'shop', idSubValue: '@till, 4', consent }),
    ].join('\n');
    const jobId = String((await upload(h, body, 'application/x-ndjson')).body['jobId']);
    await done(h, jobId);
    const csv = await request(`${h.outgoingUrl}/identifiers/jobs/${jobId}/lines?format=csv`, { headers: { 'x-api-key': TEST_CHANNEL_API_KEY } });
    expect(await csv.body.text()).toBe(
      [
        'line,idType,idValue,idSubValue,outcome,message',
        `1,ALIAS,"'=HYPERLINK(""http://evil.example"",""x"")",,REFUSED,Party not found: no customer of the institution has this identifier`,
        '2,MSISDN,"x\n99,MSISDN,260971000009,,REGISTERED,",,INVALID,Generic validation error: MSISDN the value has a control character U+000A at character 2',
        `3,ALIAS,shop,"'@till, 4",REFUSED,Party not found: no customer of the institution has this identifier`,
        '',
      ].join('\n'),
    );
  });
});

describe('a job\'s progress', () => {
  it('is 404 3200 for a job that does not exist, and 503 when the store cannot be reached (it had been 404 3208)', async () => {
    h = await startHarness();
    const missing = '0'.repeat(32);
    expect(await h.callOutgoing('GET', `/identifiers/jobs/${missing}`)).toEqual({ status: 404, body: { statusCode: '3200', message: `Identifier job not found: no identifier job ${missing}` } });
    const spy = vi.spyOn(h.app.identifierJobs, 'view').mockRejectedValue(new Error('Connection terminated unexpectedly'));
    try {
      // A store that cannot be reached is an outage (503), not a missing job (it had been 404 3208) nor a bug (500 until 2026-11-27).
      expect(await h.callOutgoing('GET', `/identifiers/jobs/${missing}`)).toEqual({ status: 503, body: { statusCode: '2003', message: 'Service currently unavailable: the database cannot be reached; retry later' } });
    } finally {
      spy.mockRestore();
    }
  });
});

describe('identifiers reconcile on the command line', () => {
  it('prints the institution\'s records that break their rule and exits 3 for them, --fix or not', async () => {
    const found = { registeredButIneligible: [], eligibleNotRegistered: [], invalidAtInstitution: [{ idType: 'EMAIL', idValue: 'jo banda at example', problem: 'Generic validation error: EMAIL must be an e-mail address: local-part@domain' }] };
    const connector = createServer((incoming, answer) => {
      incoming.resume();
      incoming.on('end', () => {
        answer.writeHead(200, { 'content-type': 'application/json' });
        answer.end(JSON.stringify(incoming.method === 'POST' ? { optedOut: 0, registered: 0, problems: [] } : found));
      });
    });
    await new Promise<void>((listening) => connector.listen(0, '127.0.0.1', listening));
    try {
      const url = `http://127.0.0.1:${(connector.address() as AddressInfo).port}`;
      const run = (...extra: string[]) =>
        new Promise<{ code: number | null; stdout: string }>((resolve) => {
          execFile(process.execPath, [build?.mainPath.replace(/main\.js$/, 'cli.js') ?? '', 'identifiers', 'reconcile', ...extra, '--url', url], { env: { PATH: process.env['PATH'] ?? '', OUTGOING_API_KEY: TEST_CHANNEL_API_KEY }, cwd: tmpdir(), timeout: 20_000 }, (error, stdout) =>
            resolve({ code: error === null ? 0 : Number((error as { code?: number }).code), stdout }),
          );
        });
      const listed = 'institution record breaks its rule: EMAIL/jo banda at example (Generic validation error: EMAIL must be an e-mail address: local-part@domain)\n0 to opt out, 0 to register, 1 to correct at the institution\n';
      expect(await run()).toEqual({ code: 3, stdout: listed });
      expect(await run('--fix')).toEqual({ code: 3, stdout: `${listed}fixed: 0 opted out, 0 registered\n` });
    } finally {
      await new Promise((closed) => connector.close(closed));
    }
  });
});
