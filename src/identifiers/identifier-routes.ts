import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONSENT_AT_PATTERN, CONSENT_BY_MAX_LENGTH, CONSENT_CHANNEL_MAX_LENGTH } from '../domain/identifier-rules.js';
import { PARTY_ID_TYPES } from '../domain/identifiers.js';
import type { IdentifierRecord } from './identifier-store.js';
import type { IdentifierJobs, JobAction, LineResult } from './identifier-jobs.js';
import type { IdentifierInput, IdentifierRegistration } from './registration.js';
import { ConnectorError } from '../domain/errors.js';
import type { Logger } from '../ports/logger.js';
import { csvField } from '../shared/csv.js';

/**
 * Individual opt-in and opt-out of customer identifiers, on the outgoing server with the
 * channel's credential (x-api-key): the institution's own channels and back office call them.
 */

const text = (maxLength: number): Record<string, unknown> => ({ type: 'string', minLength: 1, maxLength });
const consentSchema = {
  type: 'object',
  required: ['by', 'at', 'channel'],
  properties: {
    by: { ...text(CONSENT_BY_MAX_LENGTH), description: 'Who asked: the customer, an agent or an operator, as the channel names them' },
    at: { type: 'string', pattern: CONSENT_AT_PATTERN, description: 'When consent was given (ISO 8601)' },
    channel: { ...text(CONSENT_CHANNEL_MAX_LENGTH), description: 'Where: app, ussd, branch...' },
  },
};
export const identifierRequestSchema = {
  type: 'object',
  required: ['idType', 'idValue', 'consent'],
  properties: {
    idType: { type: 'string', enum: [...PARTY_ID_TYPES] },
    idValue: text(128),
    idSubValue: text(128),
    consent: consentSchema,
  },
};
const paramsSchema = {
  type: 'object',
  required: ['idType', 'idValue'],
  properties: { idType: { type: 'string', maxLength: 32 }, idValue: text(128), idSubValue: text(128) },
};

interface IdentifierBody extends IdentifierInput {
  readonly consent: { readonly by: string; readonly at: string; readonly channel: string };
}

/** What a caller is told of an identifier: where it stands, never whose account it is. */
export function identifierView(record: IdentifierRecord): Record<string, unknown> {
  return {
    idType: record.idType,
    idValue: record.idValue,
    ...(record.idSubValue === undefined ? {} : { idSubValue: record.idSubValue }),
    currency: record.currency,
    state: record.state,
    ...(record.platformCode === null ? {} : { platformError: { statusCode: record.platformCode, message: record.platformMessage ?? '' } }),
    ...(record.lastError === null ? {} : { lastError: record.lastError }),
    updatedAt: record.updatedAt,
  };
}

/** 200 once the platform has decided (REGISTERED, FAILED, DEREGISTERED, OPT_OUT_FAILED), 202 while it is pending. */
function answer(reply: FastifyReply, record: IdentifierRecord): FastifyReply {
  const pending = record.state === 'REQUESTED' || record.state === 'OPTING_OUT';
  return reply.status(pending ? 202 : 200).send(identifierView(record));
}

/** A bulk file may hold hundreds of thousands of lines. */
const BULK_BODY_LIMIT = 50 * 1024 * 1024;

export function registerIdentifierRoutes(
  server: FastifyInstance,
  registration: IdentifierRegistration,
  jobs: IdentifierJobs | undefined,
  channel: (request: FastifyRequest) => Promise<void>,
  logger: Logger,
): void {
  if (jobs !== undefined) registerJobRoutes(server, jobs, channel, logger);
  const write = { onRequest: channel, schema: { body: identifierRequestSchema } };
  server.post<{ Body: IdentifierBody }>('/identifiers', write, async (request, reply) => answer(reply, await registration.register(request.body, request.body.consent)));
  server.post<{ Body: IdentifierBody }>('/identifiers/opt-out', write, async (request, reply) => answer(reply, await registration.deregister(request.body, request.body.consent)));
  server.get('/identifiers/reconciliation', { onRequest: channel }, () => registration.reconcile());
  server.post('/identifiers/reconciliation/fix', { onRequest: channel }, () => registration.fixReconciliation());
  const read = { onRequest: channel, schema: { params: paramsSchema } };
  for (const path of ['/identifiers/:idType/:idValue', '/identifiers/:idType/:idValue/:idSubValue']) {
    server.get<{ Params: IdentifierInput }>(path, read, async (request) => identifierView(await registration.status(request.params)));
  }
}

/**
 * Bulk: POST /identifiers/jobs?action=register|opt-out with a CSV (text/csv) or JSON lines
 * (application/x-ndjson) body answers 202 {jobId, total, ...} at once; GET /identifiers/jobs/{jobId}
 * tells the progress and GET .../lines every line's result (?format=csv for a report file).
 */
function registerJobRoutes(server: FastifyInstance, jobs: IdentifierJobs, channel: (request: FastifyRequest) => Promise<void>, logger: Logger): void {
  server.addContentTypeParser(['text/csv', 'application/x-ndjson'], { parseAs: 'string', bodyLimit: BULK_BODY_LIMIT }, (_request, body, done) => done(null, body));
  const querySchema = { type: 'object', properties: { action: { type: 'string', enum: ['register', 'opt-out'] } } };
  // One upload at a time, from its headers until it is answered or its sender goes: the largest
  // file the route takes holds about 450 MiB while it is read and stored, and three at once ran a
  // process with the default 1,024 MiB heap out of memory. Another is refused before its body is read.
  let uploading = false;
  const oneAtATime = async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (uploading) throw new ConnectorError('UploadInProgress', 'another bulk file is being read and stored; send this one when it is answered');
    uploading = true;
    reply.raw.once('close', () => {
      uploading = false;
    });
  };
  server.post<{ Querystring: { action?: JobAction }; Body: string }>('/identifiers/jobs', { onRequest: [channel, oneAtATime], bodyLimit: BULK_BODY_LIMIT, schema: { querystring: querySchema } }, async (request, reply) => {
    const type = String(request.headers['content-type'] ?? '');
    const format = type.startsWith('text/csv') ? 'csv' : type.startsWith('application/x-ndjson') ? 'jsonl' : undefined;
    if (format === undefined || typeof request.body !== 'string') throw new ConnectorError('MalformedSyntax', 'send the file as text/csv or application/x-ndjson');
    const view = await jobs.submit(request.query.action ?? 'register', request.body, format);
    return reply.status(202).send(view);
  });
  const params = { type: 'object', required: ['jobId'], properties: { jobId: { type: 'string', pattern: '^[0-9a-f]{32}$' } } };
  // A job not found is 404 (3200); any other error is mapped as everywhere (a store that failed had been a 404 too).
  server.get<{ Params: { jobId: string } }>('/identifiers/jobs/:jobId', { onRequest: channel, schema: { params } }, (request) => jobs.view(request.params.jobId));
  // No HEAD: its answer would be sent before the report was read, and the pages read after it for nothing.
  const report = { onRequest: channel, schema: { params }, exposeHeadRoute: false };
  server.get<{ Params: { jobId: string }; Querystring: { format?: string } }>('/identifiers/jobs/:jobId/lines', report, async (request, reply) => {
    const pages = jobs.linePages(request.params.jobId);
    // The first page is read before anything is sent, so that a failing store is answered as an
    // error; the rest follow as the reply is written.
    const first = await pages.next();
    const csv = request.query.format === 'csv';
    const text = reportText(first, pages, csv, (error) =>
      logger.error({ server: 'outgoing', route: '/identifiers/jobs/:jobId/lines', jobId: request.params.jobId, err: error }, 'job report cut off: the store failed after its first page'),
    );
    return reply.type(csv ? 'text/csv' : 'application/json; charset=utf-8').send(Readable.from(text));
  });
}

/** A job's report, as CSV lines or as the JSON `{"lines": [...]}`, written a page at a time. */
async function* reportText(first: IteratorResult<LineResult[]>, rest: AsyncGenerator<LineResult[]>, csv: boolean, failed: (error: unknown) => void): AsyncGenerator<string> {
  yield csv ? 'line,idType,idValue,idSubValue,outcome,message\n' : '{"lines":[';
  let written = 0;
  const next = async (): Promise<IteratorResult<LineResult[]>> => {
    try {
      return await rest.next();
    } catch (error) {
      // The answer has begun: the client sees it cut off; the operator sees why in the log.
      failed(error);
      throw error;
    }
  };
  for (let page = first; page.done !== true; page = await next()) {
    if (csv) {
      // Every field quoted as RFC 4180 asks and guarded against formulas: an INVALID line's value
      // is kept as it was read (=HYPERLINK(...), or a comma and a line break forging a row).
      yield page.value.map((line) => `${[String(line.line), line.idType ?? '', line.idValue ?? '', line.idSubValue ?? '', line.outcome, line.message ?? ''].map(csvField).join(',')}\n`).join('');
    } else {
      yield `${written > 0 ? ',' : ''}${page.value.map((line) => JSON.stringify(line)).join(',')}`;
    }
    written += page.value.length;
  }
  if (!csv) yield ']}';
}
