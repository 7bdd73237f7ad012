import { type ErrorCategory, isConnectorError, ERROR_CATALOGUE } from '../domain/errors.js';

/** The one table from error category to HTTP status. */
const STATUS_BY_CATEGORY: Record<ErrorCategory, number> = {
  invalid: 400,
  unauthorized: 401,
  'not-found': 404,
  'client-timeout': 408,
  conflict: 409,
  'too-large': 413,
  'headers-too-large': 431,
  rejected: 422,
  internal: 500,
  unavailable: 503,
  timeout: 504,
};

/** The body the switch connector reads on every non-2xx: a 4-digit FSPIOP code and 1-128 chars. */
export interface ErrorBody {
  readonly statusCode: string;
  readonly message: string;
}

export interface MappedError {
  readonly status: number;
  readonly body: ErrorBody;
  /** True for programmer errors and broken invariants, which are logged as fatal. */
  readonly unexpected: boolean;
}

const MESSAGE_MAX_LENGTH = 128;

export interface MapOptions {
  /**
   * True where the caller is outside the institution (the switch): an institution's error is
   * answered with its catalogue text only. The institution's own channels get the detail.
   */
  readonly hideInstitutionDetail?: boolean;
}

export function mapError(error: unknown, options: MapOptions = {}): MappedError {
  if (isConnectorError(error)) {
    const message = options.hideInstitutionDetail === true ? error.publicMessage : error.message;
    return {
      status: STATUS_BY_CATEGORY[error.category],
      body: { statusCode: error.code, message: clip(message) },
      unexpected: error.category === 'internal',
    };
  }
  const internal = ERROR_CATALOGUE.Internal;
  return { status: 500, body: { statusCode: internal.code, message: internal.text }, unexpected: true };
}

function clip(message: string): string {
  const text = message === '' ? 'error' : message;
  return text.length <= MESSAGE_MAX_LENGTH ? text : `${text.slice(0, MESSAGE_MAX_LENGTH - 3)}...`;
}
