import pg from 'pg';
import { rowMaker } from './row-maker.js';

/**
 * Statements sent through `pg` whose rows are made the way sqlite-rows.ts makes SQLite's.
 *
 * For every result, `pg` looks up a parser for each column and builds an empty row object
 * property by property (`Result.addFields`); it then copies that object for each row. For the
 * 29-column incoming transfer returned by most writes of the payee lifecycle this was about 5% of
 * the connector's CPU. Here the column names, types and parsers of a statement's result are kept
 * the first time a client sees them, and each row is made by an object literal compiled once for
 * those names. The result is the same: the same row objects (same keys in the same order, the
 * same parsed values), the same command and row count. Passing the statement as text with the
 * name set afterwards also spares `pg` a property-by-property copy of a query config.
 *
 * The parsers are those of the client's own types, read once per statement and result shape. A
 * result of another shape (a column added since) is looked up again. The connector never changes
 * a type parser while it runs; a result in binary format, or rows asked for as arrays, go through
 * `pg`'s own code.
 *
 * `pg` also asks the server to describe a named statement's result every time it runs it. The
 * answer cannot change while the statement exists (see describedByConnection), so a connection
 * asks once per named statement and keeps the answer; later runs send only their values.
 */

/** What `pg`'s query and result hold that its type declarations do not show. */
interface QueryInternals {
  name?: string;
  readonly text: string;
  readonly callback?: unknown;
  readonly _rowMode?: string;
  _accumulateRows: unknown;
  _canceledDueToError: unknown;
  readonly _result: ResultInternals;
  _checkForMultirow(): void;
  listeners(event: string): unknown[];
  emit(event: string, ...args: unknown[]): boolean;
}

interface ResultInternals {
  fields: unknown[];
  _parsers: unknown;
  readonly _types?: TypeSource;
  addRow(row: unknown): void;
}

interface TypeSource {
  getTypeParser(oid: number, format: string): (text: string) => unknown;
}

interface FieldMessage {
  readonly name: string;
  readonly dataTypeID: number;
  readonly format: string;
}

/** One statement's result shape on one client's types. */
interface Decoder {
  readonly names: readonly string[];
  readonly types: readonly number[];
  readonly parsers: ReadonlyArray<(text: string) => unknown>;
  readonly make: (values: readonly unknown[]) => Record<string, unknown>;
}

/** Statements kept per client's types; a client that runs more starts again (rows stay right, only slower). */
const MAX_DECODERS = 512;
/** `pg`'s own conversion of a value for the server, as its statements bind them. */
const prepareValue = (pg as unknown as { readonly utils: { prepareValue(value: unknown): unknown } }).utils.prepareValue;
const decodersByTypes = new WeakMap<TypeSource, Map<string, Decoder>>();

function decoderFor(types: TypeSource, text: string, fields: readonly FieldMessage[]): Decoder {
  let decoders = decodersByTypes.get(types);
  if (decoders === undefined) {
    decoders = new Map();
    decodersByTypes.set(types, decoders);
  }
  const known = decoders.get(text);
  if (known !== undefined && sameShape(known, fields)) return known;
  const names = fields.map((field) => field.name);
  const made: Decoder = {
    names,
    types: fields.map((field) => field.dataTypeID),
    parsers: fields.map((field) => types.getTypeParser(field.dataTypeID, 'text')),
    make: rowMaker(names),
  };
  if (decoders.size >= MAX_DECODERS) decoders.clear();
  decoders.set(text, made);
  return made;
}

function sameShape(decoder: Decoder, fields: readonly FieldMessage[]): boolean {
  if (decoder.names.length !== fields.length) return false;
  for (let index = 0; index < fields.length; index += 1) {
    const field = fields[index]!;
    if (field.name !== decoder.names[index] || field.dataTypeID !== decoder.types[index]) return false;
  }
  return true;
}

/** `pg`'s connection as far as a query's preparation uses it. */
interface ConnectionInternals {
  parse(message: unknown): void;
  bind(message: unknown): void;
  describe(message: unknown): void;
  execute(message: unknown): void;
  sync(): void;
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements: Record<string, string | undefined>;
}

/** What the server said a named statement answers: its columns, or no rows at all. */
interface Described {
  readonly text: string;
  readonly fields: readonly FieldMessage[];
  readonly decoder: Decoder | undefined;
}

/**
 * The result shapes of each connection's named statements, as the server described them. A
 * statement prepared by name has one result shape for as long as it exists: PostgreSQL refuses to
 * run it once its result would change ("cached plan must not change result type", SQLSTATE
 * 0A000), so that a description once received holds for every later run on that connection.
 */
const describedByConnection = new WeakMap<object, Map<string, Described>>();

function describedOn(connection: object): Map<string, Described> {
  let described = describedByConnection.get(connection);
  if (described === undefined) {
    described = new Map();
    describedByConnection.set(connection, described);
  }
  return described;
}

class ShapedQuery extends pg.Query {
  #decoder: Decoder | undefined;
  /** The connection this named statement asked to be described on, until its answer has come. */
  #describing: object | undefined;
  /** Whether the server described this run's rows (a statement that returns none has no description). */
  #sawRowDescription = false;

  constructor(text: string, values: unknown[], name: string | undefined, callback: (error: Error | undefined, result: pg.QueryResult) => void) {
    super(text, values, callback as never);
    if (name !== undefined) (this as unknown as QueryInternals).name = name;
  }

  /**
   * As `pg` prepares a statement, with two differences for a named one:
   * - once this connection has had its result described, it is not described again: the server
   *   would send the same column list (about 1 KB for an incoming transfer) with every answer,
   *   and it would be parsed again. The rows are made with the shape kept from the first answer;
   * - a value that cannot be converted fails the run and leaves the statement prepared. `pg`
   *   closes the statement there, yet its connection goes on counting it as prepared, so that
   *   every later run of it on that connection would fail ("prepared statement does not exist").
   */
  prepare(connection: ConnectionInternals): void {
    const query = this as unknown as QueryInternals & { readonly binary?: boolean; readonly rows?: number; readonly portal?: string; readonly types?: unknown };
    const name = query.name;
    const plain = name !== undefined && name !== '' && query.binary !== true && query.rows === undefined && (query.portal ?? '') === '' && query._rowMode === undefined;
    if (!plain || query._result._types === undefined) {
      (pg.Query.prototype as unknown as { prepare(connection: unknown): void }).prepare.call(this, connection);
      return;
    }
    // As pg's hasBeenParsed: sent before on this connection, answered or not.
    if (connection.parsedStatements[name] === undefined && connection.submittedNamedStatements[name] === undefined) {
      connection.parse({ text: query.text, name, types: query.types });
      connection.submittedNamedStatements[name] = query.text;
    }
    try {
      connection.bind({ portal: '', statement: name, values: (this as unknown as { values: unknown[] }).values, binary: false, valueMapper: prepareValue });
    } catch (error) {
      // Nothing of this run but a parse was sent: the sync ends it, and the statement stays.
      connection.sync();
      (this as unknown as { handleError(error: unknown, connection: unknown): void }).handleError(error, connection);
      return;
    }
    const described = describedOn(connection).get(name);
    if (described !== undefined && described.text === query.text && connection.parsedStatements[name] === query.text) this.#shape(described);
    else {
      this.#describing = connection;
      connection.describe({ type: 'P', name: '' });
    }
    connection.execute({ portal: '', rows: undefined });
    connection.sync();
  }

  #shape(described: Described): void {
    const query = this as unknown as QueryInternals;
    query._checkForMultirow();
    this.#decoder = described.decoder;
    const result = query._result;
    result.fields = described.fields as unknown[];
    result._parsers = described.decoder?.parsers;
    query._accumulateRows = query.callback !== undefined || query.listeners('row').length === 0;
  }

  handleRowDescription(message: { readonly fields: readonly FieldMessage[] }): void {
    const query = this as unknown as QueryInternals;
    const types = query._result._types;
    this.#sawRowDescription = true;
    if (types === undefined || query._rowMode !== undefined || message.fields.some((field) => field.format !== 'text')) {
      this.#decoder = undefined;
      this.#describing = undefined;
      (pg.Query.prototype as unknown as { handleRowDescription(message: unknown): void }).handleRowDescription.call(this, message);
      return;
    }
    const decoder = decoderFor(types, query.text, message.fields);
    const connection = this.#describing;
    if (connection !== undefined && query.name !== undefined) describedOn(connection).set(query.name, { text: query.text, fields: message.fields, decoder });
    this.#shape({ text: query.text, fields: message.fields, decoder });
  }

  handleCommandComplete(message: unknown, connection: unknown): void {
    // Described, and the server answered that it returns no rows (an insert or update without
    // RETURNING): that too holds for every later run.
    const describing = this.#describing;
    const query = this as unknown as QueryInternals;
    if (describing !== undefined && !this.#sawRowDescription && query.name !== undefined) describedOn(describing).set(query.name, { text: query.text, fields: [], decoder: undefined });
    (pg.Query.prototype as unknown as { handleCommandComplete(message: unknown, connection: unknown): void }).handleCommandComplete.call(this, message, connection);
  }

  handleDataRow(message: { readonly fields: ReadonlyArray<string | null> }): void {
    const decoder = this.#decoder;
    if (decoder === undefined) {
      (pg.Query.prototype as unknown as { handleDataRow(message: unknown): void }).handleDataRow.call(this, message);
      return;
    }
    const query = this as unknown as QueryInternals;
    if (query._canceledDueToError) return;
    let row: Record<string, unknown>;
    try {
      const raw = message.fields;
      const parsers = decoder.parsers;
      const values = new Array<unknown>(raw.length);
      for (let index = 0; index < raw.length; index += 1) {
        const text = raw[index];
        values[index] = text === null ? null : parsers[index]!(text as string);
      }
      row = decoder.make(values);
    } catch (error) {
      // As pg does: the statement fails with the parser's error once the server is done with it.
      query._canceledDueToError = error;
      return;
    }
    query.emit('row', row, query._result);
    if (query._accumulateRows) query._result.addRow(row);
  }
}

/**
 * Runs one statement as `client.query(text, values)` would, or as
 * `client.query({ name, text, values })` when `name` is given, answering the same result. `send`
 * is the client's own `query`, given the query object to run.
 */
export function shapedQuery(send: (query: pg.Query) => unknown, text: string, values: unknown[], name?: string): Promise<pg.QueryResult> {
  return new Promise<pg.QueryResult>((resolve, reject) => {
    send(
      new ShapedQuery(text, values, name, (error, result) => {
        if (error === undefined || error === null) resolve(result);
        else reject(error);
      }),
    );
  });
}

/**
 * A client's `query` whose calls with text and values, or with a name, text and values, run as
 * shapedQuery. Any other call (a query object, a callback, a config with more in it) goes to
 * `send` unchanged.
 */
export function shapedSending(send: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown {
  return (...args: unknown[]): unknown => {
    const [first, values] = args;
    if (args.length === 2 && typeof first === 'string' && Array.isArray(values)) return shapedQuery(send, first, values);
    if (args.length === 1 && isNamedStatement(first)) return shapedQuery(send, first.text, first.values, first.name);
    return send(...args);
  };
}

function isNamedStatement(config: unknown): config is { readonly name: string; readonly text: string; readonly values: unknown[] } {
  if (typeof config !== 'object' || config === null || Object.getPrototypeOf(config) !== Object.prototype) return false;
  const keys = Object.keys(config);
  const named = config as Record<string, unknown>;
  return (
    keys.length === 3 &&
    typeof named['name'] === 'string' &&
    typeof named['text'] === 'string' &&
    Array.isArray(named['values'])
  );
}
