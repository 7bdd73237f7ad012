import { describe, expect, it } from 'vitest';
import { ConnectorError } from '../domain/errors.js';
import { canonicalJson, requestHash } from '../domain/request-hash.js';
import { findTextProblem, nestingExceeds, parseJsonBody } from './json-body.js';

function refusal(text: string): { name: string; message: string } {
  try {
    parseJsonBody(text);
  } catch (error) {
    if (error instanceof ConnectorError) return { name: error.errorName, message: error.message };
  }
  throw new Error('accepted');
}

describe('parseJsonBody', () => {
  it('parses a plain body', () => {
    expect(parseJsonBody('{"a":[1,"x",{"b":null}]}')).toEqual({ a: [1, 'x', { b: null }] });
  });

  it('counts nesting outside strings only, escapes included', () => {
    expect(nestingExceeds('[[[]]]', 3)).toBe(false);
    expect(nestingExceeds('[[[[]]]]', 3)).toBe(true);
    expect(nestingExceeds('{"a":"[[[[[[\\"[[["}', 1)).toBe(false);
    expect(nestingExceeds('{"a":{"b":{"c":{}}}}', 3)).toBe(true);
  });

  it('refuses 33 levels and accepts 32', () => {
    expect(parseJsonBody(`${'['.repeat(32)}${']'.repeat(32)}`)).toBeInstanceOf(Array);
    expect(refusal(`${'['.repeat(33)}${']'.repeat(33)}`)).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: the JSON body nests deeper than 32 levels' });
    expect(refusal(`${'['.repeat(100_000)}`)).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: the JSON body nests deeper than 32 levels' });
  });

  it('names the first bad text by its JSON pointer, keys included', () => {
    expect(findTextProblem({ a: ['ok', 'b\u0007'] })).toEqual({ path: '/a/1', problem: 'has a control character U+0007 at character 2' });
    expect(findTextProblem({ 'k/e~y': 'x\u0085' })).toEqual({ path: '/k~1e~0y', problem: 'has a control character U+0085 at character 2' });
    expect(findTextProblem({ ['bad\u0000key']: 'fine' })).toEqual({ path: '/bad?key', problem: 'has a control character U+0000 at character 4' });
    expect(findTextProblem(['\udc00x'])).toEqual({ path: '/0', problem: 'has a lone surrogate U+DC00 at character 1' });
    expect(findTextProblem({ emoji: '\u{1F600}', tab: 'no tabs here', n: 5, t: true })).toBeUndefined();
    expect(findTextProblem({ constructor: { prototype: {} } })).toEqual({ path: '/constructor', problem: 'is a reserved key' });
  });

  it('tells empty and broken JSON apart', () => {
    expect(refusal('  ')).toEqual({ name: 'MalformedSyntax', message: 'Malformed syntax: the JSON body is empty' });
    expect(refusal('{"a":')).toEqual({ name: 'MalformedSyntax', message: 'Malformed syntax: the body is not valid JSON' });
  });
});

describe('requestHash', () => {
  it('is independent of key order', () => {
    expect(requestHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(requestHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(canonicalJson({ b: 1, a: undefined, c: 'x' })).toBe('{"b":1,"c":"x"}');
  });

  it('refuses a value nested past 64 levels instead of overflowing the stack', () => {
    let deep: unknown = [];
    for (let level = 0; level < 50_000; level += 1) deep = [deep];
    expect(() => requestHash(deep)).toThrow(/nests deeper than 64 levels/);
    let ok: unknown = 'x';
    for (let level = 0; level < 64; level += 1) ok = { k: ok };
    expect(requestHash(ok)).toMatch(/^[0-9a-f]{64}$/);
  });
});
