import { describe, expect, it } from 'vitest';
import { ConnectorError } from '../../domain/errors.js';
import { readCallerInstant } from './fx-instant.js';

function refusal(value: unknown): string {
  try {
    readCallerInstant(value, 'expiration');
  } catch (error) {
    if (error instanceof ConnectorError) return `${error.errorName}: ${error.message}`;
    throw error;
  }
  return 'accepted';
}

describe('readCallerInstant', () => {
  it('reads a date and time with its offset, up to the last millisecond of 9999 and from the first of 0001 in UTC', () => {
    expect(readCallerInstant('2026-11-23T10:00:00.000+02:00', 'expiration')).toBe(Date.parse('2026-11-23T08:00:00.000Z'));
    expect(new Date(readCallerInstant('9999-12-31T23:59:59.999Z', 'expiration')).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(new Date(readCallerInstant('9999-12-31T23:59:59.999+19:59', 'expiration')).toISOString()).toBe('9999-12-31T04:00:59.999Z');
    expect(new Date(readCallerInstant('0001-01-01T00:00:00.000Z', 'expiration')).toISOString()).toBe('0001-01-01T00:00:00.000Z');
  });

  it('refuses an instant past 9999 or before 0001 in UTC, whose ISO text would not sort, and what is not a date and time', () => {
    expect(refusal('9999-12-31T23:59:59.999-19:59')).toBe('ValidationFailed: Generic validation error: expiration 9999-12-31T23:59:59.999-19:59 is outside the years 0001 to 9999 in UTC');
    expect(refusal('9999-12-31T23:59:59.999-00:01')).toBe('ValidationFailed: Generic validation error: expiration 9999-12-31T23:59:59.999-00:01 is outside the years 0001 to 9999 in UTC');
    expect(refusal('0001-01-01T00:00:00.000+00:01')).toBe('ValidationFailed: Generic validation error: expiration 0001-01-01T00:00:00.000+00:01 is outside the years 0001 to 9999 in UTC');
    expect(refusal('+010000-01-01T00:00:00.000Z')).toBe('ValidationFailed: Generic validation error: expiration is not a date and time (ISO 8601)');
    expect(refusal('2026-11-23')).toBe('ValidationFailed: Generic validation error: expiration is not a date and time (ISO 8601)');
    expect(refusal('2026-13-01T00:00:00.000Z')).toBe('ValidationFailed: Generic validation error: expiration is not a date and time (ISO 8601)');
    expect(refusal(1764000000000)).toBe('ValidationFailed: Generic validation error: expiration is not a date and time (ISO 8601)');
  });
});
