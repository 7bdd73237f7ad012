import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { errors as undiciErrors } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../domain/errors.js';
import { platformKey } from '../../ports/switch-connector.js';
import { SdkClient, neverReachedSwitch, transportOutcome } from './sdk-client.js';

function coded(code: string): Error {
  return Object.assign(new Error(code), { code });
}

describe('neverReachedSwitch: only connect-phase errors prove the request was not sent', () => {
  it.each([
    ['ECONNREFUSED', coded('ECONNREFUSED')],
    ['ENOTFOUND', coded('ENOTFOUND')],
    ['EAI_AGAIN', coded('EAI_AGAIN')],
    ['UND_ERR_CONNECT_TIMEOUT', coded('UND_ERR_CONNECT_TIMEOUT')],
    ['undici ConnectTimeoutError', new undiciErrors.ConnectTimeoutError()],
    ['every address refused', new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')])],
  ])('%s: never sent', (_name, error) => {
    expect(neverReachedSwitch(error)).toBe(true);
  });

  it.each([
    ['ECONNRESET', coded('ECONNRESET')],
    ['EPIPE', coded('EPIPE')],
    ['ETIMEDOUT', coded('ETIMEDOUT')],
    ['undici SocketError', new undiciErrors.SocketError('other side closed')],
    ['undici HeadersTimeoutError', new undiciErrors.HeadersTimeoutError()],
    ['undici RequestAbortedError', new undiciErrors.RequestAbortedError()],
    ['undici ResponseContentLengthMismatchError', new undiciErrors.ResponseContentLengthMismatchError()],
    ['a parser error', coded('HPE_INVALID_CONSTANT')],
    ['an error without a code', new TypeError('boom')],
    ['not an error', 'ECONNREFUSED'],
    ['nothing', undefined],
    ['one address refused, another reset', new AggregateError([coded('ECONNREFUSED'), coded('ECONNRESET')])],
    ['an empty AggregateError', new AggregateError([])],
  ])('%s: may have been sent', (_name, error) => {
    expect(neverReachedSwitch(error)).toBe(false);
  });
});

describe('transportOutcome', () => {
  const clientError = (cause: unknown) => new ConnectorError('SdkClientError', 'POST /transfers', { cause });

  it('a request that never reached the switch failed: the transfer did not proceed', () => {
    expect(transportOutcome('POST', '/transfers', clientError(coded('ECONNREFUSED')))).toEqual({
      outcome: 'failed',
      httpStatus: 0,
      statusCode: 'none',
      message: 'POST /transfers: ECONNREFUSED',
    });
  });

  it('any other transport error leaves the outcome unknown', () => {
    expect(transportOutcome('PUT', '/transfers/x', clientError(coded('EPIPE')))).toEqual({ outcome: 'unknown', reason: 'PUT /transfers/x: EPIPE; outcome unknown' });
    expect(transportOutcome('PUT', '/transfers/x', clientError(new TypeError('boom')))).toMatchObject({ outcome: 'unknown' });
    expect(transportOutcome('PUT', '/transfers/x', clientError(undefined))).toMatchObject({ outcome: 'unknown' });
  });

  it('a timeout is unknown, whatever its cause', () => {
    const timeout = new ConnectorError('SdkTimeout', 'POST /transfers', { cause: coded('UND_ERR_CONNECT_TIMEOUT') });
    expect(transportOutcome('POST', '/transfers', timeout)).toEqual({ outcome: 'unknown', reason: timeout.message });
  });
});

describe('SdkClient transfer calls without an HTTP answer', () => {
  const servers: Server[] = [];
  const clients: SdkClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  /** A TCP server that reads the request and answers with `reply` (raw bytes), then closes. */
  async function rawServer(reply: string): Promise<string> {
    const server = createServer((socket: Socket) => {
      socket.once('data', () => socket.end(reply));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}`;
  }

  function client(baseUrl: string): SdkClient {
    const sdk = new SdkClient({ baseUrl, timeoutMs: 1000, transferTimeoutMs: 1000 });
    clients.push(sdk);
    return sdk;
  }

  const transfer = { homeTransactionId: 'h', from: { idType: 'MSISDN', idValue: '1' }, to: { idType: 'MSISDN', idValue: '2' } } as never;

  it('a refused connection failed', async () => {
    const baseUrl = await rawServer('');
    await new Promise((resolve) => servers.pop()?.close(resolve));
    expect(await client(baseUrl).initiateTransfer(transfer)).toMatchObject({ outcome: 'failed', httpStatus: 0, message: 'POST /transfers: ECONNREFUSED' });
  });

  it('an answer that is not HTTP came after the request was sent: unknown', async () => {
    const baseUrl = await rawServer('NOT HTTP AT ALL\r\n\r\n');
    const answer = await client(baseUrl).continueTransfer('t-1', { acceptQuote: true } as never);
    expect(answer).toMatchObject({ outcome: 'unknown' });
  });
});

describe('SdkClient: each call bounded as a whole, a wait for a free connection included', () => {
  let server: HttpServer | undefined;
  let sdk: SdkClient | undefined;
  afterEach(async () => {
    await sdk?.close();
    sdk = undefined;
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
  });

  it('an accept queued behind a busy connection gives up at its deadline, is never sent afterwards, and reports itself not sent', async () => {
    const received: string[] = [];
    const held: Array<() => void> = [];
    server = createHttpServer((request, response) => {
      received.push(`${request.method ?? ''} ${request.url ?? ''}`);
      // The first call (an initiation the switch connector is slow on) holds the only connection.
      if (request.method === 'POST') held.push(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"currentState":"WAITING_FOR_QUOTE_ACCEPTANCE"}'));
      else response.writeHead(200, { 'content-type': 'application/json' }).end('{"currentState":"COMPLETED"}');
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const address = listening.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    sdk = new SdkClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300, transferTimeoutMs: 300, connections: 1 });
    // A call of its own, longer time (the transfer calls here have 300 ms).
    const slow = sdk.call('POST', '/transfers', { homeTransactionId: 'h' }, 5000);
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    // Before, the accept waited for the connection without limit and went out once it was free.
    const accept = await sdk.continueTransfer('t-1', { acceptQuote: true });
    expect(accept).toEqual({
      outcome: 'failed',
      httpStatus: 0,
      statusCode: 'none',
      message: 'PUT /transfers/t-1: CC_NO_FREE_CONNECTION',
    });
    held.splice(0).forEach((answer) => answer());
    expect(await slow).toEqual({ status: 200, body: { currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE' } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received).toEqual(['POST /transfers']);
    // The connection is free again: the next call is sent.
    expect(await sdk.call('GET', '/transfers/t-1', undefined, 300)).toEqual({ status: 200, body: { currentState: 'COMPLETED' } });
    expect(received).toEqual(['POST /transfers', 'GET /transfers/t-1']);
  });
});

describe('SdkClient identifier calls', () => {
  let server: HttpServer | undefined;
  const seen: string[] = [];
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
    seen.length = 0;
  });

  /** An HTTP server answering every request with `status` and `body`, recording each path as received. */
  async function answering(status: number, body: unknown): Promise<string> {
    server = createHttpServer((request, response) => {
      seen.push(`${request.method ?? ''} ${request.url ?? ''}`);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const address = listening.address();
    return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/sdk`;
  }

  it('sends a dot-segment value with its dots encoded, under the base URL\'s path', async () => {
    const sdk = new SdkClient({ baseUrl: await answering(200, { response: [{ fspId: 'fsp' }], currentState: 'COMPLETED' }), timeoutMs: 1000 });
    expect(await sdk.deregisterIdentifier({ idType: 'ALIAS', idValue: '..' })).toEqual({ outcome: 'answered', refusals: new Map() });
    expect(await sdk.deregisterIdentifier({ idType: 'ALIAS', idValue: 'shop', idSubValue: '.' })).toEqual({ outcome: 'answered', refusals: new Map() });
    expect(await sdk.deregisterIdentifier({ idType: 'EMAIL', idValue: 'a.b/c@example.com' })).toEqual({ outcome: 'answered', refusals: new Map() });
    expect(seen).toEqual(['DELETE /sdk/accounts/ALIAS/%2E%2E', 'DELETE /sdk/accounts/ALIAS/shop/%2E', 'DELETE /sdk/accounts/EMAIL/a.b%2Fc%40example.com']);
    await sdk.close();
  });

  it('keeps the refusal of ALIAS "a" with the sub-value "b" apart from ALIAS "a/b" in one batch (their keys were both ALIAS/a/b)', async () => {
    const refused = { idType: 'ALIAS', idValue: 'a', idSubValue: 'b', error: { statusCode: '3003', message: 'held by another FSP' } };
    const sdk = new SdkClient({ baseUrl: await answering(200, { response: [{ idType: 'ALIAS', idValue: 'a/b' }, refused] }), timeoutMs: 1000 });
    const answer = await sdk.registerIdentifiers([{ idType: 'ALIAS', idValue: 'a/b', currency: 'ZMW' }, { idType: 'ALIAS', idValue: 'a', idSubValue: 'b', currency: 'ZMW' }]);
    expect(answer).toEqual({ outcome: 'answered', refusals: new Map([['["ALIAS","a","b"]', { statusCode: '3003', message: 'held by another FSP' }]]) });
    expect([platformKey({ idType: 'ALIAS', idValue: 'a/b' }), platformKey({ idType: 'ALIAS', idValue: 'a', idSubValue: 'b' })]).toEqual(['["ALIAS","a/b"]', '["ALIAS","a","b"]']);
    await sdk.close();
  });

  it.each([
    [500, { statusCode: '3204', message: 'Got an error response' }, 'answered'],
    [500, { statusCode: '5100', message: 'Got an error response' }, 'answered'],
    [400, { statusCode: 400, message: 'invalid request' }, 'answered'],
    [500, { statusCode: '500', message: 'socket hang up' }, 'failed'],
    [500, { statusCode: '2001', message: 'internal' }, 'failed'],
    [429, { statusCode: '429', message: 'slow down' }, 'failed'],
    [504, { statusCode: '504', message: 'timeout' }, 'unknown'],
  ] as const)('HTTP %s %j to POST /accounts: %s', async (status, body, outcome) => {
    const sdk = new SdkClient({ baseUrl: await answering(status, body), timeoutMs: 1000 });
    const answer = await sdk.registerIdentifiers([{ idType: 'MSISDN', idValue: '260971000001', currency: 'ZMW' }, { idType: 'MSISDN', idValue: '260971000002', currency: 'ZMW' }]);
    expect(answer.outcome).toBe(outcome);
    if (answer.outcome === 'answered') {
      const refusal = { statusCode: String(body.statusCode), message: `HTTP ${status}, statusCode ${body.statusCode}: ${body.message}` };
      expect(answer.refusals).toEqual(new Map([['["MSISDN","260971000001"]', refusal], ['["MSISDN","260971000002"]', refusal]]));
    }
    await sdk.close();
  });
});
