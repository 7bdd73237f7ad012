import { describe, expect, it } from 'vitest';
import { JsonNumber, JsonSyntaxError, parseDecimalJson, stringifyDecimalJson } from './decimal-json.js';
import { MalformedResponse, WireRecord } from './wire-reader.js';

describe('parseDecimalJson', () => {
  it('keeps every number as the exact text of the wire', () => {
    const parsed = WireRecord.of(parseDecimalJson('{"amount": 123456789012345678.99, "small": 0.1, "list": [1, -2.50e3]}'));
    expect(parsed.number('amount').text).toBe('123456789012345678.99');
    expect(parsed.number('small').text).toBe('0.1');
    expect(parseDecimalJson('[1, -2.50e3]')).toEqual([new JsonNumber('1'), new JsonNumber('-2.50e3')]);
  });

  it('reads strings, escapes, literals and nesting like JSON.parse', () => {
    const text = '{"a":"x\\"y\\u00e9","b":true,"c":null,"d":{"e":[false,"f"]}}';
    expect(parseDecimalJson(text)).toEqual(JSON.parse(text));
  });

  it('treats "__proto__" as an ordinary key', () => {
    const parsed = parseDecimalJson('{"__proto__": {"polluted": true}}');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(WireRecord.of(parsed).record('__proto__').boolean('polluted')).toBe(true);
  });

  it.each(['{"a":1,}', '{"a":01}', '[1 2]', '{"a":1} x', "{'a':1}", '{"a":NaN}', '"\u0001"', ''])('rejects %j', (text) => {
    expect(() => parseDecimalJson(text)).toThrow(JsonSyntaxError);
  });

  it('refuses nesting deeper than 64 levels', () => {
    expect(() => parseDecimalJson(`${'['.repeat(70)}${']'.repeat(70)}`)).toThrow(/nesting too deep/);
  });
});

describe('stringifyDecimalJson', () => {
  it('writes a JsonNumber verbatim and refuses plain numbers', () => {
    expect(stringifyDecimalJson({ amount: new JsonNumber('10.5'), skip: undefined, list: ['a', null] })).toBe('{"amount":10.5,"list":["a",null]}');
    expect(() => stringifyDecimalJson({ amount: 10.5 })).toThrow(TypeError);
    expect(() => new JsonNumber('1,000.00')).toThrow(RangeError);
  });
});

describe('WireRecord amounts', () => {
  it('reads a JSON number amount through money.ts, by value', () => {
    const record = WireRecord.of(parseDecimalJson('{"amount": 100.500000, "exp": 1E+2, "neg": -1, "fine": 0.001}'));
    expect(record.amountNumber('amount', 'ZMW')).toBe('100.5');
    expect(() => record.amountNumber('exp', 'ZMW')).toThrow(new MalformedResponse('body.exp is not an amount in ZMW'));
    expect(() => record.amountNumber('neg', 'ZMW')).toThrow(MalformedResponse);
    expect(() => record.amountNumber('fine', 'ZMW')).toThrow(MalformedResponse);
    expect(record.amountNumber('fine', 'KWD')).toBe('0.001');
  });

  it('names the field path, never the value, when a field is wrong', () => {
    const record = WireRecord.of(parseDecimalJson('{"data": {"first_name": 42}}'));
    expect(() => record.record('data').string('first_name')).toThrow(new MalformedResponse('body.data.first_name is not a string'));
  });
});
