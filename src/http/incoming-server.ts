import type { FastifyInstance } from 'fastify';
import type { IncomingPayments } from '../aggregate/incoming-payments.js';
import type { QuoteRequestBody, TransferNotificationBody, TransferRequestBody } from '../aggregate/incoming-types.js';
import type { ApiType } from '../domain/iso20022.js';
import { incomingBodySchemas, partyParamsSchema, transferIdParamsSchema, transferNotificationSchema } from './backend-schemas.js';
import type { HealthCheck } from './health.js';
import { registerHealth } from './health.js';
import { createServer, type ServerOptions } from './server-common.js';

interface PartyParams {
  idType: string;
  idValue: string;
  idSubValue?: string;
}

/**
 * The incoming-payments server: the switch connector's backend API. Bodies are validated
 * against the published schemas before the aggregate sees them; extension keys are bounded as
 * `apiType` (the switch connector's API_TYPE) needs.
 */
export function buildIncomingServer(incoming: IncomingPayments, health: HealthCheck, options: ServerOptions, apiType: ApiType): FastifyInstance {
  const server = createServer({ ...options, hideInstitutionDetail: true });
  const bodies = incomingBodySchemas(apiType);
  registerHealth(server, health);

  const getParty = async (params: PartyParams) => incoming.getParty(params.idType, params.idValue, params.idSubValue);
  server.get<{ Params: PartyParams }>('/parties/:idType/:idValue', { schema: { params: partyParamsSchema } }, (request) =>
    getParty(request.params),
  );
  server.get<{ Params: PartyParams }>('/parties/:idType/:idValue/:idSubValue', { schema: { params: partyParamsSchema } }, (request) =>
    getParty(request.params),
  );

  server.post<{ Body: QuoteRequestBody }>('/quoterequests', { schema: { body: bodies.quoteRequest } }, (request) =>
    incoming.quote(request.body),
  );

  server.post<{ Body: TransferRequestBody }>('/transfers', { schema: { body: bodies.transferRequest } }, async (request, reply) => {
    const answer = await incoming.receiveTransfer(request.body);
    return reply.status(200).send(answer);
  });

  const notify = { schema: { params: transferIdParamsSchema, body: transferNotificationSchema } };
  const handleNotification = async (transferId: string, body: TransferNotificationBody | undefined): Promise<Record<string, never>> => {
    await incoming.notify(transferId, body ?? {});
    return {};
  };
  server.put<{ Params: { transferId: string }; Body: TransferNotificationBody }>('/transfers/:transferId', notify, (request) =>
    handleNotification(request.params.transferId, request.body),
  );
  server.patch<{ Params: { transferId: string }; Body: TransferNotificationBody }>('/transfers/:transferId', notify, (request) =>
    handleNotification(request.params.transferId, request.body),
  );

  server.get<{ Params: { transferId: string } }>('/transfers/:transferId', { schema: { params: transferIdParamsSchema } }, (request) =>
    incoming.getTransfer(request.params.transferId),
  );
  return server;
}
