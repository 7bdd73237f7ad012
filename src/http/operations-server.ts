import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseAuditSubject, type AuditTrail } from '../adapters/store/audit-trail.js';
import type { OperatorActions, OperatorSubject } from '../aggregate/operator-actions.js';
import { dayPeriod, reportCsv, reportJson, type Reconciliation } from '../aggregate/reconciliation.js';
import { paymentStatus } from '../aggregate/outgoing-views.js';
import { refundReference } from '../domain/outgoing-references.js';
import { ConnectorError } from '../domain/errors.js';
import { INBOUND_TRANSFER_STATES } from '../domain/inbound-transfer.js';
import { OUTGOING_STATES } from '../domain/outgoing-payment.js';
import type { ConnectorMetrics } from '../metrics/connector-metrics.js';
import type { Period } from '../ports/core-banking.js';
import type { OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { InboundStore, RecordSearch, TransferRecord } from '../ports/store.js';
import { registerHealth, type HealthCheck } from './health.js';
import { operatorAuth } from './operator-auth.js';
import { statedText } from './operator-reason.js';
import { createServer, type ServerOptions } from './server-common.js';

export interface OperationsServerOptions extends ServerOptions {
  readonly operators: ReadonlyArray<{ readonly name: string; readonly token: string }>;
  /** The built console (index.html, console.js, console.css); absent: /console answers 404 saying how to build it. */
  readonly consoleDir: string;
  readonly metrics: ConnectorMetrics;
}

export interface OperationsDeps {
  readonly inboundStore: InboundStore;
  readonly outgoingStore: OutgoingStore;
  readonly audit: AuditTrail;
  readonly actions: OperatorActions;
  readonly reconciliation: Reconciliation;
}

const SUBJECTS = ['incoming_transfer', 'outgoing_payment'] as const;
const MAX_LIST = 200;

const textField = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;
const reasonBody = {
  type: 'object',
  required: ['reason'],
  additionalProperties: false,
  properties: { reason: textField(500) },
} as const;
const outcomeBody = {
  type: 'object',
  required: ['outcome', 'reason'],
  additionalProperties: false,
  properties: { outcome: { type: 'string', enum: ['COMPLETED', 'ABORTED'] }, reason: textField(500) },
} as const;
const resolveBody = {
  type: 'object',
  required: ['outcome', 'reason', 'evidence'],
  additionalProperties: false,
  properties: { outcome: { type: 'string', enum: ['COMMITTED', 'ABORTED', 'REFUNDED', 'REJECTED', 'COMPLETED', 'FAILED'] }, reason: textField(500), evidence: textField(500) },
} as const;
const promptBody = {
  type: 'object',
  required: ['outcome', 'reason'],
  additionalProperties: false,
  properties: { outcome: { type: 'string', enum: ['approve', 'decline'] }, reason: textField(500) },
} as const;
const itemParams = {
  type: 'object',
  required: ['subject', 'id'],
  properties: { subject: { type: 'string', enum: [...SUBJECTS] }, id: textField(128) },
} as const;

/**
 * Query strings of the operators' API. A repeated parameter (`id=a&id=b`) arrives as an array and
 * would reach the store as one (a 500): every value must be one string, of bounded length.
 * Parameters not listed are ignored, as before.
 */
const queryText = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const itemsQuery = {
  type: 'object',
  properties: { id: queryText(128), subject: queryText(32), state: queryText(32), from: queryText(64), to: queryText(64), attention: { type: 'string', enum: ['true', 'false'] } },
} as const;
const auditQuery = { type: 'object', properties: { subject: queryText(64), since: queryText(64) } } as const;
const reconciliationQuery = {
  type: 'object',
  properties: { date: queryText(10), from: queryText(64), to: queryText(64), format: { type: 'string', enum: ['json', 'csv'] } },
} as const;
type ItemsQuery = Partial<Record<'id' | 'subject' | 'state' | 'from' | 'to' | 'attention', string>>;
type AuditQuery = Partial<Record<'subject' | 'since', string>>;
type ReconciliationQuery = Partial<Record<'date' | 'from' | 'to' | 'format', string>>;

interface ItemParams {
  subject: OperatorSubject;
  id: string;
}

/** The static files of the console, read once at start-up. */
const CONSOLE_FILES: ReadonlyArray<[string, string]> = [
  ['index.html', 'text/html; charset=utf-8'],
  ['console.js', 'text/javascript; charset=utf-8'],
  ['console.css', 'text/css; charset=utf-8'],
];

/**
 * The operations server (OPERATIONS_PORT, 3005): the operations console, the operators' API
 * behind it, reconciliation, /metrics and /health. Every /operations route takes an operator's
 * bearer token (OPERATOR_CREDENTIALS), never the channel's key; the operator's name goes into
 * the audit trail with each action. The console's files carry no data and need no token.
 */
export async function buildOperationsServer(deps: OperationsDeps, health: HealthCheck, options: OperationsServerOptions): Promise<FastifyInstance> {
  const server = createServer(options);
  registerHealth(server, health);
  await registerConsole(server, options.consoleDir);

  const { authenticate, operatorOf } = operatorAuth(options.operators);

  server.get('/operations/whoami', { onRequest: authenticate }, (request) => ({ operator: operatorOf(request) }));

  server.get('/operations/summary', { onRequest: authenticate }, async () => summaryOf(options.metrics));

  server.get<{ Querystring: ItemsQuery }>('/operations/items', { onRequest: authenticate, schema: { querystring: itemsQuery } }, async (request) => {
    const query = request.query;
    const subjects = query['subject'] === undefined ? SUBJECTS : [subjectOf(query['subject'])];
    const search: RecordSearch = {
      ...(query['id'] === undefined || query['id'] === '' ? {} : { id: query['id'] }),
      ...(query['state'] === undefined || query['state'] === '' ? {} : { states: [stateOf(query['state'])] }),
      ...(query['from'] === undefined || query['from'] === '' ? {} : { createdFrom: instantOf(query['from'], 'from') }),
      ...(query['to'] === undefined || query['to'] === '' ? {} : { createdTo: instantOf(query['to'], 'to') }),
      ...(query['attention'] === 'true' ? { needsAttention: true } : {}),
      // One more than is shown, from each kind: a list that one kind fills is cut, and says so.
      limit: MAX_LIST + 1,
    };
    const items = [];
    for (const subject of subjects) {
      if (subject === 'incoming_transfer') items.push(...(await deps.inboundStore.searchTransfers(search)).map(transferItem));
      else items.push(...(await deps.outgoingStore.search(search)).map(paymentItem));
    }
    items.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    return { items: items.slice(0, MAX_LIST), truncated: items.length > MAX_LIST };
  });

  server.get<{ Params: ItemParams }>('/operations/items/:subject/:id', { onRequest: authenticate, schema: { params: itemParams } }, async (request) => {
    const { subject, id } = request.params;
    if (subject === 'incoming_transfer') {
      const transfer = await deps.inboundStore.findTransfer(id);
      if (transfer === undefined) throw new ConnectorError('TransferNotFound', `no incoming transfer ${id}`);
      return { item: transferItem(transfer), detail: transferDetail(transfer), history: await deps.audit.history('incoming_transfer', id) };
    }
    const payment = (await deps.outgoingStore.findByHomeTransactionId(id)) ?? (await deps.outgoingStore.findByTransferId(id));
    if (payment === undefined) throw new ConnectorError('TransferNotFound', `no outgoing payment ${id}`);
    return { item: paymentItem(payment), detail: paymentDetail(payment), history: await deps.audit.history('outgoing_payment', payment.homeTransactionId) };
  });

  server.get<{ Querystring: AuditQuery }>('/operations/audit', { onRequest: authenticate, schema: { querystring: auditQuery } }, async (request) => {
    const subject = request.query['subject'] === undefined ? undefined : parseAuditSubject(request.query['subject']);
    if (request.query['subject'] !== undefined && subject === undefined) throw new ConnectorError('ValidationFailed', `subject: "${request.query['subject']}" is not an audit subject`);
    const since = request.query['since'] === undefined ? undefined : instantOf(request.query['since'], 'since');
    return { events: await deps.audit.recent({ ...(subject === undefined ? {} : { subject }), ...(since === undefined ? {} : { since }), limit: MAX_LIST }) };
  });

  server.post<{ Params: ItemParams; Body: { reason: string } }>(
    '/operations/items/:subject/:id/retry',
    { onRequest: authenticate, schema: { params: itemParams, body: reasonBody } },
    async (request) => deps.actions.retryNow(request.params.subject, request.params.id, { operator: operatorOf(request), reason: statedText(request.body.reason, 'reason') }),
  );

  server.post<{ Params: { id: string }; Body: { outcome: 'COMPLETED' | 'ABORTED'; reason: string } }>(
    '/operations/items/outgoing_payment/:id/apply-switch-outcome',
    { onRequest: authenticate, schema: { params: { type: 'object', required: ['id'], properties: { id: textField(128) } }, body: outcomeBody } },
    async (request) =>
      paymentItem(await deps.actions.applySwitchOutcome(request.params.id, request.body.outcome, { operator: operatorOf(request), reason: statedText(request.body.reason, 'reason') })),
  );

  server.post<{ Params: ItemParams; Body: { outcome: string; reason: string; evidence: string } }>(
    '/operations/items/:subject/:id/resolve',
    { onRequest: authenticate, schema: { params: itemParams, body: resolveBody } },
    async (request) => {
      const { subject, id } = request.params;
      const stated = { reason: statedText(request.body.reason, 'reason'), evidence: statedText(request.body.evidence, 'evidence') };
      const resolved = await deps.actions.resolve(subject, id, request.body.outcome, { operator: operatorOf(request), ...stated });
      return 'homeTransactionId' in resolved ? paymentItem(resolved) : transferItem(resolved);
    },
  );

  // The sandbox's customers have no phone: an operator answers their payment prompts (mobile-operator flow).
  if (deps.actions.answersPrompts) {
    server.post<{ Params: { reference: string }; Body: { outcome: 'approve' | 'decline'; reason: string } }>(
      '/operations/sandbox/collections/:reference',
      { onRequest: authenticate, schema: { params: { type: 'object', required: ['reference'], properties: { reference: textField(128) } }, body: promptBody } },
      async (request) => {
        const answered = await deps.actions.answerPrompt(request.params.reference, request.body.outcome, { operator: operatorOf(request), reason: statedText(request.body.reason, 'reason') });
        return { reference: request.params.reference, collection: answered.collection, payment: answered.payment === null ? null : paymentItem(answered.payment) };
      },
    );
  }

  server.get<{ Querystring: ReconciliationQuery }>('/operations/reconciliation', { onRequest: authenticate, schema: { querystring: reconciliationQuery } }, async (request, reply) => {
    const period = periodOf(request.query);
    const report = await deps.reconciliation.run(period);
    if (request.query['format'] === 'csv') {
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="reconciliation-${period.from.slice(0, 10)}.csv"`)
        .send(inTurns(reportCsv(report)));
    }
    return reply.type('application/json; charset=utf-8').send(inTurns(reportJson(report)));
  });
  return server;
}

async function registerConsole(server: FastifyInstance, consoleDir: string): Promise<void> {
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const [name, type] of CONSOLE_FILES) {
    try {
      files.set(name, { body: await readFile(join(consoleDir, name)), type });
    } catch {
      // Not built: said at /console, and where it was looked for in the log (not to the caller).
    }
  }
  const missing = CONSOLE_FILES.map(([name]) => name).filter((name) => !files.has(name));
  if (missing.length > 0) server.log.warn({ consoleDir, missing }, 'the operations console is not built; run npm run build');
  const send = (reply: FastifyReply, name: string): FastifyReply => {
    const file = files.get(name);
    if (file === undefined) throw new ConnectorError('UnknownRoute', `the console is not built (${name} missing; run npm run build)`);
    // Own files only: no inline script, no other origin, no framing.
    return reply
      .type(file.type)
      .header('content-security-policy', "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(file.body);
  };
  server.get('/', (_request, reply) => reply.redirect('/console/', 302));
  server.get('/console', (_request, reply) => reply.redirect('/console/', 302));
  server.get('/console/', (_request, reply) => send(reply, 'index.html'));
  for (const [name] of CONSOLE_FILES) server.get(`/console/${name}`, (_request, reply) => send(reply, name));
}

/** A row of the search list: the same shape for both kinds. */
interface ItemRow {
  readonly subject: OperatorSubject;
  readonly id: string;
  readonly transferId: string | null;
  readonly state: string;
  readonly amount: string;
  readonly currency: string;
  readonly needsAttention: boolean;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

function transferItem(transfer: TransferRecord): ItemRow {
  return {
    subject: 'incoming_transfer',
    id: transfer.transferId,
    transferId: transfer.transferId,
    state: transfer.state,
    amount: transfer.payeeReceiveAmount,
    currency: transfer.currency,
    needsAttention: transfer.needsAttention,
    attempts: transfer.attempts,
    lastError: transfer.lastError,
    createdAt: transfer.createdAt,
    updatedAt: transfer.updatedAt,
  };
}

function paymentItem(payment: OutgoingPaymentRecord): ItemRow {
  return {
    subject: 'outgoing_payment',
    id: payment.homeTransactionId,
    transferId: payment.transferId,
    state: payment.state,
    amount: payment.debitAmount ?? payment.sendAmount,
    currency: payment.sendCurrency,
    needsAttention: payment.needsAttention,
    attempts: payment.attempts,
    lastError: payment.lastError,
    createdAt: payment.createdAt,
    updatedAt: payment.updatedAt,
  };
}

/** The incoming transfer's references and amounts; the payer's and payee's identifiers stay out. */
function transferDetail(transfer: TransferRecord): Record<string, unknown> {
  return {
    transferId: transfer.transferId,
    quoteId: transfer.quoteId,
    state: transfer.state,
    institutionReference: transfer.transferId,
    switchState: transfer.notifiedState,
    transferAmount: transfer.transferAmount,
    payeeReceiveAmount: transfer.payeeReceiveAmount,
    currency: transfer.currency,
    completedTimestamp: transfer.completedTimestamp,
    error: transfer.errorName === null ? null : { name: transfer.errorName, message: transfer.errorMessage },
    attempts: transfer.attempts,
    nextAttemptAt: transfer.nextAttemptAt,
    lastError: transfer.lastError,
    needsAttention: transfer.needsAttention,
    createdAt: transfer.createdAt,
    updatedAt: transfer.updatedAt,
  };
}

/** The payment's status as the channel sees it, with the refund's reference at the institution once a refund began. */
function paymentDetail(payment: OutgoingPaymentRecord): Record<string, unknown> {
  const refunding = payment.state === 'REFUNDING' || payment.state === 'REFUNDED';
  return { ...paymentStatus(payment), refundReference: refunding && payment.transferId !== null ? refundReference(payment.transferId) : null };
}

function subjectOf(text: string): OperatorSubject {
  const subject = SUBJECTS.find((candidate) => candidate === text);
  if (subject === undefined) throw new ConnectorError('ValidationFailed', `subject: "${text}" is not one of ${SUBJECTS.join(', ')}`);
  return subject;
}

function stateOf(text: string): string {
  const known: readonly string[] = [...INBOUND_TRANSFER_STATES, ...OUTGOING_STATES];
  if (!known.includes(text)) throw new ConnectorError('ValidationFailed', `state: "${text}" is not a state`);
  return text;
}

/** An ISO 8601 instant, or a day (YYYY-MM-DD, midnight UTC). */
function instantOf(text: string, name: string): string {
  const millis = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00.000Z` : text);
  if (Number.isNaN(millis) || !/^\d{4}-\d{2}-\d{2}/.test(text)) throw new ConnectorError('ValidationFailed', `${name}: "${text}" is not a date or an ISO 8601 instant`);
  return new Date(millis).toISOString();
}

/** `date=YYYY-MM-DD` (one UTC day), or `from` and `to` instants (at most 31 days apart). */
export function periodOf(query: Record<string, string | undefined>): Period {
  const date = query['date'];
  if (date !== undefined) return dayPeriod(date);
  const from = query['from'];
  const to = query['to'];
  if (from === undefined || to === undefined) throw new ConnectorError('MissingElement', 'give date=YYYY-MM-DD, or from and to');
  const period = { from: instantOf(from, 'from'), to: instantOf(to, 'to') };
  const spanMs = Date.parse(period.to) - Date.parse(period.from);
  if (spanMs <= 0 || spanMs > 31 * 24 * 3600 * 1000) throw new ConnectorError('ValidationFailed', 'to must be after from, at most 31 days later');
  return period;
}

/** Counts by state and mean latencies, read from the metrics registry (what Prometheus would scrape). */
async function summaryOf(metrics: ConnectorMetrics): Promise<Record<string, unknown>> {
  const all = await metrics.registry.getMetricsAsJSON();
  const byName = new Map(all.map((metric) => [metric.name, metric]));
  const counts = (name: string, label: string): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const value of byName.get(name)?.values ?? []) {
      const key = value.labels[label];
      if (typeof key === 'string') out[key] = value.value;
    }
    return out;
  };
  const latencies = (name: string, labels: readonly string[]): Array<Record<string, unknown>> => {
    const sums = new Map<string, { labels: Record<string, string | number>; sum: number; count: number }>();
    for (const value of byName.get(name)?.values ?? []) {
      const metricName = (value as { metricName?: string }).metricName ?? '';
      const key = labels.map((label) => String(value.labels[label] ?? '')).join(' ');
      const entry = sums.get(key) ?? { labels: Object.fromEntries(labels.map((label) => [label, value.labels[label] ?? ''])), sum: 0, count: 0 };
      if (metricName.endsWith('_sum')) entry.sum = value.value;
      else if (metricName.endsWith('_count')) entry.count = value.value;
      else continue;
      sums.set(key, entry);
    }
    return [...sums.values()]
      .filter((entry) => entry.count > 0)
      .map((entry) => ({ ...entry.labels, count: entry.count, meanMs: Math.round((entry.sum / entry.count) * 10_000) / 10 }));
  };
  return {
    incomingTransfers: counts('connector_incoming_transfers', 'state'),
    outgoingPayments: counts('connector_outgoing_payments', 'state'),
    needingAttention: counts('connector_items_needing_attention', 'kind'),
    requests: latencies('connector_http_request_duration_seconds', ['server', 'route']),
    institutionCalls: latencies('connector_institution_call_duration_seconds', ['operation']),
    switchCalls: latencies('connector_switch_call_duration_seconds', ['operation']),
  };
}

/**
 * A body written from `chunks`, the event loop taking a turn after each: a large report goes out
 * while payments go on, rather than in one piece that holds everything else up.
 */
function inTurns(chunks: Iterable<string>): Readable {
  return Readable.from(
    (async function* () {
      for (const chunk of chunks) {
        yield chunk;
        await nextTurn();
      }
    })(),
    { objectMode: false },
  );
}
