import { connect } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { quoteRequest } from '../support/backend-bodies.js';
import { TEST_CALLBACK_SECRET, TEST_CHANNEL_API_KEY, TEST_OPERATOR_CREDENTIALS, startHarness, type Harness } from '../support/harness.js';
import { startFxpHarness } from '../fxp/support/fxp-harness.js';

/**
 * DNS rebinding: a web page the machine's browser opens can make its own name resolve to
 * 127.0.0.1 and reach a loopback server, but its requests carry that name in Host. A server bound
 * to loopback answers only loopback names (and ALLOWED_HOSTS), whatever the port.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function send(url: string, host: string, method: 'GET' | 'POST' = 'GET', path = '/health', body?: unknown): Promise<{ status: number; body: unknown }> {
  const answer = await request(`${url}${path}`, {
    method,
    headers: { host, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await answer.body.text();
  return { status: answer.statusCode, body: JSON.parse(text) as unknown };
}

const REFUSED = { status: 400, body: { statusCode: '3100', message: 'Generic validation error: the Host header names no address of this server (loopback, or ALLOWED_HOSTS)' } };
const servers = (harness: Harness): string[] => [harness.incomingUrl, harness.outgoingUrl, harness.operationsUrl];
const portOf = (url: string): string => new URL(url).port;

describe('the Host header', () => {
  it('on loopback servers: a rebinding page\'s name is refused on every server, before any payee is looked up', async () => {
    h = await startHarness();
    const harness = h;
    for (const url of servers(harness)) {
      for (const host of [`rebind.attacker.example:${portOf(url)}`, 'rebind.attacker.example', `localhost.attacker.example:${portOf(url)}`, `127.0.0.1.nip.io:${portOf(url)}`, `[::2]:${portOf(url)}`]) {
        expect(await send(url, host), `${url} ${host}`).toEqual(REFUSED);
      }
    }
    const quote = await send(harness.incomingUrl, `rebind.attacker.example:${portOf(harness.incomingUrl)}`, 'POST', '/quoterequests', quoteRequest({ payeeMsisdn: '260971000001', amount: '100' }));
    expect(quote).toEqual(REFUSED);
    // The institution was never asked about the payee: only the start-up health check is counted.
    expect((await harness.app.metrics.registry.getSingleMetricAsString('connector_institution_calls_total')).split('\n').filter((line) => !line.startsWith('#'))).toEqual([
      'connector_institution_calls_total{operation="health",outcome="ok"} 1',
    ]);
  });

  it('refused before its body is read, a request whose body then breaks the parser gets one answer, not two', async () => {
    h = await startHarness();
    const { hostname, port } = new URL(h.incomingUrl);
    const everything = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), hostname);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(received));
      setTimeout(() => socket.destroy(), 3000).unref();
      socket.write('POST /quoterequests HTTP/1.1\r\nHost: rebind.attacker.example\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n');
    });
    expect(everything.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 400']);
    expect(everything.slice(everything.indexOf('\r\n\r\n') + 4)).toBe(JSON.stringify(REFUSED.body));
  });

  it('on loopback servers: loopback names and addresses are served, with or without a port', async () => {
    h = await startHarness();
    for (const url of servers(h)) {
      for (const host of [`localhost:${portOf(url)}`, 'localhost', `LOCALHOST:${portOf(url)}`, `127.0.0.1:${portOf(url)}`, '127.0.0.1', `[::1]:${portOf(url)}`, '[::1]']) {
        expect((await send(url, host)).status, `${url} ${host}`).toBe(200);
      }
    }
  });

  it('FX provider mode: ALLOWED_HOSTS is served on both its servers, other names refused', async () => {
    // Names a proxy forwards from other machines: the demo credentials are refused with them.
    const secrets = { OUTGOING_API_KEY: TEST_CHANNEL_API_KEY, CALLBACK_SECRET: TEST_CALLBACK_SECRET, OPERATOR_CREDENTIALS: TEST_OPERATOR_CREDENTIALS };
    const fx = await startFxpHarness({ env: { ALLOWED_HOSTS: 'fx.bank.example', ...secrets } });
    try {
      for (const url of [fx.url, fx.operationsUrl]) {
        expect((await send(url, 'fx.bank.example')).status, url).toBe(200);
        expect(await send(url, 'rebind.attacker.example'), url).toEqual(REFUSED);
      }
    } finally {
      await fx.close();
    }
  });

  it('ALLOWED_HOSTS adds names (a proxy on the same machine), still refusing others', async () => {
    h = await startHarness({ env: { ALLOWED_HOSTS: 'Connector.Bank.Example, 10.0.0.5' } });
    expect((await send(h.outgoingUrl, 'connector.bank.example:443')).status).toBe(200);
    expect((await send(h.outgoingUrl, '10.0.0.5')).status).toBe(200);
    expect((await send(h.outgoingUrl, `localhost:${portOf(h.outgoingUrl)}`)).status).toBe(200);
    expect(await send(h.outgoingUrl, 'bank.example')).toEqual(REFUSED);
  });

  it('beyond loopback any Host is served unless ALLOWED_HOSTS is set', async () => {
    h = await startHarness({ env: { HOST: '0.0.0.0' } });
    expect((await send(h.outgoingUrl, 'connector.bank.example')).status).toBe(200);
    await h.close();
    h = await startHarness({ env: { HOST: '0.0.0.0', ALLOWED_HOSTS: 'connector.bank.example' } });
    expect((await send(h.outgoingUrl, 'connector.bank.example')).status).toBe(200);
    expect(await send(h.outgoingUrl, 'rebind.attacker.example')).toEqual(REFUSED);
  });
});
