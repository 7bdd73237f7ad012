import { describe, expect, it } from 'vitest';
import { ConnectorError, asInstitutionError } from '../domain/errors.js';
import { InstitutionHealthError } from '../ports/core-banking.js';
import { causeOf, runChecks } from './health.js';

describe('health causes', () => {
  it('reads the cause an adapter stated, also behind the institution boundary and a wrapping error', () => {
    expect(causeOf(new InstitutionHealthError('credentials-refused', 'HTTP 401'))).toBe('credentials-refused');
    expect(causeOf(asInstitutionError(new InstitutionHealthError('misconfigured', 'no float')))).toBe('misconfigured');
    const wrapped = new ConnectorError('InstitutionUnavailable', 'cannot connect', { cause: new InstitutionHealthError('unreachable', 'ECONNREFUSED') });
    expect(causeOf(asInstitutionError(wrapped))).toBe('unreachable');
  });

  it('falls back on the transport outcome: timeout, unavailable, else failed', () => {
    expect(causeOf(new ConnectorError('InstitutionTimeout'))).toBe('timeout');
    expect(causeOf(new ConnectorError('InstitutionUnavailable', 'HTTP 503'))).toBe('unavailable');
    expect(causeOf(new Error('database is closed'))).toBe('failed');
  });

  it('runs every check with its own time limit', async () => {
    const checks = await runChecks({
      timeoutMs: 50,
      checks: {
        store: async () => undefined,
        institution: () => Promise.reject(new InstitutionHealthError('misconfigured', 'payment type 9 unknown')),
        slow: () => new Promise<void>((resolve) => setTimeout(resolve, 500)),
      },
    });
    expect(checks).toEqual({ store: 'ok', institution: 'misconfigured', slow: 'timeout' });
  });
});
