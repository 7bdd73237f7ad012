import { createRequire } from 'node:module';
import { SWITCH_ID_PATTERN } from '../domain/identifiers.js';
import {
  EXTENSION_LIST_MAX_ITEMS,
  EXTENSION_VALUE_MAX_LENGTH,
  FSPIOP_EXTENSION_KEY_MAX_LENGTH,
  ISO20022_EXTENSION_KEY_MAX_LENGTH,
  type ApiType,
} from '../domain/iso20022.js';

/**
 * Request schemas of the switch connector's backend API v2.1, taken from the published
 * documents in @mojaloop/api-snippets (fully dereferenced JSON schemas), with two deliberate
 * relaxations where the real switch connector sends less than the document requires:
 * - POST /transfers: `ilpPacket` is usually, not always, present;
 * - PUT /transfers/{id}: the notification's fields may be missing and `currentState` may be
 *   ABORTED, which the document's enum lacks; only its shape is checked.
 * and one tightening where the document allows what no sender means and the aggregate cannot
 * read: an extension list's items must each have a key and a value (the document requires
 * neither), and the transfer's own `extensionList`, which the switch connector sends but the
 * document does not list, is checked like the others.
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

/**
 * The backend API's extension list as FSPIOP defines it: at most 16 entries, each a key and a
 * value of 1-128 characters. A key is at most 32 characters in FSPIOP mode, as FSPIOP peers
 * require; in ISO 20022 mode it is an element path (`CdtTrfTxInf.Dbtr.Nm`), often longer.
 */
function extensionListSchema(apiType: ApiType): JsonSchema {
  const keyMaxLength = apiType === 'iso20022' ? ISO20022_EXTENSION_KEY_MAX_LENGTH : FSPIOP_EXTENSION_KEY_MAX_LENGTH;
  return {
    type: 'array',
    minItems: 0,
    maxItems: EXTENSION_LIST_MAX_ITEMS,
    items: {
      type: 'object',
      required: ['key', 'value'],
      properties: {
        key: { type: 'string', minLength: 1, maxLength: keyMaxLength },
        value: { type: 'string', minLength: 1, maxLength: EXTENSION_VALUE_MAX_LENGTH },
      },
    },
  };
}

/**
 * Replaces, anywhere in `schema`, each extension list of the backend API's shape (an array of
 * `{key, value}` items that requires neither) with `list`; answers how many it replaced. The
 * FSPIOP-shaped lists inside the ILP packet (`{extension: [...]}`, key and value required) stay.
 */
function replaceExtensionLists(schema: unknown, list: JsonSchema): number {
  if (typeof schema !== 'object' || schema === null) return 0;
  let replaced = 0;
  for (const [name, child] of Object.entries(schema)) {
    if (isBackendExtensionList(child)) {
      (schema as Record<string, unknown>)[name] = structuredClone(list);
      replaced += 1;
    } else {
      replaced += replaceExtensionLists(child, list);
    }
  }
  return replaced;
}

function isBackendExtensionList(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return false;
  const { type, items } = schema as Record<string, unknown>;
  if (type !== 'array' || typeof items !== 'object' || items === null) return false;
  const { properties, required } = items as Record<string, unknown>;
  const fields = typeof properties === 'object' && properties !== null ? Object.keys(properties) : [];
  return fields.includes('key') && fields.includes('value') && required === undefined;
}

/** The backend schema `name` with its extension lists checked as `apiType` needs; `expected`: how many it has. */
function withExtensionLists(name: string, apiType: ApiType, expected: number): JsonSchema {
  const schema = backendSchema(name);
  const replaced = replaceExtensionLists(schema, extensionListSchema(apiType));
  // A new api-snippets whose lists changed shape must be looked at, not silently left unchecked.
  if (replaced !== expected) throw new Error(`api-snippets backend schema ${name} has ${replaced} extension lists, expected ${expected}`);
  return schema;
}

/** The request bodies of the incoming server, for the switch connector's API_TYPE. */
export interface IncomingBodySchemas {
  readonly quoteRequest: JsonSchema;
  readonly transferRequest: JsonSchema;
}

export function incomingBodySchemas(apiType: ApiType): IncomingBodySchemas {
  // extensionList, from.extensionList, to.extensionList
  const quoteRequest = withExtensionLists('quoteRequest', apiType, 3);
  // from.extensionList, to.extensionList, quote.extensionList, quoteRequestExtensions
  const transferRequest = withExtensionLists('transferRequest', apiType, 4);
  const required = transferRequest['required'];
  if (Array.isArray(required)) transferRequest['required'] = required.filter((field) => field !== 'ilpPacket');
  (transferRequest['properties'] as Record<string, JsonSchema>)['extensionList'] = extensionListSchema(apiType);
  return { quoteRequest, transferRequest };
}

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
