import { Agent, request, errors as undiciErrors } from 'undici';
import { ConnectorError } from '../../../domain/errors.js';
import { InstitutionHealthError } from '../../../ports/core-banking.js';
import { JsonSyntaxError, parseDecimalJson, stringifyDecimalJson } from './decimal-json.js';
import { MalformedResponse } from './wire-reader.js';

/**
 * The one HTTP exchange every institution adapter uses. It owns the limits (connect, headers
 * and body timeouts, response size) and the first half of sorting an answer:
 * - no answer in time after the request went out: InstitutionTimeout, the outcome is unknown;
 * - the request never reached the institution (refused, DNS, connect timeout): InstitutionUnavailable;
 * - 5xx, 408 (request timeout) and 429 (too many requests): InstitutionUnavailable; these say
 *   nothing about the request's business, so no adapter may read them as a decline;
 * - other 2xx and 4xx come back to the adapter, which parses a 2xx (see `parse2xx`) and maps a 4xx
 *   to a decline from the catalogue, because only the adapter knows the institution's codes.
 * Messages name the institution and the operation, never a URL (it may hold a phone number),
 * a header (it may hold a credential) or a body.
 */

export interface InstitutionHttpOptions {
  /** Name used in error messages, e.g. "fineract". */
  readonly institution: string;
  readonly baseUrl: string;
  /**
   * Time allowed for the answer's headers, and again between body chunks. A call as a whole,
   * from the moment it is sent (a wait for a free connection included) to its last byte, gets at
   * most the connect time plus this (callDeadlineMs), so an adapter can state how long its
   * operations may run.
   */
  readonly timeoutMs: number;
  /** Time allowed to open the connection; defaults to the smaller of timeoutMs and 5 s. */
  readonly connectTimeoutMs?: number;
  /** Largest answer accepted; a float account's statement can be long, so adapters raise it when needed. */
  readonly maxResponseBytes?: number;
  readonly connections?: number;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface InstitutionRequest {
  /** Our name for the call, used in messages: "lookupParty", "commit: deposit". */
  readonly operation: string;
  readonly method: HttpMethod;
  /** Path and query below the base URL, already encoded. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Serialised with stringifyDecimalJson (JsonNumber for wire numbers). */
  readonly json?: unknown;
  /**
   * A response header (lower case) that makes a 5xx an answer for the adapter to read rather than
   * InstitutionUnavailable: an institution that replays a failure it stored under an idempotency
   * key marks the replay (Fineract: `x-served-from-cache`), and only the adapter knows what the
   * replayed failure says about the request.
   */
  readonly serverErrorAnsweredWhen?: string;
}

export interface InstitutionAnswer {
  readonly operation: string;
  readonly status: number;
  /** Parsed with parseDecimalJson; undefined for an empty body; MalformedBody when it is not JSON. */
  readonly body: unknown;
  /** Response headers, names in lower case; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
}

/** An answer whose body is not JSON; kept apart so that a 4xx with an HTML page still sorts as a 4xx. */
export class MalformedBody {
  constructor(readonly reason: string) {}
}

export class InstitutionHttp {
  readonly #agent: Agent;
  readonly #options: InstitutionHttpOptions;

  constructor(options: InstitutionHttpOptions) {
    this.#options = options;
    this.#agent = new Agent({
      connections: options.connections ?? 32,
      connectTimeout: this.#connectTimeoutMs(),
      keepAliveTimeout: 10_000,
      maxResponseSize: options.maxResponseBytes ?? 1_048_576,
    });
  }

  get institution(): string {
    return this.#options.institution;
  }

  /** The longest one call can take, whatever it waits for: the connect time plus the answer's. */
  get callDeadlineMs(): number {
    return this.#connectTimeoutMs() + this.#options.timeoutMs;
  }

  #connectTimeoutMs(): number {
    return this.#options.connectTimeoutMs ?? Math.min(this.#options.timeoutMs, 5000);
  }

  /**
   * Sends one request; throws InstitutionTimeout, InstitutionUnavailable, or returns a 2xx/4xx
   * answer (never 408 or 429), or a 5xx marked with the request's serverErrorAnsweredWhen header.
   */
  async send(call: InstitutionRequest): Promise<InstitutionAnswer> {
    const { institution, baseUrl, timeoutMs } = this.#options;
    // Outside the try: a body that cannot be serialised is our bug, not the institution's outage.
    const body = call.json === undefined ? undefined : stringifyDecimalJson(call.json);
    let status: number;
    let text: string;
    let headers: Record<string, string>;
    try {
      const response = await request(`${baseUrl}${call.path}`, {
        method: call.method,
        dispatcher: this.#agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(this.callDeadlineMs),
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...call.headers,
        },
        ...(body === undefined ? {} : { body }),
      });
      status = response.statusCode;
      headers = headerValues(response.headers);
      text = await response.body.text();
    } catch (error) {
      throw transportError(institution, call.operation, error);
    }
    const answeredServerError = status >= 500 && call.serverErrorAnsweredWhen !== undefined && headers[call.serverErrorAnsweredWhen] !== undefined;
    if ((status >= 500 && !answeredServerError) || status === 408 || status === 429) {
      throw new ConnectorError('InstitutionUnavailable', `${institution} ${call.operation}: HTTP ${status}`);
    }
    if (status < 200 || (status >= 300 && status < 400) || status > 599) {
      throw new ConnectorError('InstitutionUnavailable', `${institution} ${call.operation}: unexpected HTTP ${status}`);
    }
    return { operation: call.operation, status, body: parseBody(text), headers };
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

function headerValues(raw: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function parseBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return parseDecimalJson(text);
  } catch (error) {
    return new MalformedBody(error instanceof JsonSyntaxError ? error.message : 'not JSON');
  }
}

/**
 * Parses a 2xx answer with the adapter's guard. A body that is not JSON or fails the guard is
 * InstitutionUnavailable with a message saying what was wrong: the institution said yes in a
 * way we cannot read, so the caller must treat the operation as not confirmed.
 */
export function parse2xx<T>(http: InstitutionHttp, answer: InstitutionAnswer, parse: (body: unknown) => T): T {
  const where = `${http.institution} ${answer.operation}`;
  if (answer.body instanceof MalformedBody) {
    throw new ConnectorError('InstitutionUnavailable', `${where}: malformed response body (${answer.body.reason})`);
  }
  const body = answer.body;
  return readWire(http, answer.operation, () => parse(body));
}

/**
 * Runs a conversion of data the institution sent, outside a single answer (e.g. combining two
 * answers); a MalformedResponse becomes InstitutionUnavailable as in parse2xx.
 */
export function readWire<T>(http: InstitutionHttp, operation: string, convert: () => T): T {
  try {
    return convert();
  } catch (error) {
    if (error instanceof MalformedResponse) {
      throw new ConnectorError('InstitutionUnavailable', `${http.institution} ${operation}: malformed response: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

function transportError(institution: string, operation: string, error: unknown): ConnectorError {
  const where = `${institution} ${operation}`;
  if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
    return new ConnectorError('InstitutionTimeout', `${where}: no answer in time; outcome unknown`, { cause: error });
  }
  // The call's overall deadline passed (AbortSignal.timeout): it may have been sent and acted on.
  if (isDeadline(error)) {
    return new ConnectorError('InstitutionTimeout', `${where}: no whole answer within the call's deadline; outcome unknown`, { cause: error });
  }
  // The request may have been read and acted on before the connection broke.
  if (error instanceof undiciErrors.SocketError || errorCode(error) === 'ECONNRESET') {
    return new ConnectorError('InstitutionTimeout', `${where}: connection lost before the answer; outcome unknown`, { cause: error });
  }
  if (error instanceof undiciErrors.ResponseExceededMaxSizeError) {
    return new ConnectorError('InstitutionUnavailable', `${where}: answer larger than the configured limit`, { cause: error });
  }
  // Refused, unreachable, DNS failure or connect timeout: the request never reached the institution.
  const detail = `cannot connect (${errorCode(error) ?? 'error'})`;
  return new ConnectorError('InstitutionUnavailable', `${where}: ${detail}`, { cause: new InstitutionHealthError('unreachable', `${where}: ${detail}`, { cause: error }) });
}

function isDeadline(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'TimeoutError' || error instanceof undiciErrors.RequestAbortedError) return true;
  return error.cause instanceof Error && error.cause.name === 'TimeoutError';
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}
