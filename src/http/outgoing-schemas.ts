import { PARTY_ID_TYPES } from '../domain/identifiers.js';
import { OUTGOING_STATES } from '../domain/outgoing-payment.js';
import { AMOUNT_PATTERN } from '../domain/money.js';

/**
 * JSON schemas of the outgoing API, used by the routes (validated without coercion) and by the
 * OpenAPI document, so the document is the code. The rules a schema cannot state (calendar
 * dates, ISO 4217 membership, minor units) are checked by the aggregate (outgoing-request.ts).
 */
type JsonSchema = Record<string, unknown>;

const text = (maxLength: number, description: string): JsonSchema => ({ type: 'string', minLength: 1, maxLength, description });
/**
 * The Mojaloop `Name` type, as the switch connector's outbound API checks `from.displayName`
 * (api-snippets, sdk-scheme-adapter v2.1 components/schemas/Name.yaml): letters, digits and
 * underscore, space, period, comma, apostrophe and hyphen, not only spaces, 1 to 128 of them.
 * Checked here so that a name the switch would refuse is a 400 naming the field, not an outage.
 */
const MOJALOOP_NAME = "^(?!\\s*$)[\\w .,'-]{1,128}$";
const currency = (description: string): JsonSchema => ({ type: 'string', pattern: '^[A-Z]{3}$', description });
const money: JsonSchema = {
  type: 'object',
  required: ['amount', 'currency'],
  properties: { amount: { type: 'string', pattern: AMOUNT_PATTERN.source }, currency: currency('ISO 4217 code') },
};

/**
 * The channel's request bodies refuse fields they do not define (additionalProperties false): a
 * misspelt optional field (dateAndPlaceOfBirth, a reason on the accept) would otherwise be
 * dropped without a word and the payment sent without it. The callback schemas stay open:
 * payment providers add fields of their own.
 */
export const sendMoneyRequestSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['homeTransactionId', 'payeeId', 'payeeIdType', 'sendAmount', 'sendCurrency', 'receiveCurrency', 'transactionType', 'payer'],
  properties: {
    homeTransactionId: text(128, "The channel's own transaction id: the idempotency key of the payment"),
    payeeId: text(128, 'Identifier of the payee'),
    payeeIdType: { type: 'string', enum: [...PARTY_ID_TYPES], description: 'Identifier type of payeeId' },
    sendAmount: { type: 'string', pattern: AMOUNT_PATTERN.source, description: 'Decimal amount as text, at most the currency\'s minor-unit digits' },
    sendCurrency: currency('Currency of sendAmount: the institution\'s currency (X_CURRENCY)'),
    receiveCurrency: currency('Currency the payee receives; differs from sendCurrency when the switch converts'),
    transactionDescription: text(128, 'Free text, sent to the switch as the note (1 to 128 characters, as the switch requires)'),
    transactionType: { type: 'string', enum: ['TRANSFER'] },
    payer: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'payerId'],
      properties: {
        name: { type: 'string', pattern: MOJALOOP_NAME, description: "Payer's name, sent as from.displayName: letters, digits, spaces and . , ' - _ (the switch's Name type)" },
        payerId: text(128, "Payer's identifier, of the type SUPPORTED_ID_TYPE"),
        DateAndPlaceOfBirth: {
          type: 'object',
          additionalProperties: false,
          required: ['BirthDt', 'CityOfBirth', 'CtryOfBirth'],
          properties: {
            BirthDt: { type: 'string', pattern: '^[0-9]{2}-[0-9]{2}-[0-9]{4}$', description: 'Calendar date written DD-MM-YYYY' },
            PrvcOfBirth: text(35, 'Province of birth'),
            CityOfBirth: text(35, 'City of birth'),
            CtryOfBirth: { type: 'string', pattern: '^[A-Z]{2}$', description: 'ISO 3166 alpha-2 country of birth' },
          },
        },
      },
    },
  },
};

export const updateSendMoneySchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['acceptQuote'],
  properties: { acceptQuote: { type: 'boolean', description: 'true to proceed, false to abort' } },
};

/** The payment provider's shape (Airtel Money and providers like it). */
const providerCallbackSchema: JsonSchema = {
  type: 'object',
  required: ['transaction'],
  properties: {
    transaction: {
      type: 'object',
      required: ['id', 'status_code'],
      properties: {
        id: { type: 'string', minLength: 1, maxLength: 64, description: 'The transferId the debit was requested for' },
        status_code: { type: 'string', minLength: 1, maxLength: 32, description: 'TS: the debit succeeded; TA or TIP: not decided yet; anything else: it did not' },
      },
    },
  },
};

/** The reference core banking API's institution-neutral shape (docs/reference-core-banking-api.yaml, CollectionCallback). */
const referenceCallbackSchema: JsonSchema = {
  type: 'object',
  required: ['reference', 'status'],
  properties: {
    reference: { type: 'string', minLength: 1, maxLength: 64, description: 'The reference of the collection (the transferId)' },
    status: { type: 'string', minLength: 1, maxLength: 32, description: 'SUCCEEDED, FAILED or PENDING; any other value is confirmed with the institution' },
    reason: { type: 'string', maxLength: 64 },
    institutionReference: { type: 'string', maxLength: 128 },
  },
};

/** PUT /callback accepts either shape; a body that is both or neither is refused. */
export const callbackSchema: JsonSchema = { oneOf: [providerCallbackSchema, referenceCallbackSchema] };

const ids = {
  homeTransactionId: { type: 'string' },
  transferId: { type: 'string' },
};

export const paymentTermsSchema: JsonSchema = {
  type: 'object',
  required: ['homeTransactionId', 'transferId', 'state', 'amountType', 'sendAmount', 'transferAmount', 'payeeReceiveAmount', 'fees', 'debitAmount', 'expiration'],
  properties: {
    ...ids,
    state: {
      type: 'string',
      enum: [...OUTGOING_STATES],
      description: "QUOTED when first answered; a retried POST answers the payment's current state (COMPLETED, ABORTED, ...)",
    },
    amountType: { type: 'string', enum: ['SEND', 'RECEIVE'] },
    payeeName: { type: 'string', description: "The payee's name as the switch found it" },
    sendAmount: money,
    transferAmount: { ...money, description: 'What the payer side sends through the switch' },
    payeeReceiveAmount: { ...money, description: 'What the payee receives, in its currency' },
    fees: { ...money, description: "The payee institution's fee" },
    payeeFspCommission: money,
    debitAmount: { ...money, description: 'What the customer is debited' },
    conversion: {
      type: 'object',
      properties: {
        sourceAmount: money,
        targetAmount: money,
        charges: { type: 'array', items: { type: 'object', properties: { chargeType: { type: 'string' }, amount: money } } },
        expiration: { type: 'string' },
      },
    },
    expiration: { type: 'string', description: 'The quote expires at this time (ISO 8601)' },
  },
};

export const acceptResultSchema: JsonSchema = {
  type: 'object',
  required: ['homeTransactionId', 'transferId', 'state'],
  properties: {
    ...ids,
    state: { type: 'string' },
    collection: {
      type: 'object',
      description: "Mobile-operator flow: the institution's answer to the debit request",
      properties: { status: { type: 'string' }, institutionReference: { type: 'string' } },
    },
  },
};

export const paymentStatusSchema: JsonSchema = {
  type: 'object',
  properties: {
    ...ids,
    kind: { type: 'string', enum: ['SEND_MONEY', 'MERCHANT_PAYMENT'] },
    flow: { type: 'string', enum: ['bank', 'mobile-operator'] },
    state: { type: 'string' },
    amountType: { type: 'string' },
    sendAmount: money,
    receiveCurrency: { type: 'string' },
    debitAmount: { ...money, nullable: true },
    transferAmount: { ...money, nullable: true },
    payeeReceiveAmount: { ...money, nullable: true },
    fees: { ...money, nullable: true },
    quoteExpiration: { type: 'string', nullable: true },
    switchState: { type: 'string', nullable: true },
    callbackCode: { type: 'string', nullable: true },
    institutionReference: { type: 'string', nullable: true },
    error: {
      type: 'object',
      nullable: true,
      properties: { statusCode: { type: 'string' }, name: { type: 'string' }, message: { type: 'string' } },
    },
    needsAttention: { type: 'boolean', description: 'True when the payment needs manual action (e.g. a refund that keeps failing)' },
    attempts: { type: 'integer' },
    nextAttemptAt: { type: 'string', nullable: true },
    lastError: { type: 'string', nullable: true },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
  },
};

export const errorSchema: JsonSchema = {
  type: 'object',
  required: ['statusCode', 'message'],
  properties: {
    statusCode: { type: 'string', description: 'FSPIOP error code (4 digits)' },
    message: { type: 'string', maxLength: 128 },
  },
};
