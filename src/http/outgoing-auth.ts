import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ConnectorError } from '../domain/errors.js';

/**
 * Compares a presented secret with the expected one in constant time: both are hashed first,
 * so neither the content nor the length of the secret shows in the timing.
 */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  const a = createHash('sha256').update(presented ?? '').digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && presented !== undefined;
}

/** An onRequest hook that refuses requests without the secret in `header` (checked before the body is read). */
export function requireSecret(header: string, expected: string): (request: FastifyRequest) => Promise<void> {
  const name = header.toLowerCase();
  return async (request) => {
    const value = request.headers[name];
    const presented = typeof value === 'string' ? value : undefined;
    if (!secretMatches(presented, expected)) throw new ConnectorError('Unauthorized', `missing or wrong ${name} header`);
  };
}
