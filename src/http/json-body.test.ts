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

  it('counts exactly only when the text holds more openings than the limit', () => {
    // 40 brackets inside a string: more openings than 32, but the body nests 1 level.
    expect(parseJsonBody(`{"a":"${'['.repeat(40)}"}`)).toEqual({ a: '['.repeat(40) });
    let nested: unknown = [];
    for (let level = 1; level < 32; level += 1) nested = [nested];
    expect(parseJsonBody(`${'['.repeat(32)}${']'.repeat(32)}`)).toStrictEqual(nested);
  });

  it('refuses bad text however it is written, and walks only text that could hold some', () => {
    // Raw in the text: DEL and C1 are allowed raw in JSON strings, a lone surrogate too.
    expect(refusal('{"a":"x\u007f"}')).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/a has a control character U+007F at character 2' });
    expect(refusal(`{"a":["ok","\u0085"]}`)).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/a/1 has a control character U+0085 at character 1' });
    expect(refusal(`{"k":"\udc00"}`)).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/k has a lone surrogate U+DC00 at character 1' });
    // Written as escapes: only a backslash in the text shows them.
    expect(refusal('{"a":"b\\u0007"}')).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/a has a control character U+0007 at character 2' });
    expect(refusal('{"\\u005f_proto__":1}')).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/__proto__ is a reserved key' });
    // Spelt out: a reserved key is refused, the same word as a value is not.
    expect(refusal('{"x":{"constructor":1}}')).toEqual({ name: 'ValidationFailed', message: 'Generic validation error: body/x/constructor is a reserved key' });
    expect(parseJsonBody('{"note":"constructor prototype __proto__"}')).toEqual({ note: 'constructor prototype __proto__' });
    // Whitespace between tokens, an escaped quote and a surrogate pair are all accepted.
    expect(parseJsonBody('{\n\t"a": "b \\"c\\"",\r\n "e": "\u{1F600}"\n}')).toEqual({ a: 'b "c"', e: '\u{1F600}' });
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

  it('orders keys by UTF-16 code unit at every level, and its text and digest are exact', () => {
    // U+FF21 sorts after U+1F600 by code unit (0xFF21 > 0xD83D), before it by code point.
    const body = { '\uff21': {}, '\u{1F600}': 's', é: 1e21, b: { d: [], c: '"q"', gone: undefined }, a: -0.5, Z: [1, undefined, 'x', { a: true }] };
    const text = '{"Z":[1,null,"x",{"a":true}],"a":-0.5,"b":{"c":"\\"q\\"","d":[]},"é":1e+21,"\u{1F600}":"s","\uff21":{}}';
    expect(canonicalJson(body)).toBe(text);
    // The digest of that text, worked out apart from this code (Python's hashlib over its UTF-8).
    expect(requestHash(body)).toBe('ae4f0ec22d7f302fab424656b7dec6e870a9916e49279b7a51af478c04d9718f');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson('plain')).toBe('"plain"');
  });

  it('refuses a value nested past 64 levels instead of overflowing the stack', () => {
    let deep: unknown = [];
    for (let level = 0; level < 50_000; level += 1) deep = [deep];
    expect(() => requestHash(deep)).toThrow(/nests deeper than 64 levels/);
    let ok: unknown = 'x';
    for (let level = 0; level < 64; level += 1) ok = { k: ok };
    expect(canonicalJson(ok)).toBe(`${'{"k":'.repeat(64)}"x"${'}'.repeat(64)}`);
    expect(() => canonicalJson({ k: ok })).toThrow(/nests deeper than 64 levels/);
  });
});
