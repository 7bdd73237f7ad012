/**
 * The closed catalogue of errors the connector answers with. Each entry has a stable name,
 * an FSPIOP error code (what the switch connector reads) and a category (what http/ maps to
 * an HTTP status). Nothing else in the code chooses a status or a code.
 */

export type ErrorCategory =
  | 'invalid' // the request itself is wrong: 400
  | 'unauthorized' // missing or wrong credentials: 401
  | 'not-found' // an id we do not know: 404
  | 'client-timeout' // the client did not send its whole request in time: 408
  | 'conflict' // the id is known but the request contradicts what was recorded: 409
  | 'too-large' // the body is over the size limit: 413
  | 'headers-too-large' // the request line and headers are over the size limit: 431
  | 'rejected' // a business decision: 422
  | 'internal' // a programmer error or broken invariant: 500
  | 'unavailable' // a dependency is down; the same request may succeed later: 503
  | 'timeout'; // a dependency did not answer in time; outcome may be unknown: 504

export const ERROR_CATALOGUE = {
  MalformedSyntax: { code: '3101', category: 'invalid', text: 'Malformed syntax' },
  ValidationFailed: { code: '3100', category: 'invalid', text: 'Generic validation error' },
  MissingElement: { code: '3102', category: 'invalid', text: 'Missing mandatory element' },
  UnknownRoute: { code: '3002', category: 'not-found', text: 'Unknown URI' },
  TooLargePayload: { code: '3104', category: 'too-large', text: 'Too large payload' },
  HeadersTooLarge: { code: '3104', category: 'headers-too-large', text: 'Request headers too large' },
  ClientTimeout: { code: '3000', category: 'client-timeout', text: 'Request not received in time' },
  ShuttingDown: { code: '2003', category: 'unavailable', text: 'Service shutting down; retry on another instance' },
  UploadInProgress: { code: '2003', category: 'unavailable', text: 'Service currently unavailable' },
  StoreUnavailable: { code: '2003', category: 'unavailable', text: 'Service currently unavailable: the database cannot be reached; retry later' },
  UnsupportedIdType: { code: '3100', category: 'rejected', text: 'Unsupported identifier type' },
  UnsupportedCurrency: { code: '5106', category: 'rejected', text: 'Unsupported currency' },
  ModifiedRequest: { code: '3106', category: 'conflict', text: 'Modified request' },
  PartyNotFound: { code: '3204', category: 'not-found', text: 'Party not found' },
  QuoteNotFound: { code: '3205', category: 'not-found', text: 'Quote not found' },
  TransferNotFound: { code: '3208', category: 'not-found', text: 'Transfer not found' },
  QuoteExpired: { code: '3302', category: 'rejected', text: 'Quote expired' },
  InvalidQuote: { code: '5101', category: 'rejected', text: 'Transfer inconsistent with its quote' },
  PayeeInsufficientLiquidity: { code: '5001', category: 'rejected', text: 'Payee FSP insufficient liquidity' },
  PayeeBlocked: { code: '5400', category: 'rejected', text: 'Payee account blocked' },
  PayeeBarred: { code: '5401', category: 'rejected', text: 'Payee account barred' },
  PayeeClosed: { code: '5402', category: 'rejected', text: 'Payee account closed' },
  PayeeRejected: { code: '5100', category: 'rejected', text: 'Payee rejected the payment' },
  PayerInformationMissing: { code: '3102', category: 'invalid', text: 'Payer information missing' },
  TransferNotCompleted: { code: '5104', category: 'rejected', text: 'Transfer not completed' },
  TransferStateConflict: { code: '3106', category: 'conflict', text: 'Transfer already finished differently' },
  // A second transferId for a quote (one transaction) whose transfer holds or moved money: the
  // transaction was already processed with other parameters (FSPIOP's "modified request").
  QuoteAlreadyUsed: { code: '3106', category: 'conflict', text: 'Quote already used by another transfer' },
  DoubtfulNotification: { code: '3100', category: 'invalid', text: 'Notification not applied' },
  InvalidReturnedQuote: { code: '5101', category: 'rejected', text: 'Invalid quote returned by the switch' },
  QuoteNotAccepted: { code: '5101', category: 'rejected', text: 'Quote not accepted' },
  ConversionRejected: { code: '5101', category: 'rejected', text: 'Conversion terms rejected' },
  PayerRejected: { code: '4100', category: 'rejected', text: 'Payer rejected the payment' },
  PayerInsufficientFunds: { code: '4001', category: 'rejected', text: 'Payer insufficient funds' },
  PaymentStateConflict: { code: '3106', category: 'conflict', text: 'Payment is in another state' },
  OperatorActionRefused: { code: '3106', category: 'conflict', text: 'Operator action refused' },
  IdentifierOptOutPending: { code: '3106', category: 'conflict', text: 'Opt-out awaiting the platform' },
  IdentifierJobNotFound: { code: '3200', category: 'not-found', text: 'Identifier job not found' },
  // Declines the switch connector relays from the hub or the payee FSP (src/domain/switch-declines.ts).
  PayeeFspNotFound: { code: '3203', category: 'not-found', text: 'Payee FSP not found' },
  SwitchRefusedRequest: { code: '3100', category: 'invalid', text: 'The scheme refused the request as invalid' },
  TransferExpired: { code: '3303', category: 'rejected', text: 'Transfer expired' },
  PayerFspInsufficientLiquidity: { code: '4001', category: 'rejected', text: 'Payer FSP insufficient liquidity' },
  PayerLimitExceeded: { code: '4200', category: 'rejected', text: 'Payer limit exceeded' },
  PayerPermissionDenied: { code: '4300', category: 'rejected', text: 'Payer not permitted' },
  PayerBlocked: { code: '4400', category: 'rejected', text: 'Payer blocked' },
  PayeeRejectedQuote: { code: '5101', category: 'rejected', text: 'Payee rejected the quote' },
  UnsupportedTransactionType: { code: '5102', category: 'rejected', text: 'Unsupported transaction type' },
  PayeeLimitExceeded: { code: '5200', category: 'rejected', text: 'Payee limit exceeded' },
  PayeePermissionDenied: { code: '5300', category: 'rejected', text: 'Payee not permitted' },
  // FX provider mode (src/fxp/).
  FxPairNotSupported: { code: '5106', category: 'rejected', text: 'Currency pair not supported' },
  FxAmountOutOfLimits: { code: '5200', category: 'rejected', text: 'Amount outside the conversion limits' },
  FxRatesStale: { code: '5100', category: 'rejected', text: 'Exchange rates unavailable' },
  FxInsufficientLiquidity: { code: '5001', category: 'rejected', text: 'FXP insufficient liquidity' },
  FxQuoteNotFound: { code: '3205', category: 'not-found', text: 'Conversion quote not found' },
  FxConversionNotFound: { code: '3208', category: 'not-found', text: 'Conversion not found' },
  Unauthorized: { code: '3000', category: 'unauthorized', text: 'Unauthorized' },
  SdkClientError: { code: '2001', category: 'unavailable', text: 'Switch connector request failed' },
  SdkTimeout: { code: '2004', category: 'timeout', text: 'Switch connector timed out' },
  InstitutionUnavailable: { code: '2003', category: 'unavailable', text: 'Institution unavailable' },
  InstitutionTimeout: { code: '2004', category: 'timeout', text: 'Institution timed out' },
  NotSupported: { code: '2001', category: 'rejected', text: 'Operation not supported by this institution' },
  Internal: { code: '2001', category: 'internal', text: 'Internal server error' },
} as const satisfies Record<string, { code: string; category: ErrorCategory; text: string }>;

export type ErrorName = keyof typeof ERROR_CATALOGUE;

/** Reads a stored error name back into the catalogue's type. */
export function isErrorName(name: string): name is ErrorName {
  return Object.hasOwn(ERROR_CATALOGUE, name);
}

/**
 * The one error type the connector throws on purpose. `message` carries the detail, for logs and
 * support staff; `publicMessage` is what callers (the switch, the customer channel) are told.
 */
export class ConnectorError extends Error {
  readonly errorName: ErrorName;
  readonly code: string;
  readonly category: ErrorCategory;
  /** Raised by a core-banking adapter: its detail (the institution's codes, account references) stays inside. */
  readonly fromInstitution: boolean;

  constructor(errorName: ErrorName, detail?: string, options?: { cause?: unknown; fromInstitution?: boolean }) {
    const entry = ERROR_CATALOGUE[errorName];
    super(detail === undefined ? entry.text : `${entry.text}: ${detail}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.errorName = errorName;
    this.code = entry.code;
    this.category = entry.category;
    this.fromInstitution = options?.fromInstitution ?? false;
  }

  /** The catalogue text alone for an institution's error, the whole message for the connector's own. */
  get publicMessage(): string {
    return this.fromInstitution ? ERROR_CATALOGUE[this.errorName].text : this.message;
  }
}

/**
 * Marks an error thrown by a core-banking adapter as the institution's: same name, code and
 * message, but answered to callers with the catalogue text only. Anything else passes through.
 */
export function asInstitutionError(error: unknown): unknown {
  if (!(error instanceof ConnectorError) || error.fromInstitution) return error;
  const marked = new ConnectorError(error.errorName, undefined, { cause: error, fromInstitution: true });
  marked.message = error.message;
  return marked;
}

/**
 * The error an answer was given with, kept on a record by name and message, to answer a retry
 * the same way. `what` names the record in the assertion that it has one.
 */
export function storedError(stored: { readonly errorName: string | null; readonly errorMessage: string | null }, what: string): ConnectorError {
  const name = stored.errorName;
  assert(name !== null && isErrorName(name), `${what} without a known error`);
  const error = new ConnectorError(name);
  if (stored.errorMessage !== null) error.message = stored.errorMessage;
  return error;
}

/** The catalogue code of an error for log lines; 'exception' for anything else. */
export function errorCodeOf(error: unknown): string {
  return isConnectorError(error) ? error.code : 'exception';
}

export function isConnectorError(error: unknown, name?: ErrorName): error is ConnectorError {
  return error instanceof ConnectorError && (name === undefined || error.errorName === name);
}

/** A broken invariant: a programmer error, never a business outcome. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionFailed(message);
}

export class AssertionFailed extends Error {
  constructor(message: string) {
    super(`assertion failed: ${message}`);
    this.name = 'AssertionFailed';
  }
}
