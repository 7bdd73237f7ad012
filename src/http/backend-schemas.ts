import { createRequire } from 'node:module';
import { SWITCH_ID_PATTERN } from '../domain/identifiers.js';

/**
 * Request schemas of the switch connector's backend API v2.1, taken from the published
 * documents in @mojaloop/api-snippets (fully dereferenced JSON schemas), with two deliberate
 * relaxations where the real switch connector sends less than the document requires:
 * - POST /transfers: `ilpPacket` is usually, not always, present;
 * - PUT /transfers/{id}: the notification's fields may be missing and `currentState` may be
 *   ABORTED, which the document's enum lacks; only its shape is checked.
 */
const require = createRequire(import.meta.url);
type JsonSchema = Record<string, unknown>;
const backend = require('@mojaloop/api-snippets/lib/sdk-scheme-adapter/v2_1_0/backend/json-schemas.json') as Record<string, JsonSchema>;

/** A copy of the backend API v2.1 schema `name` (the caller may adjust it). */
export function backendSchema(name: string): JsonSchema {
  const found = backend[name];
  if (found === undefined) throw new Error(`api-snippets has no backend schema ${name}`);
  return structuredClone(found);
}

export const quoteRequestSchema: JsonSchema = backendSchema('quoteRequest');

export const transferRequestSchema: JsonSchema = (() => {
  const transfer = backendSchema('transferRequest');
  const required = transfer['required'];
  if (Array.isArray(required)) transfer['required'] = required.filter((field) => field !== 'ilpPacket');
  return transfer;
})();

export const transferNotificationSchema: JsonSchema = {
  type: 'object',
  properties: {
    currentState: { type: 'string', minLength: 1, maxLength: 64 },
    direction: { type: 'string' },
    finalNotification: { type: 'object', properties: { transferState: { type: 'string' } } },
  },
};

const idTypeEnum = ((): unknown => {
  const quote = backendSchema('quoteRequest');
  const to = (quote['properties'] as Record<string, JsonSchema>)['to'];
  return ((to?.['properties'] as Record<string, JsonSchema> | undefined)?.['idType'] ?? { type: 'string' });
})();

export const partyParamsSchema: JsonSchema = {
  type: 'object',
  required: ['idType', 'idValue'],
  properties: {
    idType: idTypeEnum,
    idValue: { type: 'string', minLength: 1, maxLength: 128 },
    idSubValue: { type: 'string', minLength: 1, maxLength: 128 },
  },
};

export const transferIdParamsSchema: JsonSchema = {
  type: 'object',
  required: ['transferId'],
  properties: { transferId: { type: 'string', pattern: SWITCH_ID_PATTERN.source } },
};
