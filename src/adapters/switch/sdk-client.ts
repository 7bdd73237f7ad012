import { Agent, errors as undiciErrors } from 'undici';
import { ConnectorError } from '../../domain/errors.js';
import { Slots } from '../../shared/slots.js';
import type { OutboundAnswer, OutboundTransferRequest, TransferContinuation } from '../../ports/outgoing-switch.js';
import { platformKey, type PlatformAnswer, type PlatformIdentifier, type SwitchConnector, type SwitchTransferStatus } from '../../ports/switch-connector.js';
import { readErrorTransferState, readOutboundTransfer } from './outbound-transfer.js';

export interface SdkClientOptions {
  readonly baseUrl: string;
  /** Timeout of calls that return quickly (status queries, accept/abort). */
  readonly timeoutMs: number;
  /**
   * Timeout of POST /transfers and PUT /transfers/{id}, which block while the switch connector
   * looks up the party, quotes, converts or transfers (at least 95 s in production).
   */
  readonly transferTimeoutMs?: number;
  readonly connections?: number;
  /** For an https base URL: the CA to trust and our client certificate (mutual TLS), PEM. */
  readonly tls?: { readonly ca: Buffer | undefined; readonly cert: Buffer | undefined; readonly key: Buffer | undefined };
}

/** The floor production needs for the blocking transfer calls (the switch connector's own waits). */
export const TRANSFER_TIMEOUT_FLOOR_MS = 95_000;

export interface SdkResponse {
  readonly status: number;
  readonly body: unknown;
}

/**
 * Client for the switch connector's outbound API. It never retries on its own: a retry of a
 * non-idempotent call is the aggregate's decision, taken with the stored state in hand.
 */
export class SdkClient implements SwitchConnector {
  readonly #agent: Agent;
  readonly #base: URL;
  /** One per connection: a call waits here, within its deadline, never in the agent's own queue. */
  readonly #slots: Slots;

  constructor(private readonly options: SdkClientOptions) {
    this.#base = new URL(options.baseUrl);
    const connections = options.connections ?? 64;
    this.#slots = new Slots(connections);
    this.#agent = new Agent({
      connections,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
      keepAliveTimeout: 10_000,
      ...(options.tls === undefined ? {} : { connect: definedOnly({ ca: options.tls.ca, cert: options.tls.cert, key: options.tls.key }) }),
    });
  }

  async getTransfer(transferId: string): Promise<SwitchTransferStatus> {
    const response = await this.call('GET', `/transfers/${encodeURIComponent(transferId)}`, undefined, this.options.timeoutMs);
    if (response.status === 404) return { currentState: 'UNKNOWN' };
    // The hub's "no such transfer" reaches the switch connector as an error callback, which it
    // answers with an HTTP 500 whose statusCode (and transferState.lastError) is 3208, or, when
    // the transfer's model was already ERRORED (an accept it failed), "500" with the callback
    // only in its message (see hubHasNoSuchTransfer).
    if (response.status >= 400 && hubHasNoSuchTransfer(response.body)) return { currentState: 'NOT_AT_HUB' };
    if (response.status >= 400) throw sdkError(response);
    return { currentState: transferStatusOf(response.body) };
  }

  /** POST /transfers. Never repeated here: a second POST would start a second transfer. */
  async initiateTransfer(transferRequest: OutboundTransferRequest): Promise<OutboundAnswer> {
    return this.outbound('POST', '/transfers', transferRequest);
  }

  /** PUT /transfers/{id} with one of acceptQuote or acceptConversion. */
  async continueTransfer(transferId: string, continuation: TransferContinuation): Promise<OutboundAnswer> {
    return this.outbound('PUT', `/transfers/${encodeURIComponent(transferId)}`, continuation);
  }

  async registerIdentifiers(items: readonly PlatformIdentifier[]): Promise<PlatformAnswer> {
    return this.platform('POST', '/accounts', items, items);
  }

  async deregisterIdentifier(item: Omit<PlatformIdentifier, 'currency'>): Promise<PlatformAnswer> {
    const path = ['', 'accounts', ...[item.idType, item.idValue, ...(item.idSubValue === undefined ? [] : [item.idSubValue])].map(pathSegment)].join('/');
    return this.platform('DELETE', path, undefined, [item]);
  }

  /**
   * Identifier registration and removal: 200 even when items failed (each in response[i].error,
   * kept by key); 504 means the platform did not answer in time, like a transport timeout. A
   * refusal of the whole call is the platform's decision on each of its `items` (see
   * platformRefusedCall); any other error is an outage, retried.
   */
  private async platform(method: 'POST' | 'DELETE', path: string, body: unknown, items: ReadonlyArray<Omit<PlatformIdentifier, 'currency'>>): Promise<PlatformAnswer> {
    let response: SdkResponse;
    try {
      response = await this.call(method, path, body, this.options.timeoutMs);
    } catch (error) {
      if (error instanceof ConnectorError && error.errorName === 'SdkTimeout') return { outcome: 'unknown', reason: error.message };
      if (error instanceof ConnectorError) return { outcome: 'failed', httpStatus: 0, message: error.message };
      throw error;
    }
    if (response.status === 504) return { outcome: 'unknown', reason: sdkErrorDetail(response) };
    if (platformRefusedCall(response)) {
      const refusal = { statusCode: errorStatusCode(response.body), message: sdkErrorDetail(response) };
      return { outcome: 'answered', refusals: new Map(items.map((item) => [platformKey(item), refusal])) };
    }
    if (response.status < 200 || response.status >= 300) return { outcome: 'failed', httpStatus: response.status, message: sdkErrorDetail(response) };
    return { outcome: 'answered', refusals: platformRefusals(response.body) };
  }

  /** Sorts an outbound transfer exchange into answered, failed (the transfer did not proceed) or unknown. */
  private async outbound(method: 'POST' | 'PUT', path: string, body: unknown): Promise<OutboundAnswer> {
    const timeoutMs = this.options.transferTimeoutMs ?? Math.max(this.options.timeoutMs, TRANSFER_TIMEOUT_FLOOR_MS);
    let response: SdkResponse;
    try {
      response = await this.call(method, path, body, timeoutMs);
    } catch (error) {
      if (error instanceof ConnectorError) return transportOutcome(method, path, error);
      throw error;
    }
    if (response.status >= 200 && response.status < 300) return { outcome: 'answered', transfer: readOutboundTransfer(response.body) };
    const transfer = readErrorTransferState(response.body);
    const detail = sdkErrorDetail(response);
    if (response.status === 504) {
      return { outcome: 'unknown', reason: detail, ...(transfer === undefined ? {} : { transfer }) };
    }
    return {
      outcome: 'failed',
      httpStatus: response.status,
      statusCode: errorStatusCode(response.body),
      message: detail,
      ...(transfer === undefined ? {} : { transfer }),
    };
  }

  /**
   * One HTTP exchange within `timeoutMs` of this call, a wait for a free connection and the
   * connection's opening included; a timeout or a reset is SdkTimeout (outcome unknown). A call that found no free connection in
   * that time was never sent (NOT_SENT, see neverReachedSwitch). undici's own timeouts start only
   * once a request is written, so a call queued in the agent behind busy connections (each POST
   * /transfers may hold one for the whole transfer timeout) could go out at any time later: an
   * accept sent after the recovery worker, on the transfer timeout's word, gave it up as lost and
   * refunded the customer on the hub's "no such transfer" would complete the transfer as well.
   */
  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, timeoutMs: number): Promise<SdkResponse> {
    // Outside the try: a body that cannot be serialised is our bug, not a transport failure.
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const started = Date.now();
    if (!(await this.#slots.acquire(timeoutMs))) {
      const notSent = Object.assign(new Error(`no free connection to the switch connector within ${timeoutMs} ms`), { code: NOT_SENT });
      throw new ConnectorError('SdkClientError', `${method} ${path}: ${notSent.message}; not sent`, { cause: notSent });
    }
    const left = Math.max(1, timeoutMs - (Date.now() - started));
    try {
      // The path goes to the dispatcher as written: a URL would remove its dot segments ("%2E" too).
      const response = await this.#agent.request({
        origin: this.#base.origin,
        path: `${this.#base.pathname.replace(/\/+$/, '')}${path}`,
        method,
        headersTimeout: left,
        bodyTimeout: left,
        // The rest of the call's time bounds the connection's opening too (TCP, TLS), which
        // undici's headers timer does not count: a request not written by then never is.
        signal: AbortSignal.timeout(left),
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        ...(payload === undefined ? {} : { body: payload }),
      });
      const text = await response.body.text();
      return { status: response.statusCode, body: parseJson(text) };
    } catch (error) {
      if (isTimeout(error)) throw new ConnectorError('SdkTimeout', `${method} ${path}`, { cause: error });
      throw new ConnectorError('SdkClientError', `${method} ${path}: ${describe(error)}`, { cause: error });
    } finally {
      this.#slots.release();
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/**
 * Transport errors that mean the request certainly never reached the switch connector: the
 * connection was refused, the name did not resolve, the connection was never opened in time, or
 * no connection was free within the call's time (the request never left this process).
 */
const NOT_SENT = 'CC_NO_FREE_CONNECTION';
const NEVER_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', NOT_SENT]);

/** True only when `error` (the transport's own error) proves that the request was never sent. */
export function neverReachedSwitch(error: unknown): boolean {
  // Several addresses tried in turn (happy eyeballs): never sent only if every attempt failed to connect.
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.every(neverReachedSwitch);
  const code = errorCode(error);
  return code !== undefined && NEVER_SENT_CODES.has(code);
}

/**
 * Sorts a transfer call that got no HTTP answer. Only a request that never reached the switch
 * connector is 'failed' (the transfer did not proceed, so the customer may be refunded);
 * everything else (a timeout, a reset, a broken body, an error we do not recognise) may have
 * reached it and started the transfer, so the outcome is 'unknown'.
 */
export function transportOutcome(method: string, path: string, error: ConnectorError): OutboundAnswer {
  if (error.errorName === 'SdkTimeout') return { outcome: 'unknown', reason: error.message };
  if (neverReachedSwitch(error.cause)) {
    return { outcome: 'failed', httpStatus: 0, statusCode: 'none', message: `${method} ${path}: ${describe(error.cause)}` };
  }
  return { outcome: 'unknown', reason: `${method} ${path}: ${describe(error.cause)}; outcome unknown` };
}

/**
 * What the switch says about a transfer (GET /transfers/{id}). Only explicit answers count.
 *
 * The switch connector answers `currentState: COMPLETED` whenever the hub answered its query at
 * all: its transfer model's GET_TRANSFER transition always ends in SUCCEEDED, whatever the
 * transfer's state (sdk-scheme-adapter, OutboundTransfersModel: `_getTransfer` resolves with the
 * hub's PUT /transfers callback, `getResponse` maps SUCCEEDED to COMPLETED). The hub's own word
 * is that callback's `transferState`, in `fulfil.body`: COMMITTED is completed, ABORTED aborted,
 * RECEIVED or RESERVED not final yet. So a fulfil decides whenever there is one, and
 * `currentState: COMPLETED` without the hub's fulfil is no outcome. Without a fulfil: ABORTED
 * (the switch connector aborted the transfer itself, before any prepare) is aborted, and the hub
 * saying it has no such transfer (3208) is NOT_AT_HUB (see getTransfer, where the real switch
 * connector's HTTP 500 carrying it is read). Anything else, ERROR_OCCURRED for other reasons
 * included, leaves the outcome unknown.
 */
const WAITING_STATES = ['WAITING_FOR_PARTY_ACCEPTANCE', 'WAITING_FOR_QUOTE_ACCEPTANCE', 'WAITING_FOR_CONVERSION_ACCEPTANCE'] as const;

export function transferStatusOf(body: unknown): SwitchTransferStatus['currentState'] {
  if (!isObject(body)) return 'UNKNOWN';
  const fulfilState = pick(body, ['fulfil', 'body', 'transferState']);
  if (fulfilState !== undefined) return fulfilState === 'COMMITTED' ? 'COMPLETED' : fulfilState === 'ABORTED' ? 'ABORTED' : 'UNKNOWN';
  if (body['currentState'] === 'ABORTED') return 'ABORTED';
  if (body['currentState'] === 'ERROR_OCCURRED' && hubHasNoSuchTransfer(body)) return 'NOT_AT_HUB';
  // Still waiting for an acceptance: reported as such (for an outgoing payment whose accept was
  // lost, this is what tells the connector to withdraw the quote). Never a final state.
  const waiting = WAITING_STATES.find((state) => state === body['currentState']);
  return waiting ?? 'UNKNOWN';
}

/**
 * Whether a switch connector's answer carries the hub's 3208 (no such transfer): at its top, in
 * its transfer's last error, or only in its message. The last is how it answers a query of a
 * transfer whose model it had saved ERRORED (an accept that failed on its own): its run() then
 * leaves the error's transferState unset, so the answer is `{statusCode: "500", transferState:
 * {}, message: "Got an error response retrieving transfer: <the hub's error body as JSON>"}`
 * (sdk-scheme-adapter, OutboundTransfersModel `_getTransfer` and run()'s catch; OutboundServer
 * handlers `handleError`).
 */
function hubHasNoSuchTransfer(body: unknown): boolean {
  if (!isObject(body)) return false;
  const lastError = (at: unknown): unknown => pick(at, ['lastError', 'mojaloopError', 'errorInformation', 'errorCode']);
  return errorStatusCode(body) === '3208' || lastError(body) === '3208' || lastError(body['transferState']) === '3208' || retrievalErrorCode(body['message']) === '3208';
}

const RETRIEVAL_ERROR = 'Got an error response retrieving transfer: ';

/** The hub's error code in the message of a failed query, when the message carries the hub's error body. */
function retrievalErrorCode(message: unknown): unknown {
  if (typeof message !== 'string' || !message.startsWith(RETRIEVAL_ERROR)) return undefined;
  try {
    return pick(JSON.parse(message.slice(RETRIEVAL_ERROR.length)) as unknown, ['errorInformation', 'errorCode']);
  } catch {
    return undefined;
  }
}

/** The switch's error bodies carry statusCode as a string (business) or a number (validation). */
export function sdkError(response: SdkResponse): ConnectorError {
  return new ConnectorError('SdkClientError', sdkErrorDetail(response));
}

/**
 * One path segment, percent-encoded. A free-format value "." or ".." is a dot segment, which the
 * HTTP client removes from the path (RFC 3986, 5.2.4): DELETE /accounts/ALIAS/shop/. went out as
 * /accounts/ALIAS/shop/, so such an identifier could never be removed. Its dots are encoded.
 */
function pathSegment(value: string): string {
  return value === '.' || value === '..' ? value.replaceAll('.', '%2E') : encodeURIComponent(value);
}

/** "HTTP 500, statusCode 5000: message", for error messages and logs. */
export function sdkErrorDetail(response: SdkResponse): string {
  const body = isObject(response.body) ? response.body : {};
  const code = errorStatusCode(body);
  const message = typeof body['message'] === 'string' ? body['message'].slice(0, 128) : 'no message';
  return `HTTP ${response.status}, statusCode ${code}: ${message}`;
}

/** The statusCode of an error body as text: business errors send a string, validation errors a number. */
export function errorStatusCode(body: unknown): string {
  const statusCode = isObject(body) ? body['statusCode'] : undefined;
  return typeof statusCode === 'string' || typeof statusCode === 'number' ? String(statusCode) : 'none';
}

function definedOnly<T extends Record<string, unknown>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

export function pick(value: unknown, path: readonly string[]): unknown {
  let current: unknown = value;
  for (const key of path) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function isTimeout(error: unknown): boolean {
  return (
    // The call's deadline (AbortSignal.timeout): it may have been sent and acted on.
    (error instanceof Error && (error.name === 'TimeoutError' || (error.cause instanceof Error && error.cause.name === 'TimeoutError'))) ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.SocketError ||
    (error instanceof Error && 'code' in error && error.code === 'ECONNRESET')
  );
}

function describe(error: unknown): string {
  return errorCode(error) ?? (error instanceof Error ? error.name : 'unknown error');
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/**
 * Whether an error answer to POST /accounts or DELETE /accounts/... is a decision, not an outage:
 * a 4xx (the switch connector refused the request: a repeat is refused the same way), or a 5xx
 * carrying an FSPIOP client, payer or payee error (3xxx, 4xxx, 5xxx). The switch connector
 * answers the platform's error callback with HTTP 500 and the platform's code as statusCode (its
 * AccountsModel rejects with the callback's errorInformation, handleError puts its errorCode in the
 * body): "3204" for an identifier the platform does not hold. A 408, a 429, and a 5xx without such
 * a code (its own "500", 2xxx server errors) are outages, retried.
 */
function platformRefusedCall(response: SdkResponse): boolean {
  if (response.status >= 400 && response.status < 500) return response.status !== 408 && response.status !== 429;
  return response.status >= 500 && /^[345][0-9]{3}$/.test(errorStatusCode(response.body));
}

/** Every per-item error of a registration or removal answer, by its identifier's platformKey. */
function platformRefusals(body: unknown): Map<string, { statusCode: string; message: string }> {
  const refusals = new Map<string, { statusCode: string; message: string }>();
  if (typeof body !== 'object' || body === null) return refusals;
  const record = body as Record<string, unknown>;
  const items = Array.isArray(record['response']) ? record['response'] : [];
  for (const item of items) {
    if (typeof item !== 'object' || item === null) continue;
    const entry = item as Record<string, unknown>;
    const error = entry['error'];
    if (typeof error !== 'object' || error === null) continue;
    const detail = error as Record<string, unknown>;
    const statusCode = typeof detail['statusCode'] === 'string' ? detail['statusCode'] : String(detail['statusCode'] ?? '');
    const message = typeof detail['message'] === 'string' ? detail['message'] : '';
    // Removal answers name the identifier at the top level; registration answers per item.
    const idType = typeof entry['idType'] === 'string' ? entry['idType'] : record['idType'];
    const idValue = typeof entry['idValue'] === 'string' ? entry['idValue'] : record['idValue'];
    const idSubValue = typeof entry['idSubValue'] === 'string' ? entry['idSubValue'] : typeof record['subIdOrType'] === 'string' ? record['subIdOrType'] : undefined;
    if (typeof idType !== 'string' || typeof idValue !== 'string') continue;
    refusals.set(platformKey({ idType, idValue, ...(idSubValue === undefined ? {} : { idSubValue }) }), { statusCode, message });
  }
  return refusals;
}
