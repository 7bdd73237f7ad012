import { createHash } from 'node:crypto';
import { ConnectorError } from './errors.js';

/**
 * A fingerprint of a request body, independent of key order, used to tell a retry (same id,
 * same body) from a modified request (same id, different body).
 */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/**
 * Deepest nesting canonicalJson accepts. Bodies are refused past 32 levels when parsed
 * (http/json-body.ts); this bound keeps the hash safe for any caller, so that a deep value can
 * never overflow the stack.
 */
export const MAX_HASH_DEPTH = 64;

export function canonicalJson(value: unknown): string {
  if (depthOf(value, MAX_HASH_DEPTH) > MAX_HASH_DEPTH) {
    throw new ConnectorError('ValidationFailed', `the body nests deeper than ${MAX_HASH_DEPTH} levels`);
  }
  return canonical(value);
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`;
}

/** Nesting depth of arrays and objects, found with an explicit stack; stops once past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object') continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > limit) return deepest;
    for (const item of Array.isArray(current) ? current : Object.values(current)) stack.push({ value: item, depth: here });
  }
  return deepest;
}
