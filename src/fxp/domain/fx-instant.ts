import { ConnectorError } from '../../domain/errors.js';

/**
 * The instants stored as ISO 8601 text in UTC sort as text only while their year has four
 * digits: past 9999, `toISOString` writes "+010000-...", which sorts before "2026-..." (the
 * recovery worker would take it as expired on every pass). The switch's DateTime pattern allows
 * any year from 1000 and an offset up to 19:59, so "9999-12-31T23:59:59.999-19:59" passes it and
 * lands in year 10000 in UTC.
 */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** A caller's date and time (ISO 8601) in epoch milliseconds, within the years 0001-9999 in UTC; ValidationFailed (3100) otherwise. */
export function readCallerInstant(value: unknown, field: string): number {
  const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) throw new ConnectorError('ValidationFailed', `${field} is not a date and time (ISO 8601)`);
  if (at < EARLIEST_MS || at > LATEST_MS) throw new ConnectorError('ValidationFailed', `${field} ${String(value)} is outside the years 0001 to 9999 in UTC`);
  return at;
}
