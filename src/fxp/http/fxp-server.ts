import type { FastifyInstance } from 'fastify';
import { SWITCH_ID_PATTERN } from '../../domain/identifiers.js';
import { backendSchema } from '../../http/backend-schemas.js';
import type { HealthCheck } from '../../http/health.js';
import { registerHealth } from '../../http/health.js';
import { createServer, type ServerOptions } from '../../http/server-common.js';
import type { FxConversions, FxQuoteRequest, FxTransferRequest } from '../aggregate/fx-conversions.js';

type JsonSchema = Record<string, unknown>;

/** The published request schemas; notifications are checked for shape only (their words are read strictly by readFxNotification). */
export const fxQuoteRequestSchema = backendSchema('FxQuotesPostBackendRequest');
export const fxTransferRequestSchema = backendSchema('FxTransfersPostBackendRequest');
const notificationSchema: JsonSchema = {
  type: 'object',
  properties: {
    conversionState: { type: 'string', maxLength: 64 },
    currentState: { type: 'string', maxLength: 64 },
    finalNotification: { type: 'object', properties: { conversionState: { type: 'string', maxLength: 64 } } },
  },
};
const idParams: JsonSchema = {
  type: 'object',
  required: ['commitRequestId'],
  properties: { commitRequestId: { type: 'string', pattern: SWITCH_ID_PATTERN.source } },
};

/**
 * The FX provider's server (CONNECTOR_MODE=fxp), on the incoming port: the switch connector's
 * FXP backend API v2.1. Same conventions as the payee server: published schemas without
 * coercion, one error contract, institution detail kept out of answers.
 */
export function buildFxpServer(conversions: FxConversions, health: HealthCheck, options: ServerOptions): FastifyInstance {
  const server = createServer({ ...options, hideInstitutionDetail: true });
  registerHealth(server, health);

  server.post<{ Body: FxQuoteRequest }>('/fxQuotes', { schema: { body: fxQuoteRequestSchema } }, (request) => conversions.quote(request.body));
  server.post<{ Body: FxTransferRequest }>('/fxTransfers', { schema: { body: fxTransferRequestSchema } }, (request) => conversions.transfer(request.body));

  const notify = { schema: { params: idParams, body: notificationSchema } };
  server.put<{ Params: { commitRequestId: string }; Body: Record<string, unknown> }>('/fxTransfers/:commitRequestId', notify, async (request) => {
    await conversions.notify(request.params.commitRequestId, request.body ?? {}, 'PUT');
    return {};
  });
  server.patch<{ Params: { commitRequestId: string }; Body: Record<string, unknown> }>('/fxTransfers/:commitRequestId', notify, async (request) => {
    await conversions.notify(request.params.commitRequestId, request.body ?? {}, 'PATCH');
    return {};
  });
  return server;
}
