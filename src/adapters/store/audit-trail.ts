import { sql, type Compilable, type Kysely, type OperationNodeSource, type RawBuilder } from 'kysely';
import { currentAuditCause, type AuditCause } from '../../audit/audit-cause.js';
import { AssertionFailed } from '../../domain/errors.js';
import { hasTable } from './backfill.js';
import { queryTemplate, rawQuery, type QueryTemplate, type Slots } from './query-template.js';
import type { AnySchema, Migration, SqlDatabase } from './sql-database.js';

/** What the audit trail follows. */
export const AUDIT_SUBJECTS = ['incoming_transfer', 'outgoing_payment', 'fx_conversion', 'identifier'] as const;
export type AuditSubject = (typeof AUDIT_SUBJECTS)[number];

/**
 * `created`: the record was written; `transition`: its state changed; `attempt`: its bookkeeping
 * changed without a state change (a failed attempt, a flag, a retry brought forward).
 */
export type AuditEventKind = 'created' | 'transition' | 'attempt';

/** One row of the trail. Identifiers and codes only: no names, no account holders' data. */
export interface AuditEvent {
  readonly subject: AuditSubject;
  readonly subjectId: string;
  /** 1, 2, 3... per subject, in the order the changes committed. */
  readonly seq: number;
  readonly at: string;
  readonly event: AuditEventKind;
  readonly fromState: string | null;
  readonly toState: string;
  readonly cause: AuditCause['cause'];
  readonly operator: string | null;
  readonly reason: string | null;
  readonly evidence: string | null;
  /** The subject's attempt counter after the change. */
  readonly attempt: number;
  readonly institutionReference: string | null;
  readonly errorCode: string | null;
  /** Whether the subject is flagged for an operator after the change. */
  readonly needsAttention: boolean;
}

interface AuditEventsTable {
  subject: string;
  subject_id: string;
  seq: number;
  at: string;
  event: string;
  from_state: string | null;
  to_state: string;
  cause: string;
  operator: string | null;
  reason: string | null;
  evidence: string | null;
  attempt: number;
  institution_reference: string | null;
  error_code: string | null;
  needs_attention: number;
}

interface Schema {
  audit_events: AuditEventsTable;
}

/**
 * Append-only: nothing in the connector updates or deletes a row. The key is the subject and
 * its sequence number, so two writers can never interleave one subject's history.
 */
export const auditMigrations: readonly Migration[] = [
  {
    id: 'audit-001-events',
    async up(db) {
      await db.schema
        .createTable('audit_events')
        .addColumn('subject', 'varchar(32)', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(160)', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('at', 'varchar(30)', (c) => c.notNull())
        .addColumn('event', 'varchar(16)', (c) => c.notNull())
        .addColumn('from_state', 'varchar(32)')
        .addColumn('to_state', 'varchar(32)', (c) => c.notNull())
        .addColumn('cause', 'varchar(16)', (c) => c.notNull())
        .addColumn('operator', 'varchar(64)')
        .addColumn('reason', 'varchar(500)')
        .addColumn('evidence', 'varchar(500)')
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('institution_reference', 'varchar(128)')
        .addColumn('error_code', 'varchar(64)')
        .addColumn('needs_attention', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('audit_events_pk', ['subject', 'subject_id', 'seq'])
        .execute();
      await db.schema.createIndex('audit_events_at').on('audit_events').columns(['at']).execute();
    },
  },
  {
    // The operations console's view of one subject's latest entries (recent, by subject and since).
    // Without it SQLite walked the whole subject through the key and sorted it: 1.4 s on 2 million
    // rows, 8.3 s on 6 million, the event loop blocked (a payment waited as long). With it: 1.4 ms.
    id: 'audit-002-subject-at',
    async up(db) {
      await db.schema.createIndex('audit_events_subject_at').ifNotExists().on('audit_events').columns(['subject', 'at']).execute();
    },
  },
];

/** Columns every audited table has: the row's audit sequence number and the state before its last change. */
export function auditColumnsMigration(id: string, table: string): Migration {
  return {
    id,
    async up(db) {
      await db.schema.alterTable(table).addColumn('audit_seq', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable(table).addColumn('prev_state', 'varchar(32)').execute();
    },
  };
}

/**
 * Brings each row's `audit_seq` up to the last sequence number its trail already holds. The
 * column came with `auditColumnsMigration` at 0, while a record changed by the release before it
 * has a trail of its own (that release numbered each entry from the trail's largest); without
 * this, the record's next change would take a number its trail already has, and the audit row's
 * key would refuse it, and every retry of it. For tables whose audit subject id is their key
 * column; a database without an audit trail yet has nothing to bring up.
 */
export function auditSeqFromTrailMigration(id: string, table: string, subject: AuditSubject, key: string): Migration {
  return {
    id,
    async up(db) {
      if (!(await hasTable(db, 'audit_events'))) return;
      const last = sql`(select max(a.seq) from audit_events a where a.subject = ${subject} and a.subject_id = ${sql.ref(`${table}.${key}`)})`;
      await sql`update ${sql.table(table)} set audit_seq = ${last} where audit_seq < coalesce(${last}, 0)`.execute(db);
    },
  };
}

/**
 * One change of an audited row and its audit row, written together. `write` is the INSERT or
 * UPDATE, with `RETURNING *`; it sets `audit_seq` (1 on insert, `audit_seq + 1` on update) and,
 * on an update from several states, `prev_state = state`. The audit row's values are SQL over the
 * changed row, named `changed`.
 */
export interface AuditedWrite {
  readonly subject: AuditSubject;
  readonly subjectId: string;
  /** The table, and SQL over `changed` that finds the changed row again by its key (SQLite). */
  readonly table: string;
  readonly key: RawBuilder<unknown>;
  readonly write: OperationNodeSource;
  readonly event: AuditEventKind;
  /** The state before: known to the caller, or `previous` (the row's prev_state). */
  readonly fromState: string | null | 'previous';
  readonly at: string;
  readonly errorCode: string | null;
  /** SQL over `changed` for the institution's reference. */
  readonly institutionReference: RawBuilder<unknown>;
  /** Whether the table has a needs_attention column. */
  readonly flags: boolean;
}

/**
 * Makes the change and appends its audit row atomically: one statement on PostgreSQL (a
 * data-modifying WITH, committed on its own: one round trip), one group-committed transaction on
 * SQLite. The sequence number is the row's own `audit_seq`, taken by the change itself while it
 * holds the row, so two changes of one subject can never share one. Answers the changed row, or
 * undefined when the write changed nothing (a lost compare-and-set, an insert of a known key).
 */
export async function auditedWrite<Row>(database: SqlDatabase, change: AuditedWrite, cause: AuditCause = currentAuditCause()): Promise<Row | undefined> {
  const audit = auditRow(causeValues(change.subject, change.subjectId, change.at, change.event, change.errorCode, change.fromState === 'previous' ? null : change.fromState, cause), {
    fromPrevious: change.fromState === 'previous',
    flags: change.flags,
    institutionReference: change.institutionReference,
  });
  if (database.dialect === 'postgres') {
    return database.autocommit<AnySchema, Row | undefined>(async (db) => {
      const result = await sql<Row>`with changed as (${change.write}), audited as (insert into audit_events ${audit}from changed) select * from changed`.execute(db);
      return result.rows[0];
    });
  }
  return database.transaction<AnySchema, Row | undefined>(async (trx) => {
    const result = await sql<Row>`${change.write}`.execute(trx);
    const row = result.rows[0];
    if (row === undefined) return undefined;
    await sql`insert into audit_events ${audit}from ${sql.table(change.table)} as changed where ${change.key}`.execute(trx);
    return row;
  });
}

/** The values of an audit row that are not read from the changed row. */
interface AuditValues {
  readonly auditSubject: string;
  readonly auditSubjectId: string;
  readonly auditAt: string;
  readonly auditEvent: string;
  /** The state before, when the caller knows it (null when it is the row's prev_state, or none). */
  readonly auditFromState: string | null;
  readonly auditCause: string;
  readonly auditOperator: string | null;
  readonly auditReason: string | null;
  readonly auditEvidence: string | null;
  readonly auditErrorCode: string | null;
}

function causeValues(
  subject: AuditSubject,
  subjectId: string,
  at: string,
  event: AuditEventKind,
  errorCode: string | null,
  fromState: string | null,
  cause: AuditCause,
): AuditValues {
  const operator = cause.cause === 'operator';
  return {
    auditSubject: subject,
    auditSubjectId: subjectId,
    auditAt: at,
    auditEvent: event,
    auditFromState: fromState,
    auditCause: cause.cause,
    auditOperator: operator ? cause.operator.slice(0, 64) : null,
    auditReason: operator ? cause.reason.slice(0, 500) : null,
    auditEvidence: operator && cause.evidence !== undefined ? cause.evidence.slice(0, 500) : null,
    auditErrorCode: errorCode?.slice(0, 64) ?? null,
  };
}

/**
 * The column list and SELECT of an audit row over the changed row, named `changed`, ending in a
 * space so that a FROM can follow. `values` are the values themselves or a template's slots.
 */
function auditRow(
  values: AuditValues,
  shape: { readonly fromPrevious: boolean; readonly flags: boolean; readonly institutionReference: RawBuilder<unknown> },
): RawBuilder<unknown> {
  const fromState = shape.fromPrevious ? sql`changed.prev_state` : sql`cast(${values.auditFromState} as varchar(32))`;
  const flagged = shape.flags ? sql`changed.needs_attention` : sql`0`;
  return sql`(subject, subject_id, seq, at, event, from_state, to_state, cause, operator, reason, evidence, attempt, institution_reference, error_code, needs_attention)
    select cast(${values.auditSubject} as varchar(32)), cast(${values.auditSubjectId} as varchar(160)), changed.audit_seq, cast(${values.auditAt} as varchar(30)),
      cast(${values.auditEvent} as varchar(16)), ${fromState}, changed.state, cast(${values.auditCause} as varchar(16)), cast(${values.auditOperator} as varchar(64)),
      cast(${values.auditReason} as varchar(500)), cast(${values.auditEvidence} as varchar(500)), changed.attempts, ${shape.institutionReference},
      cast(${values.auditErrorCode} as varchar(64)), ${flagged} `;
}

/** What stays the same across every run of one audited write on a hot path. */
export interface AuditedWriteShape<S, P> {
  readonly subject: AuditSubject;
  readonly table: string;
  readonly event: AuditEventKind;
  /** The state before is the row's prev_state (an update from several states), not a value given at each run. */
  readonly fromPrevious: boolean;
  /** Whether the table has a needs_attention column. */
  readonly flags: boolean;
  /** The INSERT or UPDATE with `RETURNING *`, as for AuditedWrite. */
  readonly write: (db: Kysely<S>, slots: Slots<P>) => Compilable<unknown> & OperationNodeSource;
  /** SQL over `changed` that finds the changed row again by its key (SQLite). */
  readonly key: (slots: Slots<P>) => RawBuilder<unknown>;
  /** SQL over `changed` for the institution's reference. */
  readonly institutionReference: RawBuilder<unknown>;
}

/** The values of one run of an AuditedWriteTemplate besides the write's own. */
export interface AuditedRun {
  readonly subjectId: string;
  readonly at: string;
  /** The state before; ignored when the shape takes it from prev_state. */
  readonly fromState: string | null;
  readonly errorCode: string | null;
}

/**
 * auditedWrite for a write of fixed shape, built and compiled once (query-template.ts): the same
 * statements, the same atomicity, without building queries on every call.
 */
export class AuditedWriteTemplate<S, P extends object, Row> {
  readonly #shape: AuditedWriteShape<S, P>;
  readonly #combined: QueryTemplate<AnySchema, P & AuditValues, Row>;
  readonly #write: QueryTemplate<S, P, Row>;
  readonly #audit: QueryTemplate<AnySchema, P & AuditValues, unknown>;

  constructor(name: string, shape: AuditedWriteShape<S, P>) {
    this.#shape = shape;
    const audit = (slots: Slots<P & AuditValues>): RawBuilder<unknown> =>
      auditRow(slots, { fromPrevious: shape.fromPrevious, flags: shape.flags, institutionReference: shape.institutionReference });
    this.#combined = queryTemplate(`${name} (audited)`, (db, slots) => {
      const write = shape.write(db as unknown as Kysely<S>, slots);
      return rawQuery(sql<Row>`with changed as (${write}), audited as (insert into audit_events ${audit(slots)}from changed) select * from changed`, db);
    });
    this.#write = queryTemplate(name, (db, slots) => shape.write(db, slots) as Compilable<Row>);
    this.#audit = queryTemplate(`${name} (audit row)`, (db, slots) =>
      rawQuery(sql`insert into audit_events ${audit(slots)}from ${sql.table(shape.table)} as changed where ${shape.key(slots)}`, db),
    );
  }

  run(database: SqlDatabase, values: P, audited: AuditedRun, cause: AuditCause = currentAuditCause()): Promise<Row | undefined> {
    const shape = this.#shape;
    const audit = causeValues(shape.subject, audited.subjectId, audited.at, shape.event, audited.errorCode, shape.fromPrevious ? null : audited.fromState, cause);
    if (database.dialect === 'postgres') {
      return database.autocommit<AnySchema, Row | undefined>(async (db) => (await this.#combined.executeWith(db, values, audit)).rows[0]);
    }
    return database.transaction<S, Row | undefined>(async (trx) => {
      const row = await this.#write.first(trx, values);
      if (row === undefined) return undefined;
      await this.#audit.executeWith(trx as unknown as Kysely<AnySchema>, values, audit);
      return row;
    });
  }
}

export interface RecentAuditQuery {
  readonly subject?: AuditSubject;
  readonly since?: string;
  readonly limit: number;
}

/** Reads the trail. */
export class AuditTrail {
  constructor(private readonly database: SqlDatabase) {}

  /** One subject's history, oldest first. */
  async history(subject: AuditSubject, subjectId: string): Promise<AuditEvent[]> {
    const rows = await this.database
      .reader<Schema>()
      .selectFrom('audit_events')
      .selectAll()
      .where('subject', '=', subject)
      .where('subject_id', '=', subjectId)
      .orderBy('seq')
      .execute();
    return rows.map(eventFromRow);
  }

  /** The latest rows, newest first. */
  async recent(query: RecentAuditQuery): Promise<AuditEvent[]> {
    let select = this.database.listReader<Schema>().selectFrom('audit_events').selectAll();
    if (query.subject !== undefined) select = select.where('subject', '=', query.subject);
    if (query.since !== undefined) select = select.where('at', '>=', query.since);
    const rows = await select.orderBy('at', 'desc').orderBy('seq', 'desc').limit(query.limit).execute();
    return rows.map(eventFromRow);
  }
}

function eventFromRow(row: AuditEventsTable): AuditEvent {
  return {
    subject: subjectOf(row.subject),
    subjectId: row.subject_id,
    seq: Number(row.seq),
    at: row.at,
    event: eventKindOf(row.event),
    fromState: row.from_state,
    toState: row.to_state,
    cause: causeOf(row.cause),
    operator: row.operator,
    reason: row.reason,
    evidence: row.evidence,
    attempt: Number(row.attempt),
    institutionReference: row.institution_reference,
    errorCode: row.error_code,
    needsAttention: Number(row.needs_attention) === 1,
  };
}

export function parseAuditSubject(text: string): AuditSubject | undefined {
  return AUDIT_SUBJECTS.find((subject) => subject === text);
}

function subjectOf(text: string): AuditSubject {
  const subject = parseAuditSubject(text);
  if (subject === undefined) throw new AssertionFailed(`stored audit subject ${text}`);
  return subject;
}

function eventKindOf(text: string): AuditEventKind {
  if (text === 'created' || text === 'transition' || text === 'attempt') return text;
  throw new AssertionFailed(`stored audit event ${text}`);
}

function causeOf(text: string): AuditCause['cause'] {
  if (text === 'request' || text === 'recovery' || text === 'operator') return text;
  throw new AssertionFailed(`stored audit cause ${text}`);
}
