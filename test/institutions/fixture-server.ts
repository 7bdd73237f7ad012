import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { JsonSyntaxError, parseDecimalJson, stringifyDecimalJson } from '../../src/adapters/core-banking/shared/decimal-json.js';

/**
 * A real HTTP server on loopback for fixture institutions, with fault injection. Each fixture
 * supplies a handler that reads and changes its books and answers like the institution; this
 * module reads bodies (as decimal JSON, like the adapters), records requests, and plays faults:
 * - server-error: answers 503 without handling the request;
 * - hang-before: never answers and never handles (the request is lost);
 * - hang-after: handles the request (the money moves) and never answers;
 * - malformed-json / malformed-shape: handles the request, then answers 200 with a body that is
 *   not JSON / JSON of the wrong shape.
 * A fault applies to the next request, or to the next money-moving request (`on: 'next-write'`),
 * optionally after letting some through (to hit the second step of a multi-step operation).
 */

export type Fault = 'server-error' | 'hang-before' | 'hang-after' | 'malformed-json' | 'malformed-shape';
export type FaultTarget = 'next-request' | 'next-write';

export interface FixtureRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  /** Parsed with parseDecimalJson; undefined when empty. */
  readonly body: unknown;
}

export interface FixtureReply {
  readonly status: number;
  /** Written with stringifyDecimalJson. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
}

export interface FixtureServerOptions {
  readonly host?: string;
  readonly port?: number;
  readonly handle: (request: FixtureRequest) => FixtureReply | Promise<FixtureReply>;
  /** Whether a request moves money, for faults aimed at the next write. */
  readonly isWrite: (request: FixtureRequest) => boolean;
}

export interface FixtureServer {
  readonly url: string;
  /** Every request received, in order, for assertions (headers included: fixtures hold test credentials only). */
  readonly requests: RecordedRequest[];
  /** Plays `fault` on the next `times` matching requests, after letting `skip` of them through. */
  inject(fault: Fault, on?: FaultTarget, times?: number, skip?: number): void;
  close(): Promise<void>;
}

const BODY_LIMIT_BYTES = 1_048_576;

export async function startFixtureServer(options: FixtureServerOptions): Promise<FixtureServer> {
  const requests: RecordedRequest[] = [];
  const faults: Array<{ fault: Fault; on: FaultTarget; left: number; skip: number }> = [];
  const sockets = new Set<Socket>();

  const takeFault = (request: FixtureRequest): Fault | undefined => {
    const plan = faults[0];
    if (plan === undefined || (plan.on === 'next-write' && !options.isWrite(request))) return undefined;
    if (plan.skip > 0) {
      plan.skip -= 1;
      return undefined;
    }
    plan.left -= 1;
    if (plan.left <= 0) faults.shift();
    return plan.fault;
  };

  const server = createServer((incoming, response) => {
    serve(incoming, response, options, requests, takeFault).catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fixture: server is not listening on TCP');
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    requests,
    inject(fault, on = 'next-request', times = 1, skip = 0) {
      faults.push({ fault, on, left: times, skip });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(
  incoming: IncomingMessage,
  response: ServerResponse,
  options: FixtureServerOptions,
  requests: RecordedRequest[],
  takeFault: (request: FixtureRequest) => Fault | undefined,
): Promise<void> {
  const url = new URL(incoming.url ?? '/', 'http://fixture');
  const text = await readBody(incoming);
  let body: unknown;
  try {
    body = text === '' ? undefined : parseDecimalJson(text);
  } catch (error) {
    const reason = error instanceof JsonSyntaxError ? error.message : 'not JSON';
    send(response, { status: 400, body: { error: 'invalid JSON', reason } });
    return;
  }
  const request: FixtureRequest = { method: incoming.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: incoming.headers, body };
  requests.push({ method: request.method, path: `${url.pathname}${url.search}`, headers: incoming.headers, body });
  const fault = takeFault(request);
  if (fault === 'hang-before') return;
  if (fault === 'server-error') {
    send(response, { status: 503, body: { error: 'service unavailable' } });
    return;
  }
  const reply = await options.handle(request);
  if (fault === 'hang-after') return;
  if (fault === 'malformed-json') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('<html>gateway says hello</html>');
    return;
  }
  if (fault === 'malformed-shape') {
    send(response, { status: 200, body: { unexpected: 'shape' } });
    return;
  }
  send(response, reply);
}

function send(response: ServerResponse, reply: FixtureReply): void {
  const text = reply.body === undefined ? '' : stringifyDecimalJson(reply.body);
  response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(text);
}

function readBody(incoming: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    incoming.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        reject(new Error('fixture: request body too large'));
        incoming.destroy();
        return;
      }
      chunks.push(chunk);
    });
    incoming.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    incoming.on('error', reject);
  });
}
