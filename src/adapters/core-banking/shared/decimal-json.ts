/**
 * JSON with numbers kept as decimal text. Some institutions put amounts in JSON numbers
 * (Fineract answers `"amount": 100.500000`, Airtel expects `"amount": 10.5`). JSON.parse would
 * turn them into binary floats, which cannot hold every amount the switch allows (18 integer
 * digits), so institution bodies are parsed here instead: every number becomes a JsonNumber
 * holding the exact characters of the wire, and money.ts turns that text into an amount.
 * Writing works the other way: a JsonNumber is written verbatim, so an amount string becomes a
 * JSON number without ever being a JS number.
 */

/** A JSON number token, exactly as written on the wire. */
export class JsonNumber {
  readonly text: string;

  constructor(text: string) {
    if (!NUMBER_TOKEN.test(text)) throw new RangeError(`not a JSON number: "${text.slice(0, 40)}"`);
    this.text = text;
  }

  toString(): string {
    return this.text;
  }
}

const NUMBER_TOKEN = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const NUMBER_PREFIX = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const STRING_PREFIX = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WHITESPACE = /[ \t\n\r]*/y;
/** Deep enough for every institution body we read, shallow enough that a hostile body cannot blow the stack. */
const MAX_DEPTH = 64;

export class JsonSyntaxError extends Error {
  constructor(message: string, readonly position: number) {
    super(`${message} at position ${position}`);
    this.name = 'JsonSyntaxError';
  }
}

/** Parses JSON text; numbers come back as JsonNumber, everything else as JSON.parse would give it. */
export function parseDecimalJson(text: string): unknown {
  const parser = new Parser(text);
  const value = parser.value(0);
  parser.skipWhitespace();
  if (parser.position !== text.length) throw new JsonSyntaxError('unexpected trailing characters', parser.position);
  return value;
}

class Parser {
  position = 0;

  constructor(private readonly text: string) {}

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.position;
    WHITESPACE.exec(this.text);
    this.position = WHITESPACE.lastIndex;
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) throw new JsonSyntaxError('nesting too deep', this.position);
    this.skipWhitespace();
    const char = this.text[this.position];
    if (char === '{') return this.object(depth);
    if (char === '[') return this.array(depth);
    if (char === '"') return this.string();
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) return this.number();
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.position)) {
        this.position += word.length;
        return value;
      }
    }
    throw new JsonSyntaxError('unexpected character', this.position);
  }

  private object(depth: number): Record<string, unknown> {
    // A null prototype, so that a key such as "__proto__" is data and never a prototype change.
    const result: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    this.position += 1;
    this.skipWhitespace();
    if (this.text[this.position] === '}') {
      this.position += 1;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.position] !== '"') throw new JsonSyntaxError('expected a key', this.position);
      const key = this.string();
      this.expect(':');
      result[key] = this.value(depth + 1);
      this.skipWhitespace();
      if (this.text[this.position] === '}') {
        this.position += 1;
        return result;
      }
      this.expect(',');
    }
  }

  private array(depth: number): unknown[] {
    const result: unknown[] = [];
    this.position += 1;
    this.skipWhitespace();
    if (this.text[this.position] === ']') {
      this.position += 1;
      return result;
    }
    for (;;) {
      result.push(this.value(depth + 1));
      this.skipWhitespace();
      if (this.text[this.position] === ']') {
        this.position += 1;
        return result;
      }
      this.expect(',');
    }
  }

  private string(): string {
    STRING_PREFIX.lastIndex = this.position;
    const match = STRING_PREFIX.exec(this.text);
    if (match === null) throw new JsonSyntaxError('invalid string', this.position);
    this.position = STRING_PREFIX.lastIndex;
    // The token was checked above, so JSON.parse only decodes its escapes.
    return JSON.parse(match[0]) as string;
  }

  private number(): JsonNumber {
    NUMBER_PREFIX.lastIndex = this.position;
    const match = NUMBER_PREFIX.exec(this.text);
    if (match === null) throw new JsonSyntaxError('invalid number', this.position);
    this.position = NUMBER_PREFIX.lastIndex;
    return new JsonNumber(match[0]);
  }

  private expect(char: string): void {
    this.skipWhitespace();
    if (this.text[this.position] !== char) throw new JsonSyntaxError(`expected "${char}"`, this.position);
    this.position += 1;
  }
}

const LITERALS: ReadonlyArray<readonly [string, unknown]> = [
  ['true', true],
  ['false', false],
  ['null', null],
];

/**
 * Writes JSON; a JsonNumber is written as its text. Plain JS numbers are refused so that an
 * amount can never reach the wire through a float by accident: counts and ids that really are
 * small integers are passed as JsonNumber too.
 */
export function stringifyDecimalJson(value: unknown): string {
  if (value instanceof JsonNumber) return value.text;
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') throw new TypeError('stringifyDecimalJson takes JsonNumber, not number');
  if (Array.isArray(value)) return `[${value.map((item) => stringifyDecimalJson(item === undefined ? null : item)).join(',')}]`;
  if (typeof value === 'object') {
    const parts: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${stringifyDecimalJson(item)}`);
    }
    return `{${parts.join(',')}}`;
  }
  throw new TypeError(`cannot write ${typeof value} as JSON`);
}
