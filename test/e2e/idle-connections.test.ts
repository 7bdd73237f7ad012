import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certificates.js';

/**
 * Idle connections hold MAX_CONNECTIONS slots no longer than REQUEST_RECEIVE_TIMEOUT_MS: a TLS
 * socket that never begins its handshake (no certificate needed to open one), and a keep-alive
 * socket left idle after an anonymous GET /health. Scaled down: 4 slots, a 1 s receive timeout.
 */
const SLOTS = 4;
let h: Harness;
let certs: TestCertificates;
beforeAll(async () => {
  certs = makeTestCertificates();
  h = await startHarness({
    env: {
      MAX_CONNECTIONS: String(SLOTS),
      REQUEST_RECEIVE_TIMEOUT_MS: '1000',
      INCOMING_TLS_CERT_FILE: certs.serverCertFile,
      INCOMING_TLS_KEY_FILE: certs.serverKeyFile,
      INCOMING_TLS_CA_FILE: certs.caFile,
    },
  });
}, 60_000);
afterAll(async () => {
  await h.close();
  certs.remove();
});

/** A socket that sends `firstRequest` (or nothing) and then stays silent; resolves with the time the server took to close it, or 'open' after 4 s. */
async function idleSocket(url: string, firstRequest?: string): Promise<{ socket: Socket; closedAfterMs: Promise<number | 'open'> }> {
  const { hostname, port } = new URL(url);
  const socket = await new Promise<Socket>((resolve) => {
    const opened = connect(Number(port), hostname, () => resolve(opened));
  });
  const openedAt = performance.now();
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  if (firstRequest !== undefined) socket.write(firstRequest);
  const closedAfterMs = new Promise<number | 'open'>((resolve) => {
    const timer = setTimeout(() => resolve('open'), 4000);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Math.round(performance.now() - openedAt));
    });
  });
  return { socket, closedAfterMs };
}

async function health(url: string, tls: boolean): Promise<string> {
  const dispatcher = new Agent(tls ? { connect: { ca: certs.read(certs.caFile), cert: certs.read(certs.clientCertFile), key: certs.read(certs.clientKeyFile) } } : {});
  try {
    const answer = await request(`${url}/health`, { dispatcher, headersTimeout: 3000 });
    await answer.body.text();
    return `HTTP ${answer.statusCode}`;
  } catch {
    return 'refused';
  } finally {
    await dispatcher.close();
  }
}

describe('idle connections', () => {
  it.each([
    ['a TLS socket that never begins its handshake (incoming, mutual TLS)', 'incoming', true, undefined],
    ['a keep-alive socket idle after GET /health (outgoing)', 'outgoing', false, 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n'],
  ] as const)('%s is closed after REQUEST_RECEIVE_TIMEOUT_MS, freeing its slot', async (_name, server, tls, firstRequest) => {
    const url = server === 'incoming' ? h.incomingUrl : h.outgoingUrl;
    const idle = await Promise.all(Array.from({ length: SLOTS }, () => idleSocket(url, firstRequest)));
    try {
      // Every slot taken: a client with the right certificate is turned away.
      expect(await health(url, tls)).toBe('refused');
      const closed = await Promise.all(idle.map(async (entry) => entry.closedAfterMs));
      // Closed by the server within the test's own 4 s cut-off, and not before the 1 s timeout.
      for (const afterMs of closed) {
        expect(afterMs).not.toBe('open');
        expect(afterMs).toBeGreaterThanOrEqual(900);
      }
      expect(await health(url, tls)).toBe('HTTP 200');
    } finally {
      for (const entry of idle) entry.socket.destroy();
    }
  }, 15_000);
});
