import { createQueryId, type Compilable, type Kysely, type QueryResult, type RawBuilder, type RootOperationNode } from 'kysely';

/**
 * Queries on the hot paths, built with Kysely once and run many times.
 *
 * Building and compiling a Kysely query costs 15-25 µs of CPU (its builders copy and freeze a
 * tree on every call; the compiler walks it); the payee lifecycle runs about 25 of them, which
 * was a fifth of the connector's CPU. A template is written as an ordinary Kysely query whose
 * values are named slots (`p.transferId`). It is compiled the first time it runs on each
 * dialect; every run after that puts the values in the slots' places and hands the SQL to the
 * same executor (same connection, transaction, statement counting and prepared-statement
 * naming as any other query).
 *
 * A template's shape is fixed: the slots must be the compiled query's only parameters (a value
 * written into the builder directly would be frozen into every later run, so compiling refuses
 * it; constants go in as `sql.lit` or a slot), and a query whose shape depends on its values
 * (which columns are set, how many rows are inserted) takes one template per shape
 * (`TemplateFamily`).
 */

/** Where a value goes: a stand-in that the compiler collects as a parameter like any other. */
class Slot {
  constructor(readonly name: string) {}
}

/** The slots of a template, typed as the values they stand for so that builders accept them. */
export type Slots<P> = { readonly [K in keyof P]: P[K] };

interface Compiled {
  readonly sql: string;
  readonly query: RootOperationNode;
  /** The slot name of each parameter, in the compiled query's order. */
  readonly order: readonly string[];
}

function slotsFor<P>(): Slots<P> {
  const made = new Map<string, Slot>();
  return new Proxy({} as Slots<P>, {
    get(_target, name) {
      if (typeof name !== 'string') return undefined;
      let slot = made.get(name);
      if (slot === undefined) {
        slot = new Slot(name);
        made.set(name, slot);
      }
      return slot;
    },
  });
}

/** Runs compiled SQL with its parameters, answering as Kysely's driver would. */
export type DirectRun = (sql: string, parameters: readonly unknown[]) => Promise<QueryResult<unknown>>;

/** Kysely instances whose queries a database runs without Kysely's executor (runDirectly). */
const directRuns = new WeakMap<object, DirectRun>();

/**
 * Templates run on `db` go to `run` instead of through Kysely's executor and driver, which cost
 * several promises and objects per query. Only for a Kysely whose driver and plugins do nothing
 * `run` does not: its results, and when they are given, must be the same either way.
 */
export function runDirectly(db: object, run: DirectRun): void {
  directRuns.set(db, run);
}

export class QueryTemplate<S, P extends object, R> {
  readonly #build: (db: Kysely<S>, slots: Slots<P>) => Compilable<R>;
  /** One compilation per dialect adapter (every Kysely of one database, and its transactions, share one). */
  readonly #compiled = new WeakMap<object, Compiled>();

  constructor(
    readonly name: string,
    build: (db: Kysely<S>, slots: Slots<P>) => Compilable<R>,
  ) {
    this.#build = build;
  }

  /** The SQL this template runs on `db`'s dialect (compiling it if it has not run there yet). */
  sqlFor(db: Kysely<S>): string {
    return this.#compile(db).sql;
  }

  execute(db: Kysely<S>, values: P): Promise<QueryResult<R>> {
    return this.#run(db, values as Record<string, unknown>, undefined);
  }

  /**
   * execute with the values of `{ ...values, ...more }`, without making that object: spread into
   * one, an audited write's row and its audit values make an object of some forty keys that V8
   * keeps as a slow dictionary, and making it and reading it back took about 18 µs. A slot that
   * `more` leaves undefined takes its value from `values`.
   */
  executeWith<A extends object, B extends object>(this: QueryTemplate<S, A & B, R>, db: Kysely<S>, values: A, more: B): Promise<QueryResult<R>> {
    return this.#run(db, values as Record<string, unknown>, more as Record<string, unknown>);
  }

  #run(db: Kysely<S>, named: Record<string, unknown>, more: Record<string, unknown> | undefined): Promise<QueryResult<R>> {
    const compiled = this.#compile(db);
    const parameters = compiled.order.map((name) => {
      let value = more === undefined ? undefined : more[name];
      if (value === undefined) value = named[name];
      if (value === undefined) throw new Error(`query ${this.name}: no value for ${name}`);
      return value;
    });
    const direct = directRuns.get(db);
    if (direct !== undefined) return direct(compiled.sql, parameters) as Promise<QueryResult<R>>;
    return db.executeQuery<R>({ sql: compiled.sql, query: compiled.query, parameters, queryId: createQueryId() });
  }

  async rows(db: Kysely<S>, values: P): Promise<R[]> {
    return (await this.execute(db, values)).rows;
  }

  async first(db: Kysely<S>, values: P): Promise<R | undefined> {
    return (await this.execute(db, values)).rows[0];
  }

  /** Rows inserted, updated or deleted (0 for a statement that reports none). */
  async changed(db: Kysely<S>, values: P): Promise<number> {
    return Number((await this.execute(db, values)).numAffectedRows ?? 0n);
  }

  #compile(db: Kysely<S>): Compiled {
    const adapter = db.getExecutor().adapter;
    const known = this.#compiled.get(adapter);
    if (known !== undefined) return known;
    const query = this.#build(db, slotsFor<P>()).compile();
    const order = query.parameters.map((parameter, index) => {
      if (!(parameter instanceof Slot)) throw new Error(`query ${this.name}: parameter ${index + 1} is a value, not a slot`);
      // Values are read from plain objects: a slot named like a property every object inherits
      // (`constructor`, `toString`) would take the inherited function where a value is missing.
      if (parameter.name in Object.prototype) throw new Error(`query ${this.name}: slot ${parameter.name} is named like a property every object has; name it otherwise`);
      return parameter.name;
    });
    const compiled = { sql: query.sql, query: query.query, order };
    this.#compiled.set(adapter, compiled);
    return compiled;
  }
}

/** A template: `build` is called once per dialect, with slots for the values. */
export function queryTemplate<S, P extends object, R>(name: string, build: (db: Kysely<S>, slots: Slots<P>) => Compilable<R>): QueryTemplate<S, P, R> {
  return new QueryTemplate(name, build);
}

/**
 * Templates of one query in several shapes, made on first use and kept by shape. The shapes
 * come from the code (which optional columns a caller sets), never from data, so they are few;
 * should there be more than `maxShapes`, a new one is still made and run each time it is asked
 * for, but not kept, so that memory stays bounded and only speed is lost.
 */
export class TemplateFamily<Shape, T> {
  readonly #made = new Map<string, T>();

  constructor(
    readonly name: string,
    private readonly make: (shape: Shape, name: string) => T,
    private readonly maxShapes = 64,
  ) {}

  get(key: string, shape: Shape): T {
    const known = this.#made.get(key);
    if (known !== undefined) return known;
    const template = this.make(shape, `${this.name}[${key}]`);
    if (this.#made.size < this.maxShapes) this.#made.set(key, template);
    return template;
  }
}

/** Raw SQL (Kysely's `sql` tag) as a template's query, compiled on the template's database. */
export function rawQuery<R, S>(raw: RawBuilder<R>, db: Kysely<S>): Compilable<R> {
  return { compile: () => raw.compile(db) };
}

/**
 * A row of slots for an insert, one per column. `columns` is a record rather than a list so that
 * the type checker insists on every column of the row: a column left out would be dropped.
 */
export function slotRow<P extends object>(slots: Slots<P>, columns: Readonly<Record<keyof P, true>>): P {
  const row: Record<string, unknown> = {};
  for (const column of Object.keys(columns)) row[column] = (slots as Record<string, unknown>)[column];
  return row as P;
}
