import type { FastifyInstance } from 'fastify';
import type { AuditTrail } from '../../adapters/store/audit-trail.js';
import { ConnectorError } from '../../domain/errors.js';
import { SWITCH_ID_PATTERN } from '../../domain/identifiers.js';
import { registerHealth, type HealthCheck } from '../../http/health.js';
import { operatorAuth } from '../../http/operator-auth.js';
import { statedText } from '../../http/operator-reason.js';
import { createServer, type ServerOptions } from '../../http/server-common.js';
import type { FxOperatorActions, FxOutcome } from '../aggregate/fx-operator-actions.js';
import type { ConversionRecord, ConversionState, FxStore } from '../store/fx-store.js';

export interface FxpOperationsOptions extends ServerOptions {
  readonly operators: ReadonlyArray<{ readonly name: string; readonly token: string }>;
}

const MAX_LIST = 200;
const STATES: readonly ConversionState[] = ['RESERVING', 'RESERVED', 'COMMITTING', 'COMMITTED', 'RELEASING', 'ABORTED', 'FAILED'];
const idParams = {
  type: 'object',
  required: ['commitRequestId'],
  properties: { commitRequestId: { type: 'string', pattern: SWITCH_ID_PATTERN.source } },
} as const;
const resolveBody = {
  type: 'object',
  required: ['outcome', 'reason', 'evidence'],
  additionalProperties: false,
  properties: {
    outcome: { type: 'string', enum: ['COMMITTED', 'ABORTED', 'FAILED'] },
    reason: { type: 'string', minLength: 1, maxLength: 500 },
    evidence: { type: 'string', minLength: 1, maxLength: 500 },
  },
} as const;

/**
 * The operations server of FX provider mode (OPERATIONS_PORT): the conversions the connector
 * flagged, their audit history, and an operator's resolution of one with the hub's outcome.
 * Every /operations route takes an operator's bearer token (OPERATOR_CREDENTIALS); the
 * operator's name, reason and evidence go into the audit trail.
 */
export function buildFxpOperationsServer(deps: { readonly store: FxStore; readonly audit: AuditTrail; readonly actions: FxOperatorActions }, health: HealthCheck, options: FxpOperationsOptions): FastifyInstance {
  const server = createServer(options);
  registerHealth(server, health);
  const { authenticate, operatorOf } = operatorAuth(options.operators);

  server.get('/operations/whoami', { onRequest: authenticate }, (request) => ({ operator: operatorOf(request) }));

  const listQuery = {
    type: 'object',
    properties: { state: { type: 'string', enum: ['', ...STATES] }, attention: { type: 'string', enum: ['true', 'false'] } },
  } as const;
  server.get<{ Querystring: { state?: ConversionState | ''; attention?: 'true' | 'false' } }>('/operations/fx-conversions', { onRequest: authenticate, schema: { querystring: listQuery } }, async (request) => {
    const { state, attention } = request.query;
    const conversions = await deps.store.searchConversions({
      ...(state === undefined || state === '' ? {} : { state }),
      ...(attention === undefined ? {} : { needsAttention: attention === 'true' }),
      limit: MAX_LIST + 1,
    });
    return { conversions: conversions.slice(0, MAX_LIST).map(conversionView), truncated: conversions.length > MAX_LIST };
  });

  server.get<{ Params: { commitRequestId: string } }>('/operations/fx-conversions/:commitRequestId', { onRequest: authenticate, schema: { params: idParams } }, async (request) => {
    const id = request.params.commitRequestId;
    const conversion = await deps.store.findConversion(id);
    if (conversion === undefined) throw new ConnectorError('FxConversionNotFound', `no conversion ${id}`);
    return { conversion: conversionView(conversion), history: await deps.audit.history('fx_conversion', id) };
  });

  server.post<{ Params: { commitRequestId: string }; Body: { outcome: FxOutcome; reason: string; evidence: string } }>(
    '/operations/fx-conversions/:commitRequestId/resolve',
    { onRequest: authenticate, schema: { params: idParams, body: resolveBody } },
    async (request) => {
      const { outcome, reason, evidence } = request.body;
      const stated = { reason: statedText(reason, 'reason'), evidence: statedText(evidence, 'evidence') };
      return conversionView(await deps.actions.resolve(request.params.commitRequestId, outcome, { operator: operatorOf(request), ...stated }));
    },
  );
  return server;
}

/** A conversion as operators see it: amounts as decimal strings, never the request's hash. */
function conversionView(conversion: ConversionRecord): Record<string, unknown> {
  return {
    commitRequestId: conversion.commitRequestId,
    state: conversion.state,
    sourceAmount: { amount: conversion.sourceAmount, currency: conversion.sourceCurrency },
    targetAmount: { amount: conversion.targetAmount, currency: conversion.targetCurrency },
    expiration: conversion.expiration,
    needsAttention: conversion.needsAttention,
    lastError: conversion.lastError,
    attempts: conversion.attempts,
    createdAt: conversion.createdAt,
    updatedAt: conversion.updatedAt,
  };
}
