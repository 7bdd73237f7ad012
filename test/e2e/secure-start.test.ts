import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkClient } from '../../src/adapters/switch/sdk-client.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { runUntilExit } from '../support/adapter-process.js';
import { TEST_CHANNEL_API_KEY, startHarness, type Harness } from '../support/harness.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certificates.js';
import { hubAnswer } from '../support/fake-switch.js';

/**
 * Secure by default: the demo credentials never listen beyond loopback, and both servers serve
 * TLS or mutual TLS from certificate files. Real TLS handshakes on loopback, with certificates
 * from the machine's openssl.
 */

describe('the built connector refuses an unsafe start: beyond loopback with the demo credentials, or with fault injection asked for', () => {
  let build: ConnectorBuild;
  let workDir: string;
  beforeAll(async () => {
    build = await buildConnector();
    workDir = mkdtempSync(join(tmpdir(), 'cc-secure-'));
  }, 120_000);
  afterAll(() => {
    build.remove();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('npm start\'s shell hands over to node (exec): a SIGTERM to it stops the connector cleanly and leaves no process behind', async () => {
    const { scripts } = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { scripts: { start: string } };
    // The start script's command after its build step, run by the shell npm uses (sh -c).
    const command = scripts.start.split(' && ').at(-1) ?? '';
    expect(command).toContain('node dist/src/main.js');
    const child = spawn('/bin/sh', ['-c', command.replace('dist/src/main.js', build.mainPath)], {
      cwd: workDir,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', DATABASE_URL: join(workDir, 'start-script.db'), INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      for (let waited = 0; !out.includes('"msg":"connector started"') && waited < 30_000; waited += 50) await sleep(50);
      expect(out).toContain('"msg":"connector started"');
      child.kill('SIGTERM');
      // Without exec the shell died of the signal (143) and node, never told, ran on as an orphan.
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(out.split('\n').some((line) => line.includes('"signal":"SIGTERM"') && line.includes('"msg":"stopping"'))).toBe(true);
    } finally {
      spawnSync('pkill', ['-KILL', '-f', build.mainPath]);
    }
  });

  it('HOST=0.0.0.0 without secrets of its own: exit code 2 naming every server and what to do', async () => {
    const outcome = await runUntilExit(build.mainPath, workDir, { DATABASE_URL: join(workDir, 'never-opened.db'), HOST: '0.0.0.0' });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        'invalid configuration:',
        '  - INCOMING_HOST (or HOST): "0.0.0.0" is reachable from other machines while the demo OUTGOING_API_KEY or CALLBACK_SECRET is in use; set your own secrets (README, "Security") or listen on 127.0.0.1',
        '  - OUTGOING_HOST (or HOST): "0.0.0.0" is reachable from other machines while the demo OUTGOING_API_KEY or CALLBACK_SECRET is in use; set your own secrets (README, "Security") or listen on 127.0.0.1',
        '  - OPERATIONS_HOST (or HOST): "0.0.0.0" is reachable from other machines while the demo OPERATOR_CREDENTIALS is in use; set your own secrets (README, "Security") or listen on 127.0.0.1',
        '',
      ].join('\n'),
    });
  });

  it('the published operator token under another name, beside a real operator, beyond loopback: exit code 2', async () => {
    const outcome = await runUntilExit(build.mainPath, workDir, {
      DATABASE_URL: join(workDir, 'never-opened.db'),
      OUTGOING_API_KEY: 'our-channel-key-0123456789',
      CALLBACK_SECRET: 'our-callback-secret-0123456789',
      OPERATIONS_HOST: '0.0.0.0',
      OPERATOR_CREDENTIALS: 'alice:alice-real-token-0123456789abcdef,admin:demo-operator-token-change-me,',
    });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        'invalid configuration:',
        '  - OPERATIONS_HOST (or HOST): "0.0.0.0" is reachable from other machines while the demo OPERATOR_CREDENTIALS is in use; set your own secrets (README, "Security") or listen on 127.0.0.1',
        '',
      ].join('\n'),
    });
  });

  it('an operator token pasted without its name stays out of the refusal on stderr: the entry is named by its position', async () => {
    const token = 'Zq8vN3kR7tY2wP5mL9xC4bH6jD1fG0sA';
    const outcome = await runUntilExit(build.mainPath, workDir, {
      DATABASE_URL: join(workDir, 'never-opened.db'),
      OPERATOR_CREDENTIALS: `alice:alice-real-token-0123456789abcdef,${token},bob=${token}`,
    });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: ['invalid configuration:', '  - OPERATOR_CREDENTIALS: entry 2 is not name:token (no colon)', '  - OPERATOR_CREDENTIALS: entry 3 is not name:token (no colon)', ''].join('\n'),
    });
  });

  it('CBS_FAULT_RATE (test-only fault injection, not in the build): exit code 2 naming each CBS_FAULT_* setting set', async () => {
    const outcome = await runUntilExit(build.mainPath, workDir, {
      DATABASE_URL: join(workDir, 'never-opened.db'),
      CBS_FAULT_RATE: '1',
      CBS_FAULT_OPERATIONS: 'commit',
    });
    expect(outcome).toEqual({
      code: 2,
      stdout: '',
      stderr: [
        'invalid configuration:',
        '  - CBS_FAULT_OPERATIONS: fault injection is test-only and not part of the connector; unset it',
        '  - CBS_FAULT_RATE: fault injection is test-only and not part of the connector; unset it',
        '',
      ].join('\n'),
    });
  });

  it('a TLS file that cannot be read stops the start with the setting that names it', async () => {
    const outcome = await runUntilExit(build.mainPath, workDir, {
      DATABASE_URL: join(workDir, 'never-opened-either.db'),
      INCOMING_TLS_CERT_FILE: join(workDir, 'missing.crt'),
      INCOMING_TLS_KEY_FILE: join(workDir, 'missing.key'),
    });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toBe(`core connector failed to start: INCOMING_TLS_CERT_FILE: cannot read ${join(workDir, 'missing.crt')} (ENOENT)\n`);
  });
});

describe('TLS and mutual TLS on both servers', () => {
  let certs: TestCertificates;
  let h: Harness;
  beforeAll(async () => {
    certs = makeTestCertificates();
    h = await startHarness({
      env: {
        INCOMING_TLS_CERT_FILE: certs.serverCertFile,
        INCOMING_TLS_KEY_FILE: certs.serverKeyFile,
        INCOMING_TLS_CA_FILE: certs.caFile,
        OUTGOING_TLS_CERT_FILE: certs.serverCertFile,
        OUTGOING_TLS_KEY_FILE: certs.serverKeyFile,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await h.close();
    certs.remove();
  });

  async function get(url: string, agent: Agent, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
    try {
      const response = await request(url, { dispatcher: agent, headers });
      return { status: response.statusCode, body: await response.body.json() };
    } finally {
      await agent.close();
    }
  }

  const trusting = (client?: 'client' | 'stranger'): Agent =>
    new Agent({
      connect: {
        ca: certs.read(certs.caFile),
        ...(client === 'client' ? { cert: certs.read(certs.clientCertFile), key: certs.read(certs.clientKeyFile) } : {}),
        ...(client === 'stranger' ? { cert: certs.read(certs.strangerCertFile), key: certs.read(certs.strangerKeyFile) } : {}),
      },
    });

  it('both servers answer over https only', () => {
    expect(h.incomingUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(h.outgoingUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('the incoming server (mutual TLS) answers a switch connector presenting a certificate the CA signed', async () => {
    const answer = await get(`${h.incomingUrl}/transfers/01JDQ7ZC9X3F8V2K5M4N6P7R8S`, trusting('client'));
    expect(answer).toEqual({ status: 404, body: { statusCode: '3208', message: 'Transfer not found: transfer 01JDQ7ZC9X3F8V2K5M4N6P7R8S is unknown' } });
  });

  it('the incoming server refuses the handshake without a client certificate, or with one another CA signed', async () => {
    await expect(get(`${h.incomingUrl}/transfers/01JDQ7ZC9X3F8V2K5M4N6P7R8S`, trusting())).rejects.toThrow();
    await expect(get(`${h.incomingUrl}/transfers/01JDQ7ZC9X3F8V2K5M4N6P7R8S`, trusting('stranger'))).rejects.toThrow();
  });

  it('the outgoing server (TLS, the channel key as before) serves a client that trusts its CA', async () => {
    const answer = await get(`${h.outgoingUrl}/send-money/01JDQ7ZC9X3F8V2K5M4N6P7R8S`, trusting(), { 'x-api-key': TEST_CHANNEL_API_KEY });
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ statusCode: '3208' });
  });

  it('a client that does not trust the CA is refused by its own TLS check, and plain http gets no answer', async () => {
    await expect(get(`${h.outgoingUrl}/send-money/x`, new Agent())).rejects.toThrow(/self-signed|unable to verify|certificate/i);
    await expect(get(h.outgoingUrl.replace('https:', 'http:') + '/health', new Agent({ headersTimeout: 2000, bodyTimeout: 2000 }))).rejects.toThrow();
  });
});

describe('mutual TLS towards the switch connector (an https SDK_BASE_URL)', () => {
  let certs: TestCertificates;
  let server: HttpsServer;
  let baseUrl: string;
  beforeAll(async () => {
    certs = makeTestCertificates();
    // Stands in for the switch connector's outbound API behind mutual TLS.
    server = createHttpsServer(
      { cert: certs.read(certs.serverCertFile), key: certs.read(certs.serverKeyFile), ca: certs.read(certs.caFile), requestCert: true, rejectUnauthorized: true },
      (req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(hubAnswer(req.url?.split('/').pop() ?? '', 'COMMITTED').body)),
    );
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
    baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    await new Promise<void>((done) => server.close(() => done()));
    certs.remove();
  });

  it('presents our client certificate and trusts the configured CA', async () => {
    const client = new SdkClient({ baseUrl, timeoutMs: 2000, tls: { ca: certs.read(certs.caFile), cert: certs.read(certs.clientCertFile), key: certs.read(certs.clientKeyFile) } });
    try {
      expect(await client.getTransfer('01JDQ7ZC9X3F8V2K5M4N6P7R8S')).toEqual({ currentState: 'COMPLETED' });
    } finally {
      await client.close();
    }
  });

  it('without our certificate the switch connector drops the connection: outcome unknown, nothing assumed', async () => {
    const client = new SdkClient({ baseUrl, timeoutMs: 2000, tls: { ca: certs.read(certs.caFile), cert: undefined, key: undefined } });
    try {
      await expect(client.getTransfer('01JDQ7ZC9X3F8V2K5M4N6P7R8S')).rejects.toMatchObject({ name: 'ConnectorError', errorName: 'SdkTimeout' });
    } finally {
      await client.close();
    }
  });
});
