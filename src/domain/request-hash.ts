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
  return canonical(value, 0);
}

/**
 * `value` as JSON with every object's keys in code-unit order and undefined members left out;
 * `depth` is the number of arrays and objects around it. One pass, building one string: this
 * runs for every request the switch connector sends.
 */
function canonical(value: unknown, depth: number): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Recursion stays within MAX_HASH_DEPTH + 1 frames, far below the stack's limit.
  if (depth === MAX_HASH_DEPTH) throw new ConnectorError('ValidationFailed', `the body nests deeper than ${MAX_HASH_DEPTH} levels`);
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index += 1) {
      if (index > 0) text += ',';
      text += canonical(value[index], depth + 1);
    }
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  // sort() with no comparator orders strings by UTF-16 code units, as `<` does.
  const keys = Object.keys(record).sort();
  let text = '{';
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (text.length > 1) text += ',';
    text += `${JSON.stringify(key)}:${canonical(item, depth + 1)}`;
  }
  return `${text}}`;
}
