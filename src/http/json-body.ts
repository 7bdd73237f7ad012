import { ConnectorError } from '../domain/errors.js';
import { textProblem } from '../domain/text.js';

/**
 * The one JSON body parser of both servers. Before anything walks a body it is checked, in
 * one pass each and without recursion: nesting at most MAX_JSON_DEPTH (the deepest Mojaloop
 * body nests about 8), valid JSON, no key that could reach an object's prototype, and no text
 * (key or value) with a control character or a lone surrogate. A refusal is a 400 in the
 * error contract, naming where the problem is.
 */

export const MAX_JSON_DEPTH = 32;

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new ConnectorError('MalformedSyntax', 'the JSON body is empty');
  if (!fewOpenings(text, MAX_JSON_DEPTH) && nestingExceeds(text, MAX_JSON_DEPTH)) throw new ConnectorError('ValidationFailed', `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ConnectorError('MalformedSyntax', 'the body is not valid JSON');
  }
  const problem = plainText(text) ? undefined : findTextProblem(body);
  if (problem !== undefined) throw new ConnectorError('ValidationFailed', `body${problem.path} ${problem.problem}`);
  return body;
}

/**
 * Whether arrays and objects in JSON text nest deeper than `limit`, counting brackets outside
 * strings. Text that is not JSON may be miscounted; JSON.parse refuses it afterwards.
 */
export function nestingExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === BACKSLASH) index += 1;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) {
      inString = true;
    } else if (char === OPEN_ARRAY || char === OPEN_OBJECT) {
      depth += 1;
      if (depth > limit) return true;
    } else if (char === CLOSE_ARRAY || char === CLOSE_OBJECT) {
      depth -= 1;
    }
  }
  return false;
}

/**
 * Whether the text holds at most `limit` opening brackets, in strings or not: then nothing in it
 * can nest deeper than `limit`, and the exact count (a pass over every character) is not needed.
 * Typical bodies hold a handful; indexOf finds them far faster than a loop over the characters.
 */
function fewOpenings(text: string, limit: number): boolean {
  let count = 0;
  for (const open of OPENINGS) {
    for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, at + 1)) {
      count += 1;
      if (count > limit) return false;
    }
  }
  return true;
}

const OPENINGS = ['{', '['];
const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Keys that reach an object's prototype when a body is merged into another object. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Characters that can make a parsed key or string value break the rules. Without a backslash,
 * every key and string value is a piece of the text exactly as written, and JSON allows no raw
 * C0 character in a string (only \t, \n and \r between tokens). Surrogates are matched paired or
 * not (a test without the u flag is quicker): a pair only means the body is walked.
 */
const NOT_PLAIN = /[\\\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ud800-\udfff]/;
const RESERVED_KEYS = [...PROTOTYPE_KEYS];

/**
 * Whether the body parsed from `text` is known to pass findTextProblem without walking it: text
 * with none of those characters and no reserved key spelt out holds no bad text and no reserved key.
 */
function plainText(text: string): boolean {
  return !NOT_PLAIN.test(text) && !RESERVED_KEYS.some((key) => text.includes(key));
}

/**
 * The first key or string value that breaks the text rules, with its JSON-pointer path, walking
 * the parsed body with an explicit stack (never the call stack).
 */
export function findTextProblem(body: unknown): { path: string; problem: string } | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: body, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem !== undefined) return { path, problem };
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index -= 1) stack.push({ value: value[index], path: `${path}/${index}` });
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value);
      for (let index = entries.length - 1; index >= 0; index -= 1) {
        const [key, item] = entries[index] as [string, unknown];
        const keyProblem = PROTOTYPE_KEYS.has(key) ? 'is a reserved key' : textProblem(key);
        if (keyProblem !== undefined) return { path: `${path}/${pointerToken(key)}`, problem: keyProblem };
        stack.push({ value: item, path: `${path}/${pointerToken(key)}` });
      }
    }
  }
  return undefined;
}

/** A key as a JSON-pointer token, without forbidden characters and shortened, for a message. */
function pointerToken(key: string): string {
  const token = key.replace(/~/g, '~0').replace(/\//g, '~1').replace(/[\p{Cc}\p{Cs}]/gu, '?');
  return token.length <= 40 ? token : `${token.slice(0, 37)}...`;
}
