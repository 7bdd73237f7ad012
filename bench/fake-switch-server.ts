import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addMoney, compareDecimal, subtractMoney, type Money } from '../src/domain/money.js';

/**
 * A stand-in for the switch connector's outbound API (SDK scheme adapter v2.1) on loopback, for
 * tests and the benchmark. It keeps outbound transfers in memory and walks them through the
 * states the real one reports: POST /transfers answers WAITING_FOR_QUOTE_ACCEPTANCE (or
 * WAITING_FOR_CONVERSION_ACCEPTANCE first), PUT {acceptConversion|acceptQuote: true} moves on,
 * false answers 200 ABORTED; GET /transfers/{id} reports the state. A script per
 * homeTransactionId makes it fail the ways the real one does: error bodies (500 and 504 with a
 * string statusCode, 400 with a number), hangs, odd states and invalid quotes.
 */

export type ErrorAnswer = { readonly status: number; readonly body?: unknown };

export interface OutboundScript {
  /** POST /transfers: a quote (default), conversion terms first, a hang, an error, or another state. */
  readonly initiate?: 'quote' | 'conversion' | 'hang' | ErrorAnswer | { readonly currentState: string };
  readonly payeeName?: string;
  /** The payee FSP fee, in the quote's currency (default "1"). */
  readonly fee?: string;
  /** Fields merged into quoteResponse.body, to make a quote invalid. */
  readonly quote?: Readonly<Record<string, unknown>>;
  /** Conversion terms (with initiate 'conversion'); amounts default to the request's. */
  readonly conversion?: {
    readonly targetAmount: string;
    readonly targetCurrency: string;
    readonly sourceAmount?: string;
    readonly sourceCurrency?: string;
    readonly charges?: readonly unknown[];
    readonly expiration?: string;
  };
  /** PUT {acceptQuote: true}: complete (default), an error body, ERROR_OCCURRED in a 200, or a hang. */
  readonly accept?: 'complete' | 'hang' | 'error-occurred' | ErrorAnswer;
  /** What GET /transfers/{id} reports after an accept that did not complete (default ERROR_OCCURRED). */
  readonly stateAfterAccept?: string;
  /** PUT {acceptQuote: false}: ABORTED in a 200 (default), or an error body (a transfer mid-way, say). */
  readonly decline?: ErrorAnswer;
}

export interface OutboundTransferEntry {
  readonly transferId: string;
  readonly homeTransactionId: string;
  readonly request: Record<string, unknown>;
  state: string;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

export interface FakeSwitchServer {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** The answer to GET /transfers/{id}: a status and body, or 'hang' to never answer. Overrides the kept state. */
  setTransferStatus(transferId: string, answer: { status: number; body: unknown } | 'hang'): void;
  /** How the outbound API treats the transfer started with this homeTransactionId. */
  script(homeTransactionId: string, script: OutboundScript): void;
  /** The outbound transfer started for a homeTransactionId, once POST /transfers came. */
  transferOf(homeTransactionId: string): OutboundTransferEntry | undefined;
  /**
   * Identifier registration (POST /accounts, DELETE /accounts/...): refuse one identifier
   * (`Type/ID[/SubId]`) with a per-item error, or answer the next `times` calls with an outage.
   */
  refuseIdentifier(key: string, error: { statusCode: string; message: string }): void;
  failAccounts(status: 500 | 504, times: number): void;
  /** Identifiers the platform holds now, as `Type/ID[/SubId]`, registered by this institution. */
  readonly registeredIdentifiers: ReadonlySet<string>;
  close(): Promise<void>;
}

export interface FakeSwitchOptions {
  /** The clock quote expirations are computed from (tests pass their manual clock). */
  readonly now?: () => Date;
  /** Keep every request in `requests` (default true; the benchmark turns it off). */
  readonly record?: boolean;
}

const QUOTE_VALIDITY_MS = 3_600_000;

export async function startFakeSwitchServer(options: FakeSwitchOptions = {}): Promise<FakeSwitchServer> {
  const now = options.now ?? (() => new Date());
  const keep = options.record ?? true;
  const statuses = new Map<string, { status: number; body: unknown } | 'hang'>();
  const scripts = new Map<string, OutboundScript>();
  const transfers = new Map<string, OutboundTransferEntry>();
  const byHome = new Map<string, OutboundTransferEntry>();
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const accounts: AccountsState = { registered: new Set(), refusals: new Map(), outages: [] };
  const context: Context = { now, scripts, transfers, byHome, statuses, hanging, accounts };
  const server: Server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const path = request.url ?? '/';
      if (keep) requests.push({ method: request.method ?? 'GET', path, body });
      route(context, request.method ?? 'GET', path, body, response);
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setTransferStatus: (transferId, answer) => statuses.set(transferId, answer),
    script: (homeTransactionId, script) => scripts.set(homeTransactionId, script),
    transferOf: (homeTransactionId) => byHome.get(homeTransactionId),
    refuseIdentifier: (key, error) => accounts.refusals.set(key, error),
    failAccounts: (status, times) => accounts.outages.push(...Array.from({ length: times }, () => status)),
    registeredIdentifiers: accounts.registered,
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Context {
  readonly now: () => Date;
  readonly scripts: Map<string, OutboundScript>;
  readonly transfers: Map<string, OutboundTransferEntry>;
  readonly byHome: Map<string, OutboundTransferEntry>;
  readonly statuses: Map<string, { status: number; body: unknown } | 'hang'>;
  readonly hanging: Set<ServerResponse>;
  readonly accounts: AccountsState;
}

interface AccountsState {
  readonly registered: Set<string>;
  readonly refusals: Map<string, { statusCode: string; message: string }>;
  readonly outages: Array<500 | 504>;
}

function route(context: Context, method: string, path: string, body: unknown, response: ServerResponse): void {
  if (path === '/accounts' || path.startsWith('/accounts/')) return accountsRoute(context.accounts, method, path, body, response);
  const match = /^\/transfers\/([^/]+)$/.exec(path);
  const transferId = match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
  if (method === 'GET' && transferId !== undefined) return getTransfer(context, transferId, response);
  if (method === 'POST' && path === '/transfers') return postTransfer(context, record(body), response);
  if (method === 'PUT' && transferId !== undefined) return putTransfer(context, transferId, record(body), response);
  send(response, 404, { statusCode: '3002', message: 'no route' });
}

function getTransfer(context: Context, transferId: string, response: ServerResponse): void {
  const answer = context.statuses.get(transferId);
  if (answer === 'hang') {
    context.hanging.add(response);
    return;
  }
  if (answer !== undefined) return send(response, answer.status, answer.body);
  const entry = context.transfers.get(transferId);
  if (entry === undefined) return send(response, 404, { statusCode: '3208', message: 'not found' });
  if (entry.state === 'COMPLETED') return send(response, 200, { ...hubAnswer(transferId, 'COMMITTED').body, homeTransactionId: entry.homeTransactionId });
  // Never prepared (its quote not accepted yet, or declined): the hub has no such transfer.
  if (entry.state.startsWith('WAITING_FOR_') || entry.state === 'ABORTED') {
    const answer = hubHasNoSuchTransfer(transferId);
    return send(response, answer.status, answer.body);
  }
  send(response, 200, { transferId, homeTransactionId: entry.homeTransactionId, currentState: entry.state });
}

/**
 * GET /transfers/{id} as the switch connector answers it when the hub has no such transfer: the
 * hub's error callback (3208) ends its query in error, answered as HTTP 500 with the code at the
 * top and in the transfer's last error (sdk-scheme-adapter, OutboundTransfersModel `_getTransfer`
 * and the outbound server's error handler).
 */
export function hubHasNoSuchTransfer(transferId: string): { status: 500; body: Record<string, unknown> } {
  const errorInformation = { errorCode: '3208', errorDescription: 'Transfer ID not found' };
  return {
    status: 500,
    body: {
      statusCode: '3208',
      message: 'Transfer ID not found',
      transferState: { transferId, currentState: 'ERROR_OCCURRED', lastError: { httpStatusCode: 500, mojaloopError: { errorInformation } } },
    },
  };
}

/**
 * GET /transfers/{id} when the hub has no such transfer, as the switch connector answers it once
 * its model of the transfer is ERRORED (an accept it failed on its own): run()'s catch leaves the
 * error's transferState unset, so the hub's 3208 is only in the message, the statusCode is "500"
 * (sdk-scheme-adapter, OutboundTransfersModel `_getTransfer`, run(); handlers `handleError`).
 */
export function hubHasNoSuchTransferAfterError(): { status: 500; body: Record<string, unknown> } {
  const hubError = { errorInformation: { errorCode: '3208', errorDescription: 'Transfer ID not found' } };
  return { status: 500, body: { message: `Got an error response retrieving transfer: ${JSON.stringify(hubError)}`, transferState: {}, statusCode: '500' } };
}

/**
 * GET /transfers/{id} as the switch connector answers it once the hub has answered its query:
 * `currentState` COMPLETED whatever the transfer's state (its model's GET_TRANSFER transition
 * always ends in SUCCEEDED, which it reports as COMPLETED; sdk-scheme-adapter,
 * modules/api-svc/src/lib/model/OutboundTransfersModel.js, `_getTransfer` and `getResponse`),
 * and the hub's callback, whose `transferState` is the hub's word, in `fulfil`.
 */
export function hubAnswer(transferId: string, transferState: 'COMMITTED' | 'ABORTED' | 'RESERVED' | 'RECEIVED'): { status: 200; body: Record<string, unknown> } {
  const completed = transferState === 'COMMITTED' ? { completedTimestamp: '2026-11-27T10:00:00.000Z' } : {};
  return { status: 200, body: { transferId, currentState: 'COMPLETED', fulfil: { headers: {}, body: { transferState, ...completed } } } };
}

function postTransfer(context: Context, request: Record<string, unknown>, response: ServerResponse): void {
  const homeTransactionId = String(request['homeTransactionId'] ?? '');
  const script = context.scripts.get(homeTransactionId) ?? {};
  const initiate = script.initiate ?? 'quote';
  if (initiate === 'hang') {
    context.hanging.add(response);
    return;
  }
  const entry: OutboundTransferEntry = { transferId: randomUUID(), homeTransactionId, request, state: 'WAITING_FOR_QUOTE_ACCEPTANCE' };
  context.transfers.set(entry.transferId, entry);
  context.byHome.set(homeTransactionId, entry);
  if (typeof initiate === 'object' && 'status' in initiate) {
    entry.state = 'ERROR_OCCURRED';
    return send(response, initiate.status, initiate.body ?? errorBody(initiate.status, entry));
  }
  if (typeof initiate === 'object') {
    entry.state = initiate.currentState;
    return send(response, 200, transferBody(context, entry, script));
  }
  if (initiate === 'conversion') entry.state = 'WAITING_FOR_CONVERSION_ACCEPTANCE';
  send(response, 200, transferBody(context, entry, script));
}

function putTransfer(context: Context, transferId: string, body: Record<string, unknown>, response: ServerResponse): void {
  const entry = context.transfers.get(transferId);
  if (entry === undefined) return send(response, 404, { statusCode: '3208', message: 'not found' });
  const script = context.scripts.get(entry.homeTransactionId) ?? {};
  const decision = body['acceptConversion'] ?? body['acceptQuote'];
  if (typeof decision !== 'boolean') return send(response, 400, { statusCode: 400, message: 'one of acceptQuote, acceptConversion is required' });
  if (!decision) {
    if (script.decline !== undefined) return send(response, script.decline.status, script.decline.body ?? errorBody(script.decline.status, entry));
    // As the real one: a transfer that completed cannot be aborted any more.
    if (entry.state === 'COMPLETED') return send(response, 500, errorBody(500, entry));
    entry.state = 'ABORTED';
    return send(response, 200, transferBody(context, entry, script));
  }
  if ('acceptConversion' in body) {
    if (entry.state !== 'WAITING_FOR_CONVERSION_ACCEPTANCE') return send(response, 500, errorBody(500, entry));
    entry.state = 'WAITING_FOR_QUOTE_ACCEPTANCE';
    return send(response, 200, transferBody(context, entry, script));
  }
  if (entry.state !== 'WAITING_FOR_QUOTE_ACCEPTANCE') return send(response, 500, errorBody(500, entry));
  accept(context, entry, script, response);
}

function accept(context: Context, entry: OutboundTransferEntry, script: OutboundScript, response: ServerResponse): void {
  const answer = script.accept ?? 'complete';
  if (answer === 'complete') {
    entry.state = 'COMPLETED';
    return send(response, 200, transferBody(context, entry, script));
  }
  entry.state = script.stateAfterAccept ?? 'ERROR_OCCURRED';
  if (answer === 'hang') {
    context.hanging.add(response);
    return;
  }
  if (answer === 'error-occurred') return send(response, 200, { ...transferBody(context, entry, script), currentState: 'ERROR_OCCURRED' });
  send(response, answer.status, answer.body ?? errorBody(answer.status, entry));
}

/** The outbound transferResponse: party, quote (and conversion terms) as the SDK reports them. */
function transferBody(context: Context, entry: OutboundTransferEntry, script: OutboundScript): Record<string, unknown> {
  const request = entry.request;
  const amount: Money = { amount: String(request['amount']), currency: String(request['currency']) };
  const conversion = script.initiate === 'conversion' ? conversionTerms(context, amount, script) : undefined;
  const quoted = conversion === undefined ? amount : { amount: script.conversion?.targetAmount ?? amount.amount, currency: script.conversion?.targetCurrency ?? amount.currency };
  const showQuote = entry.state !== 'WAITING_FOR_CONVERSION_ACCEPTANCE';
  return {
    transferId: entry.transferId,
    homeTransactionId: entry.homeTransactionId,
    from: request['from'],
    to: request['to'],
    amountType: request['amountType'],
    currency: request['currency'],
    amount: request['amount'],
    transactionType: request['transactionType'],
    currentState: entry.state,
    getPartiesResponse: { body: { party: { partyIdInfo: request['to'], name: script.payeeName ?? 'Chanda Mwila' } } },
    ...(showQuote ? { quoteId: entry.transferId, quoteResponse: { body: { ...quoteOf(context, request['amountType'], quoted, script.fee ?? '1'), ...script.quote } } } : {}),
    ...(conversion === undefined ? {} : { conversionRequestId: entry.transferId, fxQuotesResponse: { body: { conversionTerms: conversion } } }),
  };
}

function quoteOf(context: Context, amountType: unknown, amount: Money, feeAmount: string): Record<string, unknown> {
  // An amount below the fee (a test's odd conversion) is quoted without a fee rather than negative.
  const fee = { amount: compareDecimal(amount.amount, feeAmount) < 0 ? '0' : feeAmount, currency: amount.currency };
  const send = amountType !== 'RECEIVE';
  return {
    transferAmount: send ? amount : addMoney(amount, fee),
    payeeReceiveAmount: send ? subtractMoney(amount, fee) : amount,
    payeeFspFee: fee,
    expiration: new Date(context.now().getTime() + QUOTE_VALIDITY_MS).toISOString(),
  };
}

function conversionTerms(context: Context, amount: Money, script: OutboundScript): Record<string, unknown> {
  const terms = script.conversion;
  return {
    conversionId: randomUUID(),
    initiatingFsp: 'payerfsp',
    counterPartyFsp: 'fxp',
    amountType: 'SEND',
    sourceAmount: { currency: terms?.sourceCurrency ?? amount.currency, amount: terms?.sourceAmount ?? amount.amount },
    targetAmount: { currency: terms?.targetCurrency ?? amount.currency, amount: terms?.targetAmount ?? amount.amount },
    expiration: terms?.expiration ?? new Date(context.now().getTime() + QUOTE_VALIDITY_MS).toISOString(),
    charges: terms?.charges ?? [],
  };
}

/**
 * The switch connector's error bodies by default: a 400 is its refusal of the request as
 * invalid; a 504 its timeout waiting for the hub; any other status the hub's error callback with
 * the payee FSP's generic 5000, which it relays as the statusCode and keeps in the transfer's last
 * error (sdk-scheme-adapter, OutboundServer/handlers.js `handleError`). See switchOwnFailure for
 * an error of the switch connector's own.
 */
function errorBody(status: number, entry: OutboundTransferEntry): Record<string, unknown> {
  if (status === 400) return { statusCode: 400, message: 'validation failed' };
  if (status === 504) {
    const transferState = { transferId: entry.transferId, homeTransactionId: entry.homeTransactionId, currentState: 'ERROR_OCCURRED' };
    return { statusCode: '504', message: 'Timeout waiting for fulfil', transferState };
  }
  const errorInformation = { errorCode: '5000', errorDescription: 'Generic payee error' };
  return {
    statusCode: '5000',
    message: 'Got an error response: Generic payee error',
    transferState: {
      transferId: entry.transferId,
      homeTransactionId: entry.homeTransactionId,
      currentState: 'ERROR_OCCURRED',
      lastError: { httpStatusCode: 500, mojaloopError: { errorInformation } },
    },
  };
}

/**
 * An accept the switch connector failed on its own, as it answers it: HTTP 500 with its HTTP
 * status as the statusCode and no hub error in the transfer's last error (here a reset on its
 * POST /transfers to the hub, which may have arrived; sdk-scheme-adapter,
 * OutboundTransfersModel `_executeTransfer` rejects with the transport's error).
 */
export function switchOwnFailure(transferId: string): { status: 500; body: Record<string, unknown> } {
  return {
    status: 500,
    body: { statusCode: '500', message: 'socket hang up', transferState: { transferId, currentState: 'ERROR_OCCURRED', lastError: { code: 'ECONNRESET' } } },
  };
}

/**
 * POST /accounts and DELETE /accounts/{Type}/{ID}[/{SubId}] as the switch connector answers them
 * (shared/notes/switch-contract.md): 200 with `currentState: COMPLETED` even when some items
 * failed, each failure in `response[i].error`; a repeated registration is an update.
 */
function accountsRoute(state: AccountsState, method: string, path: string, body: unknown, response: ServerResponse): void {
  const outage = state.outages.shift();
  if (outage !== undefined) return send(response, outage, { statusCode: outage === 504 ? '2004' : '2001', message: 'platform did not answer', executionState: { accounts: [] } });
  if (method === 'POST' && path === '/accounts' && Array.isArray(body)) {
    const items = body.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null);
    const results = items.map((item) => {
      const key = [item['idType'], item['idValue'], item['idSubValue']].filter((part) => typeof part === 'string').join('/');
      const error = state.refusals.get(key);
      if (error === undefined) state.registered.add(key);
      return { idType: item['idType'], idValue: item['idValue'], ...(item['idSubValue'] === undefined ? {} : { idSubValue: item['idSubValue'] }), ...(error === undefined ? {} : { error }) };
    });
    return send(response, 200, { accounts: items, response: results, currentState: 'COMPLETED' });
  }
  const match = /^\/accounts\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(path);
  if (method === 'DELETE' && match !== null) {
    const parts = [match[1], match[2], match[3]].filter((part): part is string => part !== undefined).map(decodeURIComponent);
    const key = parts.join('/');
    const error = state.refusals.get(key);
    if (error === undefined) state.registered.delete(key);
    return send(response, 200, { idType: parts[0], idValue: parts[1], ...(parts[2] === undefined ? {} : { subIdOrType: parts[2] }), response: [{ fspId: 'payeefsp', ...(error === undefined ? {} : { error }) }], currentState: 'COMPLETED' });
  }
  send(response, 400, { statusCode: 400, message: 'bad accounts request' });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function record(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? { ...body } : {};
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
