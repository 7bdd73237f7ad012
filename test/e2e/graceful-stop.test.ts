import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { demoAccounts } from '../../src/adapters/core-banking/sandbox/demo-accounts.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { quoteRequest, transferRequest } from '../support/backend-bodies.js';

/**
 * The stop of the built connector, driven by real signals: new requests refused with 503 2003 as
 * soon as it begins, recovery passes ended between two items, an overall deadline, a second
 * signal, connections that sent nothing or half a request, and the drain for Kubernetes.
 */

type Body = Record<string, unknown>;

/** A switch connector whose GET /transfers/{id} answers 404 after `holdMs`, or never (Infinity). */
interface SlowSwitch {
  readonly url: string;
  /** The transfers asked about, in order of arrival (a repeated question counted once). */
  readonly asked: string[];
  /** Resolves when the first question arrives. */
  readonly firstAsked: Promise<void>;
  close(): Promise<void>;
}

async function startSlowSwitch(holdMs: number): Promise<SlowSwitch> {
  const asked: string[] = [];
  const held = new Set<ServerResponse>();
  let first!: () => void;
  const firstAsked = new Promise<void>((resolve) => (first = resolve));
  const server: Server = createServer((request, response) => {
    const match = /^\/transfers\/([^/?]+)$/.exec(request.url ?? '');
    if (request.method !== 'GET' || match === null) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    const id = decodeURIComponent(match[1] ?? '');
    if (!asked.includes(id)) asked.push(id);
    first();
    held.add(response);
    if (Number.isFinite(holdMs)) {
      setTimeout(() => {
        held.delete(response);
        response.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":"3208","message":"not found"}');
      }, holdMs).unref();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    firstAsked,
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Running {
  readonly child: ChildProcess;
  readonly incomingUrl: string;
  readonly operationsUrl: string;
  /** Every log line so far, parsed. */
  readonly lines: Body[];
  readonly exited: Promise<number | null>;
}

let build: ConnectorBuild;
let workDir: string;
const children: ChildProcess[] = [];
const switches: SlowSwitch[] = [];

beforeAll(async () => {
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-stop-'));
}, 120_000);
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const fake of switches.splice(0)) await fake.close();
});
afterAll(() => {
  build.remove();
  rmSync(workDir, { recursive: true, force: true });
});

let databases = 0;

async function startConnector(env: Readonly<Record<string, string>>): Promise<Running> {
  databases += 1;
  const child = spawn(process.execPath, [build.mainPath], {
    cwd: workDir,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      DATABASE_URL: join(workDir, `stop-${databases}.db`),
      INCOMING_PORT: '0',
      OUTGOING_PORT: '0',
      OPERATIONS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: Body[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let rest = '';
  const started = new Promise<Body>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      const parts = rest.split('\n');
      rest = parts.pop() ?? '';
      for (const part of parts) {
        if (part.trim() === '') continue;
        const line = JSON.parse(part) as Body;
        lines.push(line);
        if (line['msg'] === 'connector started') resolve(line);
      }
    });
    void exited.then((code) => reject(new Error(`connector exited with ${String(code)} before it started`)));
  });
  const line = await started;
  return { child, incomingUrl: String(line['incomingUrl']), operationsUrl: String(line['operationsUrl']), lines, exited };
}

async function post(url: string, body: unknown): Promise<{ status: number; body: Body }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Body };
}

const payee = demoAccounts.customers.find((customer) => customer.status === 'active');

/** A transfer reserved at the payee, which the recovery pass asks the switch about (RESERVATION_QUERY_AFTER_MS=0). */
async function reserve(incomingUrl: string): Promise<void> {
  const quoteBody = quoteRequest({ payeeMsisdn: payee?.idValue ?? '', amount: '10' });
  const quote = await post(`${incomingUrl}/quoterequests`, quoteBody);
  expect(quote.status).toBe(200);
  expect((await post(`${incomingUrl}/transfers`, transferRequest(quoteBody, quote.body))).status).toBe(200);
}

/** Settings under which the first recovery pass, 3 s after the start, asks the switch about every reservation. */
function recoveryEnv(fake: SlowSwitch): Record<string, string> {
  return { SDK_BASE_URL: fake.url, RESERVATION_QUERY_AFTER_MS: '0', RECOVERY_INTERVAL_MS: '3000' };
}

/** Exits within `boundMs` (a generous bound, not a timing): its exit code, or 'still running'. */
async function exitWithin(running: Running, boundMs: number): Promise<number | null | 'still running'> {
  return Promise.race([running.exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), boundMs))]);
}

describe('stopping the connector (SIGTERM)', () => {
  it('refuses a request arriving after the stop began with 503 2003 while a recovery pass runs, and ends the pass after the item under way', async () => {
    const fake = await startSlowSwitch(3000);
    switches.push(fake);
    const running = await startConnector(recoveryEnv(fake));
    for (let n = 0; n < 6; n += 1) await reserve(running.incomingUrl);
    await fake.firstAsked;
    running.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await post(`${running.incomingUrl}/quoterequests`, quoteRequest({ payeeMsisdn: payee?.idValue ?? '', amount: '10' }));
    expect(refused).toEqual({ status: 503, body: { statusCode: '2003', message: 'Service shutting down; retry on another instance' } });
    expect(await exitWithin(running, 20_000)).toBe(0);
    // Only the transfer under way at the signal was asked about; the five left are given back for the next start.
    expect(fake.asked.length).toBe(1);
    expect(running.lines.filter((line) => line['msg'] === 'recovery pass ended by the stop; the items left are given back').map((line) => line['left'])).toEqual([5]);
  }, 60_000);

  it('past SHUTDOWN_TIMEOUT_MS the process exits 1, naming what it was still waiting for', async () => {
    const fake = await startSlowSwitch(Infinity);
    switches.push(fake);
    const running = await startConnector({ ...recoveryEnv(fake), SHUTDOWN_TIMEOUT_MS: '1500' });
    await reserve(running.incomingUrl);
    await fake.firstAsked;
    running.child.kill('SIGTERM');
    expect(await exitWithin(running, 20_000)).toBe(1);
    const timedOut = running.lines.filter((line) => line['msg'] === 'stop did not finish within SHUTDOWN_TIMEOUT_MS: closing every connection and exiting');
    expect(timedOut.map((line) => [line['timeoutMs'], line['waitingFor']])).toEqual([[1500, ['the incoming recovery pass']]]);
  }, 60_000);

  it('a second SIGTERM exits at once, with code 1', async () => {
    const fake = await startSlowSwitch(Infinity);
    switches.push(fake);
    const running = await startConnector(recoveryEnv(fake));
    await reserve(running.incomingUrl);
    await fake.firstAsked;
    running.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    running.child.kill('SIGTERM');
    expect(await exitWithin(running, 10_000)).toBe(1);
    expect(running.lines.filter((line) => line['msg'] === 'second stop signal: exiting at once').map((line) => line['signal'])).toEqual(['SIGTERM']);
  }, 60_000);

  it('a connection holding half a request, and one that sent nothing, do not hold the stop', async () => {
    const running = await startConnector({});
    const opened: Socket[] = [];
    const open = async (url: string, bytes: string): Promise<void> => {
      const { hostname, port } = new URL(url);
      const socket = connect(Number(port), hostname);
      opened.push(socket);
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      if (bytes !== '') socket.write(bytes);
    };
    await open(running.incomingUrl, 'POST /quoterequests HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty');
    await open(running.operationsUrl, '');
    await new Promise((resolve) => setTimeout(resolve, 200));
    running.child.kill('SIGTERM');
    // Before, these held the stop until their connection timeouts: 65 s and 120 s.
    expect(await exitWithin(running, 20_000)).toBe(0);
    for (const socket of opened) socket.destroy();
  }, 60_000);

  it('SHUTDOWN_DRAIN_MS: during the drain /health answers 503 naming shutting-down while a quote is answered 200', async () => {
    const running = await startConnector({ SHUTDOWN_DRAIN_MS: '4000' });
    expect((await fetch(`${running.incomingUrl}/health`)).status).toBe(200);
    running.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const health = await fetch(`${running.incomingUrl}/health`);
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 503, body: { statusCode: '2003', message: 'Service shutting down; retry on another instance: unhealthy: shutting-down' } });
    const quote = await post(`${running.incomingUrl}/quoterequests`, quoteRequest({ payeeMsisdn: payee?.idValue ?? '', amount: '10' }));
    expect(quote.status).toBe(200);
    expect(await exitWithin(running, 20_000)).toBe(0);
  }, 60_000);
});
