import {
  acceptResultSchema,
  callbackSchema,
  errorSchema,
  paymentStatusSchema,
  paymentTermsSchema,
  sendMoneyRequestSchema,
  updateSendMoneySchema,
} from './outgoing-schemas.js';
import { SWITCH_ID_PATTERN } from '../domain/identifiers.js';

type JsonSchema = Record<string, unknown>;

export interface OpenApiOptions {
  readonly callbackSecretHeader: string;
  readonly callbackAuth: 'secret' | 'confirm';
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema): JsonSchema => ({ content: { 'application/json': { schema } } });
const errors = (...statuses: number[]): Record<string, JsonSchema> =>
  Object.fromEntries(statuses.map((status) => [String(status), { description: ERROR_DESCRIPTIONS[status] ?? 'Error', ...json(ref('Error')) }]));

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (the message names the field)',
  401: 'Missing or wrong credentials',
  404: 'Unknown transferId',
  409: 'The homeTransactionId was used for another request, or the payment is in another state',
  422: 'Business rejection (invalid returned quote, conversion rejected, quote not accepted, quote expired, payer refused)',
  503: 'The switch connector failed (SDK client error)',
  504: 'The switch connector did not answer in time: outcome unknown',
};

const transferIdParameter = {
  name: 'transferId',
  in: 'path',
  required: true,
  description: "The switch's transferId, as answered by POST /send-money",
  schema: { type: 'string', pattern: SWITCH_ID_PATTERN.source },
};

function initiate(summary: string, amountType: 'SEND' | 'RECEIVE'): JsonSchema {
  return {
    summary,
    description: `Starts an outbound transfer at the switch connector with amountType ${amountType} and answers the terms. A retry with the same homeTransactionId and body answers the same terms and starts nothing.`,
    security: [{ channelApiKey: [] }],
    requestBody: { required: true, ...json(ref('SendMoneyRequest')) },
    responses: { '200': { description: 'Terms to show the customer', ...json(ref('PaymentTerms')) }, ...errors(400, 401, 409, 422, 503, 504) },
  };
}

function update(summary: string): JsonSchema {
  return {
    summary,
    description:
      'The customer accepts (acceptQuote true) or aborts (false). Bank flow: the channel has already debited the customer; the switch is told to proceed and the answer is the outcome. Mobile-operator flow: the institution is asked to debit the customer (payment prompt) and its answer is returned (202 while pending); the callback finishes the payment.',
    security: [{ channelApiKey: [] }],
    parameters: [transferIdParameter],
    requestBody: { required: true, ...json(ref('UpdateSendMoney')) },
    responses: {
      '200': { description: 'The payment completed', ...json(ref('AcceptResult')) },
      '202': { description: 'Mobile-operator flow: the debit request is pending', ...json(ref('AcceptResult')) },
      ...errors(400, 401, 404, 409, 422, 503, 504),
    },
  };
}

function status(summary: string): JsonSchema {
  return {
    summary,
    security: [{ channelApiKey: [] }],
    parameters: [transferIdParameter],
    responses: { '200': { description: 'Where the payment stands (ids and amounts, no names)', ...json(ref('PaymentStatus')) }, ...errors(401, 404) },
  };
}

/** The OpenAPI 3.0 document of the outgoing-payments server, served at GET /openapi.json. */
export function outgoingOpenApi(options: OpenApiOptions): JsonSchema {
  const callbackOperation = {
    summary: "The institution's payment provider reports the customer's debit",
    description:
      'Two shapes: a payment provider\'s `{transaction: {id, status_code}}` (TS succeeded; TA, TIP undecided; any other code failed) or the reference core banking API\'s `{reference, status}` (SUCCEEDED, FAILED, PENDING). Unless the adapter declares signed callbacks, the institution is asked for the debit\'s status and its answer decides: success tells the switch to proceed, failure to abort, undecided changes nothing. A repeated callback changes nothing.' +
      (options.callbackAuth === 'confirm'
        ? ' Without the secret header the body is only a hint: the institution is asked for the debit\'s status and its answer decides (CALLBACK_AUTH=confirm).'
        : ''),
    security: options.callbackAuth === 'confirm' ? [{ callbackSecret: [] }, {}] : [{ callbackSecret: [] }],
    requestBody: { required: true, ...json(ref('Callback')) },
    responses: { '200': { description: 'Received', ...json({ type: 'object' }) }, ...errors(400, 401, 404, 409) },
  };
  return {
    openapi: '3.0.3',
    info: {
      title: 'Core connector: outgoing payments',
      version: '1.0.0',
      description: 'Send money (P2P) and merchant payments (P2B) from the institution\'s customer channel, through the Mojaloop switch connector.',
    },
    paths: {
      '/send-money': { post: initiate('Send money (amountType SEND)', 'SEND') },
      '/merchant-payments': { post: initiate('Merchant payment (amountType RECEIVE)', 'RECEIVE') },
      '/merchant-payment': { post: initiate('Merchant payment (same as /merchant-payments)', 'RECEIVE') },
      '/send-money/{transferId}': { put: update('Accept or abort a send-money payment'), get: status('Where a send-money payment stands') },
      '/merchant-payment/{transferId}': { put: update('Accept or abort a merchant payment'), get: status('Where a merchant payment stands') },
      '/merchant-payments/{transferId}': { put: update('Accept or abort a merchant payment'), get: status('Where a merchant payment stands') },
      '/payments/needing-attention': {
        get: {
          summary: 'Payments that need manual action (e.g. a refund that keeps failing)',
          security: [{ channelApiKey: [] }],
          responses: { '200': { description: 'Oldest first', ...json({ type: 'array', items: ref('PaymentStatus') }) }, ...errors(401) },
        },
      },
      '/callback': { put: callbackOperation, post: { ...callbackOperation, summary: 'The same as PUT /callback, for providers that POST' } },
      '/health': { get: { summary: 'Store and institution reachable', responses: { '200': { description: 'Healthy' }, '503': { description: 'Unhealthy' } } } },
    },
    components: {
      securitySchemes: {
        channelApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        callbackSecret: { type: 'apiKey', in: 'header', name: options.callbackSecretHeader },
      },
      schemas: {
        SendMoneyRequest: sendMoneyRequestSchema,
        UpdateSendMoney: updateSendMoneySchema,
        Callback: callbackSchema,
        PaymentTerms: paymentTermsSchema,
        AcceptResult: acceptResultSchema,
        PaymentStatus: paymentStatusSchema,
        Error: errorSchema,
      },
    },
  };
}
