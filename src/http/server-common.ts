import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { ConnectorError } from '../domain/errors.js';
import type { Logger } from '../ports/logger.js';
import { mapError } from './error-mapping.js';

export interface ServerOptions {
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** Names the server in log lines ("incoming", "outgoing"). */
  readonly name: string;
  /** Answer institution errors with the catalogue text only (the switch-facing server). */
  readonly hideInstitutionDetail?: boolean;
  /**
   * Fastify's connectionTimeout (socket inactivity, which lasts while a handler waits) and
   * requestTimeout; default 120 s. Must exceed the longest a handler can wait on the switch.
   */
  readonly requestTimeoutMs?: number;
  /** Serve HTTPS with this certificate and key; with `ca`, clients must present a certificate it signed (mutual TLS). */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly ca: Buffer | undefined };
}

function httpsOptions(tls: NonNullable<ServerOptions['tls']>): { cert: Buffer; key: Buffer; ca?: Buffer; requestCert?: boolean; rejectUnauthorized?: boolean; minVersion: 'TLSv1.2' } {
  if (tls.ca === undefined) return { cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' };
  return { cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2' };
}

/** The time limit of a request when the server's options set none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

/**
 * A Fastify instance with the connector's conventions: JSON bodies validated without type
 * coercion, defaults or stripping of unknown fields; every error answered as
 * {statusCode, message}; one log line per request with ids but no payload.
 */
export function createServer(options: ServerOptions): FastifyInstance {
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const server = Fastify({
    ...(options.tls === undefined ? {} : { https: httpsOptions(options.tls) }),
    logger: false,
    bodyLimit: options.bodyLimitBytes,
    connectionTimeout: requestTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: 65_000,
    return503OnClosing: true,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, strict: false } },
  });

  trackHandlers(server);

  server.setErrorHandler((error: FastifyError, request, reply) => {
    const converted = convertFastifyError(error);
    const hide = options.hideInstitutionDetail === true;
    const mapped = mapError(converted, { hideInstitutionDetail: hide });
    if (mapped.unexpected) {
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

/** Fastify's own errors (validation, JSON syntax, size) become catalogue errors. */
function convertFastifyError(error: FastifyError): unknown {
  if (error instanceof ConnectorError) return error;
  if (error.validation !== undefined) {
    const first = error.validation[0];
    const where = first === undefined ? '' : `${error.validationContext ?? 'body'}${first.instancePath}`;
    const missing = first?.keyword === 'required';
    const detail = first === undefined ? error.message : `${where} ${first.message ?? 'is invalid'}`;
    return new ConnectorError(missing ? 'MissingElement' : 'ValidationFailed', detail);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ConnectorError('MalformedSyntax', error.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ConnectorError('ValidationFailed', 'request body too large');
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
    for (const key of ['transferId', 'quoteId', 'homeTransactionId'] as const) {
      const value = (source as Record<string, unknown>)[key];
      if (typeof value === 'string' && value.length <= 64) ids[key] = value;
    }
  }
  return ids;
}
