import { describe, expect, it } from 'vitest';
import { rowMaker } from './row-maker.js';

describe('rowMaker', () => {
  it('makes the object better-sqlite3 would, keys in column order, a later duplicate winning', () => {
    const make = rowMaker(['b', 'a', 'b', 'it"s', '1']);
    const row = make(['first', 2, 'second', null, 'one']);
    expect(row).toStrictEqual({ '1': 'one', b: 'second', a: 2, 'it"s': null });
    expect(Object.keys(row)).toEqual(['1', 'b', 'a', 'it"s']);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
  });

  it('keeps a column named __proto__ as a property instead of a prototype', () => {
    const row = rowMaker(['__proto__', 'x'])([{ polluted: true }, 1]);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.keys(row)).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')).toEqual({ value: { polluted: true }, enumerable: true, writable: true, configurable: true });
    expect((row as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
