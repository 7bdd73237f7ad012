import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../src/domain/errors.js';
import { expectConnectorError } from './core-banking-contract.js';
import { startFixtureServer, type FixtureReply } from './fixture-server.js';
import { InstitutionHttp } from '../../src/adapters/core-banking/shared/institution-http.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

async function start(reply: FixtureReply) {
  const server = await startFixtureServer({ handle: () => reply, isWrite: () => false });
  const http = new InstitutionHttp({ institution: 'bank', baseUrl: server.url, timeoutMs: 500 });
  closers.push(() => server.close(), () => http.close());
  return { server, http };
}

describe('InstitutionHttp.send', () => {
  it.each([408, 429, 500, 503])('HTTP %i is an outage, never an answer an adapter could read as a decline', async (status) => {
    const { http } = await start({ status, body: { code: 'DECLINED' } });
    await expectConnectorError(http.send({ operation: 'commit', method: 'POST', path: '/x', json: {} }), 'InstitutionUnavailable', new RegExp(`bank commit: HTTP ${status}`));
  });

  it.each([400, 404, 409, 422])('HTTP %i comes back to the adapter, with its headers', async (status) => {
    const { http } = await start({ status, body: { code: 'DECLINED' }, headers: { 'X-Served-From-Cache': 'true' } });
    const answer = await http.send({ operation: 'commit', method: 'POST', path: '/x', json: {} });
    expect({ ...answer, headers: { cache: answer.headers['x-served-from-cache'], type: answer.headers['content-type'] } }).toEqual({
      operation: 'commit',
      status,
      body: { code: 'DECLINED' },
      headers: { cache: 'true', type: 'application/json' },
    });
  });

  it('a 5xx comes back only when it carries the header the request names (a replayed stored failure)', async () => {
    const { http: marked } = await start({ status: 500, body: { Exception: 'stored' }, headers: { 'x-served-from-cache': 'true' } });
    const answer = await marked.send({ operation: 'commit', method: 'POST', path: '/x', json: {}, serverErrorAnsweredWhen: 'x-served-from-cache' });
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 500, body: { Exception: 'stored' } });
    await expectConnectorError(marked.send({ operation: 'commit', method: 'POST', path: '/x', json: {} }), 'InstitutionUnavailable', /bank commit: HTTP 500/);
    const { http: unmarked } = await start({ status: 500, body: { Exception: 'fresh' } });
    await expectConnectorError(unmarked.send({ operation: 'commit', method: 'POST', path: '/x', json: {}, serverErrorAnsweredWhen: 'x-served-from-cache' }), 'InstitutionUnavailable', /bank commit: HTTP 500/);
  });

  it('a body it cannot serialise is a programming error, thrown as is, and nothing is sent', async () => {
    const { server, http } = await start({ status: 200, body: {} });
    const sending = http.send({ operation: 'commit', method: 'POST', path: '/x', json: { amount: 12.5 } });
    await expect(sending).rejects.toThrow(TypeError);
    await expect(sending).rejects.not.toBeInstanceOf(ConnectorError);
    expect(server.requests).toEqual([]);
  });

  it('gives a call at most its connect time plus its answer time in all, however its answer trickles in', async () => {
    // Headers at once, then a byte every 100 ms for 2 s: each gap is within the 300 ms answer time.
    const server: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      let left = 20;
      const timer = setInterval(() => {
        left -= 1;
        response.write(' ');
        if (left === 0) {
          clearInterval(timer);
          response.end('{}');
        }
      }, 100);
      response.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const http = new InstitutionHttp({ institution: 'bank', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 300, connectTimeoutMs: 200 });
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())), () => http.close());
    expect(http.callDeadlineMs).toBe(500);
    await expectConnectorError(http.send({ operation: 'collect', method: 'POST', path: '/x', json: {} }), 'InstitutionTimeout', /^Institution timed out: bank collect: no whole answer within the call's deadline; outcome unknown$/);
  });
});
