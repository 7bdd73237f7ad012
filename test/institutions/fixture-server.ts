import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { JsonSyntaxError, parseDecimalJson, stringifyDecimalJson } from '../../src/adapters/core-banking/shared/decimal-json.js';
import { seededRandom } from '../support/seeded-random.js';

/**
 * A real HTTP server on loopback for fixture institutions, with fault injection. Each fixture
 * supplies a handler that reads and changes its books and answers like the institution; this
 * module reads bodies (as decimal JSON, like the adapters), records requests, and plays faults:
 * - server-error: answers 503 without handling the request;
 * - hang-before: never answers and never handles (the request is lost);
 * - hang-after: handles the request (the money moves) and never answers;
 * - malformed-json / malformed-shape: handles the request, then answers 200 with a body that is
 *   not JSON / JSON of the wrong shape;
 * - slow-before: waits `delayMs`, then handles the request and answers: a write still in flight
 *   when the adapter's timeout fires, applied after the adapter has given up on it;
 * - slow-after: handles the request at once (the money moves) and answers only after `delayMs`;
 * - applied-then-5xx: handles the request (the money moves), then answers 500 as a server that
 *   failed after its commit does.
 * A fault applies to the next request, or to the next money-moving request (`on: 'next-write'`),
 * optionally after letting some through (to hit the second step of a multi-step operation).
 * `chaos` plays faults at random instead, from a seeded generator, for soak tests.
 */

export type Fault =
  | 'server-error'
  | 'hang-before'
  | 'hang-after'
  | 'malformed-json'
  | 'malformed-shape'
  | 'slow-before'
  | 'slow-after'
  | 'applied-then-5xx';

/** Random faults: each matching request draws one with probability `rate` (0-1), seeded so a run can be replayed. */
export interface ChaosPlan {
  readonly seed: number;
  readonly rate: number;
  readonly faults: readonly Fault[];
  readonly on?: FaultTarget;
  /** Delay of slow-before and slow-after; default 1500 ms. */
  readonly delayMs?: number;
}
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
  /**
   * Called once a request has reached the institution, before any slow-before delay: answers a
   * request the institution settles without running it (an idempotent replay, a request whose
   * first attempt is still running), or undefined to let it run (the institution may then mark
   * it as running). Requests lost before reaching the institution (hang-before, server-error)
   * never get here.
   */
  readonly admit?: (request: FixtureRequest) => FixtureReply | undefined;
}

export interface FixtureServer {
  readonly url: string;
  /** Every request received, in order, for assertions (headers included: fixtures hold test credentials only). */
  readonly requests: RecordedRequest[];
  /** Plays `fault` on the next `times` matching requests, after letting `skip` of them through. */
  inject(fault: Fault, on?: FaultTarget, times?: number, skip?: number, delayMs?: number): void;
  /** Plays random faults until called again with `undefined`; queued `inject` faults come first. */
  chaos(plan: ChaosPlan | undefined): void;
  /** How many times each fault was played, for the figures a soak test prints. */
  readonly faultCounts: Readonly<Record<string, number>>;
  /** The same, counting only money-moving requests (isWrite): where an ambiguous fault matters. */
  readonly writeFaultCounts: Readonly<Record<string, number>>;
  close(): Promise<void>;
}

const DEFAULT_DELAY_MS = 1500;

interface PlayedFault {
  readonly fault: Fault;
  readonly delayMs: number;
}

const BODY_LIMIT_BYTES = 1_048_576;

export async function startFixtureServer(options: FixtureServerOptions): Promise<FixtureServer> {
  const requests: RecordedRequest[] = [];
  const faults: Array<{ fault: Fault; on: FaultTarget; left: number; skip: number; delayMs: number }> = [];
  const sockets = new Set<Socket>();
  const faultCounts: Record<string, number> = {};
  const writeFaultCounts: Record<string, number> = {};
  let chaos: { plan: ChaosPlan; random: () => number } | undefined;

  const counted = (played: PlayedFault, request: FixtureRequest): PlayedFault => {
    faultCounts[played.fault] = (faultCounts[played.fault] ?? 0) + 1;
    if (options.isWrite(request)) writeFaultCounts[played.fault] = (writeFaultCounts[played.fault] ?? 0) + 1;
    return played;
  };
  const randomFault = (request: FixtureRequest): PlayedFault | undefined => {
    if (chaos === undefined) return undefined;
    const { plan, random } = chaos;
    if ((plan.on ?? 'next-request') === 'next-write' && !options.isWrite(request)) return undefined;
    if (random() >= plan.rate) return undefined;
    const fault = plan.faults[Math.floor(random() * plan.faults.length)];
    return fault === undefined ? undefined : counted({ fault, delayMs: plan.delayMs ?? DEFAULT_DELAY_MS }, request);
  };
  const takeFault = (request: FixtureRequest): PlayedFault | undefined => {
    const plan = faults[0];
    if (plan === undefined) return randomFault(request);
    if (plan.on === 'next-write' && !options.isWrite(request)) return undefined;
    if (plan.skip > 0) {
      plan.skip -= 1;
      return undefined;
    }
    plan.left -= 1;
    if (plan.left <= 0) faults.shift();
    return counted({ fault: plan.fault, delayMs: plan.delayMs }, request);
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
    inject(fault, on = 'next-request', times = 1, skip = 0, delayMs = DEFAULT_DELAY_MS) {
      faults.push({ fault, on, left: times, skip, delayMs });
    },
    chaos(plan) {
      chaos = plan === undefined ? undefined : { plan, random: seededRandom(plan.seed) };
    },
    faultCounts,
    writeFaultCounts,
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
  takeFault: (request: FixtureRequest) => PlayedFault | undefined,
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
  const played = takeFault(request);
  const fault = played?.fault;
  if (fault === 'hang-before') return;
  if (fault === 'server-error') {
    send(response, { status: 503, body: { error: 'service unavailable' } });
    return;
  }
  // A request the institution settles without running it still meets the faults after handling.
  let reply = options.admit?.(request);
  if (reply === undefined) {
    if (fault === 'slow-before') await sleep(played?.delayMs ?? DEFAULT_DELAY_MS);
    reply = await options.handle(request);
  }
  if (fault === 'hang-after') return;
  if (fault === 'slow-after') await sleep(played?.delayMs ?? DEFAULT_DELAY_MS);
  if (fault === 'applied-then-5xx') {
    send(response, { status: 500, body: { error: 'internal server error' } });
    return;
  }
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
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
