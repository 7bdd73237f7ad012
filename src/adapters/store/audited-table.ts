import { CONTRADICTION_LIKE } from '../../domain/contradiction.js';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { AuditedWriteTemplate, type AuditSubject } from './audit-trail.js';
import { TemplateFamily, slotRow } from './query-template.js';
import type { AnySchema, SqlDatabase } from './sql-database.js';

/**
 * The audited writes of a table of records with a state (incoming transfers, outgoing payments,
 * FX conversions): an insert, and compare-and-set updates, each with its audit row in the same
 * statement or transaction (audit-trail.ts). Each shape of write is built and compiled once
 * (query-template.ts); a shape is which columns a write sets, how many states it may leave, and
 * which guard it takes, all of which come from the calling code, never from data.
 */

/** What the writes here read and write besides a table's own columns. */
export interface AuditedRow {
  state: string;
  updated_at: string;
  next_attempt_at: string | null;
  attempts: number;
  needs_attention: number;
  lease_until: string | null;
  audit_seq: number;
  prev_state: string | null;
}

/**
 * The columns the connector's record tables (incoming transfers, outgoing payments, FX
 * conversions) share: their state, recovery bookkeeping and audit columns. Spread into a table's
 * own column record.
 */
export const RECORD_COLUMNS = {
  state: true,
  attempts: true,
  next_attempt_at: true,
  last_error: true,
  needs_attention: true,
  lease_until: true,
  created_at: true,
  updated_at: true,
  audit_seq: true,
  prev_state: true,
} as const;

export interface AuditedTableSpec<Row extends AuditedRow> {
  readonly subject: AuditSubject;
  readonly table: string;
  /** The record's key column. */
  readonly key: keyof Row & string;
  /** Every column of the row (a record, so that the type checker insists on each). */
  readonly columns: Readonly<Record<keyof Row, true>>;
  /** An insert of a row whose key is known does nothing; `any`: one that breaks any unique constraint. */
  readonly conflict: 'key' | 'any';
  /** SQL over `changed` for the institution's reference in the audit row. */
  readonly institutionReference: RawBuilder<unknown>;
}

export interface AuditedUpdate<Row> {
  /** The record's key. */
  readonly key: string;
  /** `transition`: the state changes (prev_state keeps the one before); `attempt`: bookkeeping only. */
  readonly event: 'transition' | 'attempt';
  /** The states the record may be in for the update to apply (an attempt names exactly one). */
  readonly from: readonly string[];
  /** The columns to set, a transition's new state among them. Undefined values are left alone. */
  readonly set: Partial<Row>;
  readonly at: string;
  readonly errorCode: string | null;
  /** Applies only when the record is flagged for an operator. */
  readonly flagged?: boolean;
  /** Applies only when the record is not leased past this time (no lease, or one that has run out). */
  readonly leaseFreeAt?: string;
  /**
   * Leaves `last_error` and `needs_attention` as the row has them when its last error records a
   * contradiction (src/domain/contradiction.ts), whatever `set` says: decided in the statement,
   * so a contradiction flagged by another process while this step ran is not cleared by it.
   */
  readonly keepContradiction?: boolean;
}

export interface ReleasingTransition<Row> {
  readonly key: string;
  readonly from: readonly string[];
  readonly to: string;
  /** Other columns to set. */
  readonly set: Partial<Row>;
  readonly at: string;
  readonly errorCode: string | null;
  readonly guard?: { readonly now: string } | undefined;
  /** See AuditedUpdate.keepContradiction. */
  readonly keepContradiction?: boolean;
}

interface UpdateShape {
  readonly event: 'transition' | 'attempt';
  readonly columns: readonly string[];
  readonly from: number;
  readonly flagged: boolean;
  readonly leaseFree: boolean;
  readonly keepContradiction: boolean;
}

type Values = Record<string, unknown>;

export class AuditedTable<Row extends AuditedRow> {
  readonly #spec: AuditedTableSpec<Row>;
  readonly #insert: AuditedWriteTemplate<AnySchema, Row, Row>;
  readonly #updates: TemplateFamily<UpdateShape, AuditedWriteTemplate<AnySchema, Values, Row>>;

  constructor(spec: AuditedTableSpec<Row>) {
    this.#spec = spec;
    const audit = { subject: spec.subject, table: spec.table, flags: true, institutionReference: spec.institutionReference };
    const rows = (db: Kysely<AnySchema>): Kysely<Record<string, Row>> => db as unknown as Kysely<Record<string, Row>>;
    this.#insert = new AuditedWriteTemplate<AnySchema, Row, Row>(`insert ${spec.table}`, {
      ...audit,
      event: 'created',
      fromPrevious: false,
      write: (db, p) => {
        const insert = rows(db).insertInto(spec.table).values(slotRow(p, spec.columns) as never);
        return (spec.conflict === 'key' ? insert.onConflict((oc) => oc.column(spec.key as never).doNothing()) : insert.onConflict((oc) => oc.doNothing())).returningAll();
      },
      key: (p) => sql`changed.${sql.ref(spec.key)} = ${(p as Values)[spec.key]}`,
    });
    this.#updates = new TemplateFamily(`update ${spec.table}`, (shape, name) =>
      new AuditedWriteTemplate<AnySchema, Values, Row>(name, {
        ...audit,
        event: shape.event,
        fromPrevious: shape.from !== 1,
        write: (db, p) => {
          const set: Values = { audit_seq: sql<number>`audit_seq + 1` };
          for (const column of shape.columns) set[column] = p[column];
          if (shape.keepContradiction) {
            // Both read the row's last_error as it was before this update.
            const contradiction = sql`last_error LIKE ${sql.lit(CONTRADICTION_LIKE)}`;
            if ('last_error' in set) set['last_error'] = sql`CASE WHEN ${contradiction} THEN last_error ELSE ${p['last_error']} END`;
            if ('needs_attention' in set) set['needs_attention'] = sql`CASE WHEN ${contradiction} THEN 1 ELSE ${p['needs_attention']} END`;
          }
          if (shape.event === 'transition') set['prev_state'] = sql<string>`state`;
          const from = Array.from({ length: shape.from }, (_, index) => p[`from${index}`] as string);
          let update = db
            .updateTable(spec.table)
            .set(set)
            .where(spec.key as string, '=', p['recordKey'] as string)
            .where('state', 'in', from);
          if (shape.flagged) update = update.where('needs_attention', '=', p['flaggedValue'] as number);
          if (shape.leaseFree) update = update.where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', p['leaseFreeAt'] as string)]));
          return update.returningAll();
        },
        key: (p) => sql`changed.${sql.ref(spec.key)} = ${p['recordKey']}`,
      }),
    );
  }

  /** Inserts the row unless its key is known; answers the row inserted, or undefined. */
  async insert(database: SqlDatabase, row: Row, at: string): Promise<Row | undefined> {
    const key = (row as Values)[this.#spec.key];
    if (typeof key !== 'string') throw new Error(`${this.#spec.table}: insert without a key`);
    return this.#insert.run(database, row, { subjectId: key, at, fromState: null, errorCode: null });
  }

  /**
   * A worked record's step (incoming transfers, outgoing payments): to `to` from one of `from`,
   * giving up any lease; with an operator's guard, only while the record is flagged and its lease
   * has run out at `guard.now`.
   */
  transitionReleasing(database: SqlDatabase, step: ReleasingTransition<Row>): Promise<Row | undefined> {
    const set = { ...step.set, state: step.to, updated_at: step.at, lease_until: null } as Partial<Row>;
    const guard = step.guard === undefined ? {} : { flagged: true, leaseFreeAt: step.guard.now };
    const keep = step.keepContradiction === true ? { keepContradiction: true } : {};
    return this.update(database, { key: step.key, event: 'transition', from: step.from, set, at: step.at, errorCode: step.errorCode, ...guard, ...keep });
  }

  /** A failed attempt or a flag of a worked record in `state`, giving up any lease; false when it was not in `state`. */
  async recordAttemptReleasing(database: SqlDatabase, key: string, state: string, changes: Partial<Row>, at: string, errorCode: string | null, keepContradiction = false): Promise<boolean> {
    const set = { ...changes, lease_until: null } as Partial<Row>;
    const keep = keepContradiction ? { keepContradiction: true } : {};
    return (await this.update(database, { key, event: 'attempt', from: [state], set, at, errorCode, ...keep })) !== undefined;
  }

  /** Brings a worked record's next attempt forward to `now`, unless another worker holds it; false when it did not. */
  async scheduleNow(database: SqlDatabase, key: string, state: string, now: string): Promise<boolean> {
    const set = { next_attempt_at: now } as Partial<Row>;
    return (await this.update(database, { key, event: 'attempt', from: [state], set, at: now, errorCode: null, leaseFreeAt: now })) !== undefined;
  }

  /** Applies the update when its conditions hold; answers the changed row, or undefined. */
  async update(database: SqlDatabase, update: AuditedUpdate<Row>): Promise<Row | undefined> {
    if (update.from.length === 0) throw new Error(`${this.#spec.table}: an update from no state`);
    if (update.event === 'attempt' && update.from.length !== 1) throw new Error(`${this.#spec.table}: an attempt names one state`);
    const set = update.set as Values;
    const columns = Object.keys(set)
      .filter((column) => set[column] !== undefined)
      .sort();
    const shape: UpdateShape = {
      event: update.event,
      columns,
      from: update.from.length,
      flagged: update.flagged === true,
      leaseFree: update.leaseFreeAt !== undefined,
      keepContradiction: update.keepContradiction === true,
    };
    const key = `${shape.event}/${columns.join(',')}/${shape.from}/${shape.flagged ? 'flagged' : ''}/${shape.leaseFree ? 'lease-free' : ''}/${shape.keepContradiction ? 'keep' : ''}`;
    const values: Values = { recordKey: update.key, flaggedValue: 1, leaseFreeAt: update.leaseFreeAt ?? update.at };
    for (const column of columns) values[column] = set[column];
    update.from.forEach((state, index) => {
      values[`from${index}`] = state;
    });
    return this.#updates.get(key, shape).run(database, values, { subjectId: update.key, at: update.at, fromState: update.from[0] ?? null, errorCode: update.errorCode });
  }
}
