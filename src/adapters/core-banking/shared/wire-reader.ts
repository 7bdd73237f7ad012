import { ConnectorError } from '../../../domain/errors.js';
import { canonicalAmount, type Money } from '../../../domain/money.js';
import { JsonNumber } from './decimal-json.js';

/**
 * Small hand-written guards for institution responses. Each read names the field path it
 * expected, never the value it found: values can be names, phone numbers or balances, which
 * stay out of error messages and logs.
 */

/** An institution answered 2xx with a body we cannot use. The HTTP layer turns it into InstitutionUnavailable. */
export class MalformedResponse extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedResponse';
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber);
}

/** Reads fields of one JSON object; `path` names it in messages (e.g. "data.transaction"). */
export class WireRecord {
  private constructor(
    readonly values: Readonly<Record<string, unknown>>,
    readonly path: string,
  ) {}

  static of(value: unknown, path = 'body'): WireRecord {
    if (!isRecord(value)) throw new MalformedResponse(`${path} is not an object`);
    return new WireRecord(value, path);
  }

  has(key: string): boolean {
    const value = this.values[key];
    return value !== undefined && value !== null;
  }

  string(key: string): string {
    const value = this.values[key];
    if (typeof value !== 'string') throw new MalformedResponse(`${this.at(key)} is not a string`);
    return value;
  }

  optionalString(key: string): string | undefined {
    return this.has(key) ? this.string(key) : undefined;
  }

  boolean(key: string): boolean {
    const value = this.values[key];
    if (typeof value !== 'boolean') throw new MalformedResponse(`${this.at(key)} is not a boolean`);
    return value;
  }

  optionalBoolean(key: string): boolean | undefined {
    return this.has(key) ? this.boolean(key) : undefined;
  }

  number(key: string): JsonNumber {
    const value = this.values[key];
    if (!(value instanceof JsonNumber)) throw new MalformedResponse(`${this.at(key)} is not a number`);
    return value;
  }

  /** A non-negative whole number written as a JSON number, returned as its digits (ids, enum values). */
  integerText(key: string): string {
    const text = this.number(key).text;
    if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new MalformedResponse(`${this.at(key)} is not a whole number`);
    return text;
  }

  optionalIntegerText(key: string): string | undefined {
    return this.has(key) ? this.integerText(key) : undefined;
  }

  record(key: string): WireRecord {
    return WireRecord.of(this.values[key], this.at(key));
  }

  optionalRecord(key: string): WireRecord | undefined {
    return this.has(key) ? this.record(key) : undefined;
  }

  array(key: string): WireRecord[] {
    const value = this.values[key];
    if (!Array.isArray(value)) throw new MalformedResponse(`${this.at(key)} is not an array`);
    return value.map((item, index) => WireRecord.of(item, `${this.at(key)}[${index}]`));
  }

  /** One of the listed words; anything else is reported as the field being malformed. */
  oneOf<const T extends string>(key: string, allowed: readonly T[]): T {
    const value = this.string(key);
    const match = allowed.find((candidate) => candidate === value);
    if (match === undefined) throw new MalformedResponse(`${this.at(key)} is not one of ${allowed.join(', ')}`);
    return match;
  }

  /** An amount written as a decimal string, in canonical form for its currency. */
  amountString(key: string, currency: string): string {
    return amountFromText(this.string(key), this.at(key), currency);
  }

  /** An amount written as a JSON number, read from its exact text (never through a float). */
  amountNumber(key: string, currency: string): string {
    return amountFromText(this.number(key).text, this.at(key), currency);
  }

  at(key: string): string {
    return `${this.path}.${key}`;
  }
}

/** Hands the wire's text to money.ts; exponent forms, signs and sub-minor-unit digits are malformed. */
export function amountFromText(text: string, path: string, currency: string): string {
  try {
    return canonicalAmount(text, currency);
  } catch {
    throw new MalformedResponse(`${path} is not an amount in ${currency}`);
  }
}

/**
 * The amount we send, in canonical form ("10.50" becomes "10.5"). An amount finer than the
 * currency's minor unit cannot be booked by any institution, so it is refused before sending.
 */
export function amountForWire(money: Money): string {
  try {
    return canonicalAmount(money.amount, money.currency);
  } catch (error) {
    throw new ConnectorError('ValidationFailed', `amount is not payable in ${money.currency}`, { cause: error });
  }
}

/**
 * `{ [key]: value }` when value is present, `{}` otherwise: spreads optional fields into an
 * object without writing `undefined` (exactOptionalPropertyTypes forbids it).
 */
export function optionalField<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  const result: { [P in K]?: V } = {};
  if (value !== undefined) result[key] = value;
  return result;
}
