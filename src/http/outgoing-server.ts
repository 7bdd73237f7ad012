import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingPayments } from '../aggregate/outgoing-payments.js';
import type { AcceptResult, CallbackBody, SendMoneyRequest } from '../aggregate/outgoing-types.js';
import { registerIdentifierRoutes } from '../identifiers/identifier-routes.js';
import type { IdentifierRegistration } from '../identifiers/registration.js';
import type { IdentifierJobs } from '../identifiers/identifier-jobs.js';
import type { PaymentKind } from '../ports/outgoing-store.js';
import type { HealthCheck } from './health.js';
import { registerHealth } from './health.js';
import { requireSecret } from './outgoing-auth.js';
import { outgoingOpenApi } from './outgoing-openapi.js';
import { transferIdParamsSchema } from './backend-schemas.js';
import { callbackSchema, sendMoneyRequestSchema, updateSendMoneySchema } from './outgoing-schemas.js';
import { createServer, DEFAULT_REQUEST_TIMEOUT_MS, type ServerOptions } from './server-common.js';

export interface OutgoingServerOptions extends ServerOptions {
  /** Sent by the customer channel as x-api-key. */
  readonly channelApiKey: string;
  /** Sent by the institution's payment provider on PUT /callback, in `callbackSecretHeader`. */
  readonly callbackSecret: string;
  readonly callbackSecretHeader: string;
  /** `confirm`: a callback without the header is accepted as a hint and confirmed with the institution. */
  readonly callbackAuth: 'secret' | 'confirm';
  /** SDK_TRANSFER_TIMEOUT_MS: sets the server's request time limit (outgoingRequestTimeoutMs). */
  readonly transferTimeoutMs: number;
  /** Identifier opt-in and opt-out (src/identifiers/), served with the channel's credential. */
  readonly identifiers?: IdentifierRegistration;
  readonly identifierJobs?: IdentifierJobs;
}

/**
 * The outgoing server's request time limit: a channel request may wait for two blocking switch
 * calls (POST and PUT /transfers, each up to transferTimeoutMs), plus a margin for the
 * institution and the store; never less than the default.
 */
export function outgoingRequestTimeoutMs(transferTimeoutMs: number): number {
  return Math.max(DEFAULT_REQUEST_TIMEOUT_MS, 2 * transferTimeoutMs + 30_000);
}

/** A callback body is a few hundred bytes; an unauthenticated caller may not make us read more. */
const CALLBACK_BODY_LIMIT = 16_384;

interface TransferParams {
  transferId: string;
}

/**
 * The outgoing-payments server: the customer channel's API and the institution's callback.
 * Channel routes and the callback take separate credentials, checked before the body is read;
 * neither is logged (server-common logs route, status and ids only).
 */
export function buildOutgoingServer(outgoing: OutgoingPayments, health: HealthCheck, options: OutgoingServerOptions): FastifyInstance {
  const server = createServer({ ...options, requestTimeoutMs: outgoingRequestTimeoutMs(options.transferTimeoutMs) });
  registerHealth(server, health);
  const document = outgoingOpenApi({ callbackSecretHeader: options.callbackSecretHeader, callbackAuth: options.callbackAuth });
  server.get('/openapi.json', async () => document);

  const channel = requireSecret('x-api-key', options.channelApiKey);
  const initiate = { onRequest: channel, schema: { body: sendMoneyRequestSchema } };
  const routes: Array<[string, PaymentKind]> = [
    ['/send-money', 'SEND_MONEY'],
    ['/merchant-payments', 'MERCHANT_PAYMENT'],
    ['/merchant-payment', 'MERCHANT_PAYMENT'],
  ];
  for (const [path, kind] of routes) {
    server.post<{ Body: SendMoneyRequest }>(path, initiate, (request) => outgoing.sendMoney(request.body, kind));
  }

  const update = { onRequest: channel, schema: { params: transferIdParamsSchema, body: updateSendMoneySchema } };
  const status = { onRequest: channel, schema: { params: transferIdParamsSchema } };
  for (const [base, kind] of routes) {
    const path = `${base}/:transferId`;
    server.put<{ Params: TransferParams; Body: { acceptQuote: boolean } }>(path, update, async (request, reply) =>
      answerAccept(reply, await outgoing.updateSendMoney(request.params.transferId, request.body.acceptQuote, kind)),
    );
    server.get<{ Params: TransferParams }>(path, status, (request) => outgoing.status(request.params.transferId, kind));
  }
  server.get('/payments/needing-attention', { onRequest: channel }, () => outgoing.needingAttention(100));
  if (options.identifiers !== undefined) registerIdentifierRoutes(server, options.identifiers, options.identifierJobs, channel, options.logger);

  // Requests that presented the right secret; the others reach the handler only with CALLBACK_AUTH=confirm.
  const authenticated = new WeakSet<FastifyRequest>();
  const callbackSecret = requireSecret(options.callbackSecretHeader, options.callbackSecret);
  const callbackAccess = async (request: FastifyRequest): Promise<void> => {
    if (options.callbackAuth === 'confirm' && request.headers[options.callbackSecretHeader] === undefined) return;
    await callbackSecret(request);
    authenticated.add(request);
  };
  const callback = { onRequest: callbackAccess, bodyLimit: CALLBACK_BODY_LIMIT, schema: { body: callbackSchema } };
  // PUT as the spec names it; POST too, since that is how some providers (Airtel among them) call.
  for (const method of ['PUT', 'POST'] as const) {
    server.route<{ Body: CallbackBody }>({
      method,
      url: '/callback',
      ...callback,
      handler: async (request) => {
        await outgoing.callback(request.body, { authenticated: authenticated.has(request) });
        return {};
      },
    });
  }
  return server;
}

/** 202 while the customer's debit is pending (mobile-operator flow), 200 once the payment completed. */
function answerAccept(reply: FastifyReply, result: AcceptResult): FastifyReply {
  return reply.status(result.state === 'COMPLETED' ? 200 : 202).send(result);
}
