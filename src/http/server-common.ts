import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ConnectorError, type ErrorName } from '../domain/errors.js';
import { textProblem } from '../domain/text.js';
import { isLoopbackHost } from '../listen-security.js';
import type { Logger } from '../ports/logger.js';
import { mapError } from './error-mapping.js';
import { isStoreOutage } from '../adapters/store/store-outage.js';
import { parseJsonBody } from './json-body.js';
import type { ConnectorMetrics } from '../metrics/connector-metrics.js';

export interface ServerOptions {
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** Names the server in log lines ("incoming", "outgoing"). */
  readonly name: string;
  /** Answer institution errors with the catalogue text only (the switch-facing server). */
  readonly hideInstitutionDetail?: boolean;
  /**
   * How long a connection may stay silent, which lasts while a handler waits (Fastify's
   * connectionTimeout); default 120 s. Must exceed the longest a handler can wait.
   */
  readonly requestTimeoutMs?: number;
  /** Connection and request limits; see ServerLimits for the defaults. */
  readonly limits?: Partial<ServerLimits>;
  /** Prometheus metrics: requests of this server counted and timed, GET /metrics served. */
  readonly metrics?: ConnectorMetrics;
  /**
   * Names (lower case, no port) accepted in the Host header beside loopback's (ALLOWED_HOSTS).
   * A server bound to a loopback address takes only loopback names and these; one bound beyond
   * loopback takes any Host unless this list is given.
   */
  readonly allowedHosts?: readonly string[];
  /** Serve HTTPS with this certificate and key; with `ca`, clients must present a certificate it signed (mutual TLS). */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly ca: Buffer | undefined };
}

/** What one server lets its clients do; the settings are in config.ts. */
export interface ServerLimits {
  /** Open connections at once; a connection over the cap is closed at once. */
  readonly maxConnections: number;
  /** Requests one keep-alive connection may carry before the server closes it. */
  readonly maxRequestsPerSocket: number;
  /** Time allowed to receive a request's headers, and the whole request (408 after). */
  readonly receiveTimeoutMs: number;
  /** How often Node checks connections against receiveTimeoutMs (so a 408 may come this much later). */
  readonly checkIntervalMs: number;
}

export const DEFAULT_LIMITS: ServerLimits = { maxConnections: 1024, maxRequestsPerSocket: 1000, receiveTimeoutMs: 65_000, checkIntervalMs: 5000 };

/** Path parameters up to this many characters are routed (ids are up to 128, percent-encoded up to 3 bytes each). */
export const MAX_PARAM_LENGTH = 512;

function httpsOptions(tls: NonNullable<ServerOptions['tls']>): { cert: Buffer; key: Buffer; ca?: Buffer; requestCert?: boolean; rejectUnauthorized?: boolean; minVersion: 'TLSv1.2' } {
  if (tls.ca === undefined) return { cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' };
  return { cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2' };
}

/** Longest a TLS handshake may take (and never longer than the receive timeout). */
const MAX_HANDSHAKE_TIMEOUT_MS = 10_000;

/** Longest an idle keep-alive connection is kept (and never longer than the receive timeout). */
const MAX_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The time limit of a request when the server's options set none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

/**
 * A Fastify instance with the connector's conventions: JSON bodies parsed by parseJsonBody and
 * validated without type coercion, defaults or stripping of unknown fields; every error,
 * framework and socket errors included, answered as {statusCode, message}; one log line per
 * request with ids but no payload.
 */
export function createServer(options: ServerOptions): FastifyInstance {
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const receiveTimeoutMs = options.limits?.receiveTimeoutMs ?? DEFAULT_LIMITS.receiveTimeoutMs;
  // Checked often enough that a 408 comes at most a quarter of the limit late (5 s at most).
  const checkIntervalMs = Math.min(DEFAULT_LIMITS.checkIntervalMs, Math.max(100, Math.floor(receiveTimeoutMs / 4)));
  const limits: ServerLimits = { ...DEFAULT_LIMITS, checkIntervalMs, ...options.limits };
  // Node's own limits on receiving a request (headersTimeout may not exceed requestTimeout).
  const nodeServerOptions = { headersTimeout: limits.receiveTimeoutMs, connectionsCheckingInterval: limits.checkIntervalMs };
  // A TLS socket counts against maxConnections from its TCP connection on, but the receive
  // limits start once its handshake is done: without this a client that never begins one (no
  // certificate needed) holds a slot for Node's default of 120 s.
  const handshakeTimeoutMs = Math.min(MAX_HANDSHAKE_TIMEOUT_MS, limits.receiveTimeoutMs);
  const server = Fastify({
    ...(options.tls === undefined ? { http: nodeServerOptions } : { https: { ...httpsOptions(options.tls), ...nodeServerOptions, handshakeTimeout: handshakeTimeoutMs } }),
    logger: false,
    bodyLimit: options.bodyLimitBytes,
    connectionTimeout: requestTimeoutMs,
    requestTimeout: limits.receiveTimeoutMs,
    // An idle keep-alive connection holds a slot too: no longer than a client may take to send a request.
    keepAliveTimeout: Math.min(MAX_KEEP_ALIVE_TIMEOUT_MS, limits.receiveTimeoutMs),
    maxRequestsPerSocket: limits.maxRequestsPerSocket,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Answered by our own hook below, in the error contract.
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    frameworkErrors: (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      const converted =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new ConnectorError('ValidationFailed', `a path segment is longer than ${MAX_PARAM_LENGTH} characters`)
          : new ConnectorError('MalformedSyntax', error.code === 'FST_ERR_BAD_URL' ? 'the URL is not validly percent-encoded' : error.message);
      const mapped = mapError(converted);
      void reply.status(mapped.status).send(mapped.body);
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, strict: false } },
  });
  server.server.maxConnections = limits.maxConnections;

  server.removeContentTypeParser('application/json');
  server.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  const stopping = trackConnections(server);
  server.addHook('preClose', (done) => {
    stopping.refusing = true;
    done();
  });
  server.addHook('onRequest', (request, reply, done) => {
    if (stopping.refusing) {
      void reply.header('connection', 'close');
      return done(new ConnectorError('ShuttingDown'));
    }
    // The drain before a stop: the readiness probe says so, every other route serves as usual.
    if (stopping.draining && request.url.split('?')[0] === '/health') {
      const mapped = mapError(new ConnectorError('ShuttingDown', 'unhealthy: shutting-down'));
      void reply.status(mapped.status).send(mapped.body);
      return;
    }
    // Followed until its answer is written (onResponse below): no listener of its own per request.
    stopping.connections.get(request.raw.socket)?.add(request.raw);
    done();
  });
  server.addHook('onRequest', hostCheck(server, options.allowedHosts ?? []));
  // Path and query text follows the same rules as body text (parseJsonBody).
  server.addHook('preValidation', (request, _reply, done) => {
    const problem = findParameterProblem(request.params, 'path parameter') ?? findParameterProblem(request.query, 'query parameter');
    done(problem === undefined ? undefined : new ConnectorError('ValidationFailed', problem));
  });

  trackHandlers(server);
  if (options.metrics !== undefined) {
    options.metrics.instrumentServer(server, options.name);
    options.metrics.serve(server);
  }

  const outageLog = new OutageLog(options.logger, options.name);
  server.setErrorHandler((error: FastifyError, request, reply) => {
    // (An institution's or the switch's refused connection arrives as a ConnectorError of its own.)
    // The request's own errors first (a client that hung up mid-body is ECONNRESET too, and a 400):
    // only what is left, from a handler, may be the database's.
    const own = convertFastifyError(error);
    const outage = !(own instanceof ConnectorError) && isStoreOutage(own);
    const converted = outage ? new ConnectorError('StoreUnavailable') : own;
    const hide = options.hideInstitutionDetail === true;
    const mapped = mapError(converted, { hideInstitutionDetail: hide });
    if (outage) {
      outageLog.record(routeOf(request), error);
    } else if (mapped.unexpected) {
      options.logger.fatal({ server: options.name, route: routeOf(request), err: error }, 'unexpected error');
    } else if (hide && converted instanceof ConnectorError && converted.fromInstitution) {
      // The caller got the catalogue text; the institution's own words are kept here.
      options.logger.warn({ server: options.name, route: routeOf(request), code: converted.code, detail: converted.message, ...idsOf(request) }, 'institution error answered');
    }
    void reply.status(mapped.status).send(mapped.body);
  });

  server.setNotFoundHandler((request, reply) => {
    const mapped = mapError(new ConnectorError('UnknownRoute', `${request.method} ${request.url.split('?')[0] ?? ''}`));
    void reply.status(mapped.status).send(mapped.body);
  });

  server.addHook('onResponse', (request, reply, done) => {
    const requests = stopping.connections.get(request.raw.socket);
    if (requests !== undefined) {
      requests.delete(request.raw);
      if (stopping.closing && requests.size === 0) request.raw.socket.destroySoon();
    }
    options.logger.info(
      {
        server: options.name,
        method: request.method,
        route: routeOf(request),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        ...idsOf(request),
      },
      'request',
    );
    done();
  });
  return server;
}

/**
 * Refuses a request whose Host header names no address of this server. A web page the machine's
 * browser opens can reach a loopback server by DNS rebinding (its own name made to resolve to
 * 127.0.0.1), and the incoming server has no credentials of its own: such a request carries the
 * page's name in Host. The port is not compared.
 */
function hostCheck(server: FastifyInstance, allowedHosts: readonly string[]): (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void {
  let enforced: boolean | undefined;
  return (request, _reply, done) => {
    if (enforced === undefined) {
      // Where the server is bound does not change once it listens.
      const address = server.server.address();
      enforced = allowedHosts.length > 0 || (typeof address === 'object' && address !== null && isLoopbackHost(address.address));
    }
    if (!enforced) return done();
    const header = request.headers.host;
    const name = header === undefined ? undefined : hostName(header);
    if (name !== undefined && (isLoopbackHost(name) || allowedHosts.includes(name))) return done();
    done(new ConnectorError('ValidationFailed', 'the Host header names no address of this server (loopback, or ALLOWED_HOSTS)'));
  };
}

/** The name in a Host header, in lower case, without its port ("[::1]:3003" gives "[::1]"). */
function hostName(header: string): string {
  const text = header.trim().toLowerCase();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    return end < 0 ? text : text.slice(0, end + 1);
  }
  const colon = text.indexOf(':');
  // More than one colon is not a name and a port (an IPv6 address comes bracketed): kept whole.
  return colon < 0 || text.indexOf(':', colon + 1) >= 0 ? text : text.slice(0, colon);
}

/** Route handlers still running, by server: a client that hangs up does not stop its handler. */
const runningHandlers = new WeakMap<FastifyInstance, Set<Promise<unknown>>>();

/**
 * Wraps every route handler registered from now on so that its work is counted until it ends,
 * whether or not its client is still connected: closing the server only waits for connections.
 */
function trackHandlers(server: FastifyInstance): void {
  const running = new Set<Promise<unknown>>();
  runningHandlers.set(server, running);
  server.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const work = Promise.resolve().then(() => handler.call(this, request, reply));
      running.add(work);
      const forget = (): void => {
        running.delete(work);
      };
      work.then(forget, forget);
      return work;
    };
  });
}

/**
 * Resolves once no route handler of `server` is running, including handlers whose clients
 * hung up. Call after server.close(), before closing what the handlers use (the database).
 */
export async function handlersSettled(server: FastifyInstance): Promise<void> {
  const running = runningHandlers.get(server);
  while (running !== undefined && running.size > 0) await Promise.allSettled([...running]);
}

/** What a server's stop needs to know of its connections and requests. */
interface StopState {
  /** New requests are answered 503 2003 (the stop has begun). */
  refusing: boolean;
  /** The drain before a stop: /health answers 503, the rest serves. */
  draining: boolean;
  /** The listener is closed: a connection is ended as soon as it carries no request. */
  closing: boolean;
  /** Open connections, each with its requests whose answers are not yet written. */
  readonly connections: Map<Duplex, Set<IncomingMessage>>;
}

const stopStates = new WeakMap<FastifyInstance, StopState>();

/**
 * Follows each connection and the requests it carries, from their headers' arrival to their
 * answer's end. Fastify's close drops only the connections Node counts as idle, which leaves
 * one that has sent nothing yet or part of its headers open until its timeout (65 s or more).
 */
function trackConnections(server: FastifyInstance): StopState {
  const state: StopState = { refusing: false, draining: false, closing: false, connections: new Map() };
  stopStates.set(server, state);
  const follow = (socket: Duplex): void => {
    if (state.closing) {
      socket.destroy();
      return;
    }
    state.connections.set(socket, new Set());
    socket.once('close', () => state.connections.delete(socket));
  };
  // Over TLS the requests come on the TLS socket, known once its handshake is done (a handshake
  // has its own limit, handshakeTimeout).
  server.server.on(server.server instanceof HttpsServer ? 'secureConnection' : 'connection', follow);
  // Its requests are added and taken away by the server's onRequest and onResponse hooks
  // (createServer), which run for every request anyway: a listener per request cost the payee
  // lifecycle about 5% of its CPU. A request whose client hangs up ends with its connection.
  return state;
}

/** From now on the server answers every new request 503 2003 (Service shutting down). */
export function refuseNewRequests(server: FastifyInstance): void {
  const state = stopStates.get(server);
  if (state !== undefined) state.refusing = true;
}

/** Starts or ends the drain before a stop: /health answers 503 naming shutting-down, nothing else changes. */
export function setDraining(server: FastifyInstance, draining: boolean): void {
  const state = stopStates.get(server);
  if (state !== undefined) state.draining = draining;
}

/**
 * Closes the server: no new connections; a connection with no request under way (none sent yet,
 * headers or a body only partly sent, or idle between requests) is closed at once; a request under
 * way is answered and its connection closed after; once every route handler has settled and every
 * answer is written, whatever is left is closed. Resolves once the server is closed.
 */
export async function closeServer(server: FastifyInstance): Promise<void> {
  const state = stopStates.get(server);
  if (state === undefined) {
    await server.close();
    await handlersSettled(server);
    return;
  }
  state.refusing = true;
  const closed = server.close();
  state.closing = true;
  for (;;) {
    await handlersSettled(server);
    let answering = false;
    for (const [socket, requests] of state.connections) {
      // A request not wholly received by now never reached its handler: not waited for.
      if ([...requests].some((request) => request.complete)) answering = true;
      else socket.destroy();
    }
    if (!answering) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  server.server.closeAllConnections();
  await closed;
  await handlersSettled(server);
}

/** Closes every connection of the server at once (the stop's deadline has passed). */
export function dropConnections(server: FastifyInstance): void {
  for (const socket of stopStates.get(server)?.connections.keys() ?? []) socket.destroy();
  server.server.closeAllConnections();
}

/** Fastify's own errors (validation, JSON syntax, size) become catalogue errors. */
function convertFastifyError(error: FastifyError): unknown {
  if (error instanceof ConnectorError) return error;
  if (error.validation !== undefined) {
    const first = error.validation[0];
    const where = first === undefined ? '' : `${error.validationContext ?? 'body'}${first.instancePath}`;
    const missing = first?.keyword === 'required';
    // Ajv's own message for a field the schema does not define ("must NOT have additional
    // properties") does not say which one; the answer names it.
    const unknown = first?.keyword === 'additionalProperties' ? first.params['additionalProperty'] : undefined;
    const detail =
      first === undefined ? error.message : typeof unknown === 'string' ? `${where}/${unknown} is not a field of this request` : `${where} ${first.message ?? 'is invalid'}`;
    return new ConnectorError(missing ? 'MissingElement' : 'ValidationFailed', detail);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ConnectorError('MalformedSyntax', error.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ConnectorError('TooLargePayload', 'the request body is over the size limit');
    default:
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return new ConnectorError('MalformedSyntax', error.message);
      }
      return error;
  }
}

function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unknown';
}

/** Switch ids from the path or body, for correlating log lines; nothing else of the payload. */
function idsOf(request: FastifyRequest): Record<string, string> {
  const ids: Record<string, string> = {};
  for (const source of [request.params, request.body]) {
    if (typeof source !== 'object' || source === null) continue;
    for (const key of ['transferId', 'quoteId', 'homeTransactionId', 'commitRequestId', 'conversionRequestId'] as const) {
      const value = (source as Record<string, unknown>)[key];
      if (typeof value === 'string' && value.length <= 64) ids[key] = value;
    }
  }
  return ids;
}

/** The first path or query value breaking the text rules, as a message; undefined when clean. */
function findParameterProblem(values: unknown, kind: string): string | undefined {
  if (typeof values !== 'object' || values === null) return undefined;
  for (const [name, value] of Object.entries(values)) {
    for (const text of Array.isArray(value) ? value : [value]) {
      const problem = typeof text === 'string' ? textProblem(text) : undefined;
      if (problem !== undefined) return `${kind} ${name.replace(/[\p{Cc}\p{Cs}]/gu, '?').slice(0, 40)} ${problem}`;
    }
  }
  return undefined;
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a request line or headers
 * that are not HTTP, headers over the size limit, a client too slow to send its request):
 * answered in the error contract on the raw socket, which is then closed.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex & { _httpMessage?: { readonly headersSent: boolean } | null }): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // A request refused before its body was read (a Host or a credential refused) has its answer
  // under way on this socket; the body's error must not add a second one (as Node's own handler).
  if (socket._httpMessage?.headersSent === true) {
    socket.destroy();
    return;
  }
  const [name, detail]: [ErrorName, string] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? ['ClientTimeout', 'the request was not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? ['HeadersTooLarge', 'the request line and headers are over the size limit']
        : ['MalformedSyntax', `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`];
  const mapped = mapError(new ConnectorError(name, detail));
  const body = JSON.stringify(mapped.body);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const head = `HTTP/1.1 ${mapped.status} ${STATUS_CODES[mapped.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  // Closed once the answer is flushed, or after a second if the client does not read it.
  socket.end(head + body, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * A database outage fails every request while it lasts: each is answered 503, but logged at error
 * level once per OUTAGE_LOG_INTERVAL_MS per server, with how many failed since the last line, so
 * that an outage is one alert, not hundreds of fatal "unexpected error" lines.
 */
const OUTAGE_LOG_INTERVAL_MS = 10_000;

export class OutageLog {
  #loggedAt = Number.NEGATIVE_INFINITY;
  #unlogged = 0;
  #flush: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly server: string,
    private readonly intervalMs = OUTAGE_LOG_INTERVAL_MS,
  ) {}

  record(route: string, error: unknown): void {
    this.#unlogged += 1;
    const sinceMs = performance.now() - this.#loggedAt;
    if (sinceMs >= this.intervalMs) {
      this.#log({ route, err: error });
      return;
    }
    // The failures of the interval are told at its end, so the last of an outage are not lost.
    this.#flush ??= setTimeout(() => {
      this.#flush = undefined;
      if (this.#unlogged > 0) this.#log({ route });
    }, this.intervalMs - sinceMs).unref();
  }

  #log(detail: { route: string; err?: unknown }): void {
    this.logger.error({ server: this.server, ...detail, failedRequests: this.#unlogged }, 'database unavailable; requests answered 503');
    this.#loggedAt = performance.now();
    this.#unlogged = 0;
  }
}
