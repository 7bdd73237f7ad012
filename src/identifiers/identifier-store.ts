import { sql, type Kysely, type OperationNodeSource, type WhereInterface } from 'kysely';
import { createHash } from 'node:crypto';
import type { AnySchema, Migration, SqlDatabase } from '../adapters/store/sql-database.js';
import { auditColumnsMigration, auditedWrite, type AuditEventKind } from '../adapters/store/audit-trail.js';
import { backfillColumn, hasTable } from '../adapters/store/backfill.js';
import { IDENTIFIERS, stateCountsMigration } from '../adapters/store/state-counts.js';
import { isPartyIdType, type PartyIdType } from '../domain/identifiers.js';

/**
 * The registry of the institution's customer identifiers and where each stands with the
 * platform: REQUESTED (opt-in asked, not confirmed by the platform yet), REGISTERED, FAILED
 * (the platform refused the registration, with its code), OPTING_OUT (opt-out asked),
 * DEREGISTERED, OPT_OUT_FAILED (the platform refused the removal, with its code: it may still
 * hold the identifier). One row per
 * identifier (type, value, sub-value): a repeat is the same identifier, never a second one.
 * Every change of state is a compare-and-set, so a batch cut off mid-way resumes without
 * registering or removing anything twice.
 */

export const identifierMigrations: readonly Migration[] = [
  {
    id: 'identifiers-001-registry',
    async up(db) {
      await db.schema
        .createTable('identifier_registry')
        .addColumn('id_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('id_sub_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('account_id', 'varchar(128)')
        .addColumn('consent_by', 'varchar(128)')
        .addColumn('consent_at', 'varchar(30)')
        .addColumn('consent_channel', 'varchar(64)')
        .addColumn('platform_code', 'varchar(8)')
        .addColumn('platform_message', 'varchar(256)')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('lease_until', 'varchar(30)', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('job_id', 'varchar(64)')
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('identifier_registry_pk', ['id_type', 'id_value', 'id_sub_value'])
        .execute();
      await db.schema.createIndex('identifier_registry_due').on('identifier_registry').columns(['state', 'next_attempt_at']).execute();
      await db.schema.createIndex('identifier_registry_job').on('identifier_registry').column('job_id').execute();
    },
  },
  auditColumnsMigration('identifiers-003-audit-columns', 'identifier_registry'),
  {
    // As auditSeqFromTrailMigration (audit-trail.ts), for a trail that names each identifier by
    // a digest of its key, which SQLite cannot compute: worked out here, a page of rows at a time.
    id: 'identifiers-004-audit-seq-from-trail',
    async up(db) {
      if (!(await hasTable(db, 'audit_events'))) return;
      const trails = await sql<{ subject_id: string; seq: number | string }>`
        select subject_id, max(seq) as seq from audit_events where subject = 'identifier' group by subject_id`.execute(db);
      if (trails.rows.length === 0) return;
      const last = new Map(trails.rows.map((row) => [row.subject_id, Number(row.seq)]));
      await backfillColumn(db, {
        table: 'identifier_registry',
        key: ['id_type', 'id_value', 'id_sub_value'],
        read: ['audit_seq'],
        column: 'audit_seq',
        type: 'integer',
        valueOf: (row) => {
          const key = { idType: row['id_type'] as PartyIdType, idValue: String(row['id_value']), idSubValue: String(row['id_sub_value']) };
          const seq = last.get(auditSubjectId(key));
          return seq !== undefined && seq > Number(row['audit_seq']) ? seq : undefined;
        },
      });
    },
  },
  // The identifiers in each registration state, kept for the metrics on SQLite (state-counts.ts).
  stateCountsMigration('identifiers-005-state-counts', IDENTIFIERS),
  {
    // A job's identifiers still waiting for the platform (claimJob, waitingInJob): found by job
    // and state, and claimed in key order, instead of walking every identifier of the job, which
    // on SQLite held the event loop 150–270 ms at every recovery pass (each 5 s) for a
    // 500,000-line job still waiting (a reviewer's measurement), and sorting every waiting one
    // for each batch sent. It replaces the index on job_id alone, its prefix.
    id: 'identifiers-006-registry-job-state',
    async up(db) {
      await db.schema
        .createIndex('identifier_registry_job_state')
        .ifNotExists()
        .on('identifier_registry')
        .columns(['job_id', 'state', 'id_type', 'id_value', 'id_sub_value'])
        .execute();
      await db.schema.dropIndex('identifier_registry_job').ifExists().execute();
    },
  },
];

export type RegistrationState = 'REQUESTED' | 'REGISTERED' | 'FAILED' | 'OPTING_OUT' | 'DEREGISTERED' | 'OPT_OUT_FAILED';

export interface IdentifierKey {
  readonly idType: PartyIdType;
  readonly idValue: string;
  readonly idSubValue?: string;
}

export interface Consent {
  /** Who asked (the customer, an agent, an operator), as the channel names them. */
  readonly by: string;
  /** When the consent was given, ISO 8601. */
  readonly at: string;
  /** Where: app, ussd, branch, bulk file... */
  readonly channel: string;
}

export interface IdentifierRecord extends IdentifierKey {
  readonly currency: string;
  readonly state: RegistrationState;
  readonly accountId: string | null;
  readonly consent: Consent | null;
  /** The platform's code and message when it refused. */
  readonly platformCode: string | null;
  readonly platformMessage: string | null;
  readonly attempts: number;
  readonly nextAttemptAt: string;
  readonly lastError: string | null;
  readonly jobId: string | null;
  readonly updatedAt: string;
  /** Until when a worker holds the identifier for its platform call (in the past when nobody does). */
  readonly leaseUntil: string;
}

interface Row {
  id_type: string;
  id_value: string;
  id_sub_value: string;
  currency: string;
  state: string;
  account_id: string | null;
  consent_by: string | null;
  consent_at: string | null;
  consent_channel: string | null;
  platform_code: string | null;
  platform_message: string | null;
  attempts: number;
  next_attempt_at: string;
  lease_until: string;
  last_error: string | null;
  job_id: string | null;
  created_at: string;
  updated_at: string;
  audit_seq: number;
  prev_state: string | null;
}

interface Schema {
  identifier_registry: Row;
}

export interface RegistryChanges {
  readonly accountId?: string | null;
  readonly consent?: Consent | null;
  readonly platformCode?: string | null;
  readonly platformMessage?: string | null;
  readonly attempts?: number;
  readonly nextAttemptAt?: string;
  readonly lastError?: string | null;
  readonly jobId?: string | null;
}

export class IdentifierStore {
  constructor(
    private readonly database: SqlDatabase,
    private readonly now: () => Date,
  ) {}

  #db(): Kysely<Schema> {
    return this.database.reader<Schema>();
  }

  async find(key: IdentifierKey): Promise<IdentifierRecord | undefined> {
    const row = await this.#db()
      .selectFrom('identifier_registry')
      .selectAll()
      .where((eb) => eb.and(keyColumns(key)))
      .executeTakeFirst();
    return row === undefined ? undefined : recordOf(row);
  }

  /** Inserts the identifier in `state`; false when it is in the registry already. */
  async insert(key: IdentifierKey, currency: string, state: RegistrationState, changes: RegistryChanges): Promise<boolean> {
    const now = this.now().toISOString();
    const write = this.#db()
      .insertInto('identifier_registry')
      .values({
        id_type: key.idType,
        id_value: key.idValue,
        id_sub_value: key.idSubValue ?? '',
        currency,
        state,
        account_id: changes.accountId ?? null,
        consent_by: changes.consent?.by ?? null,
        consent_at: changes.consent?.at ?? null,
        consent_channel: changes.consent?.channel ?? null,
        platform_code: null,
        platform_message: null,
        attempts: 0,
        next_attempt_at: changes.nextAttemptAt ?? now,
        lease_until: now,
        last_error: null,
        job_id: changes.jobId ?? null,
        created_at: now,
        updated_at: now,
        audit_seq: 1,
        prev_state: null,
      })
      .onConflict((oc) => oc.doNothing())
      .returningAll();
    return (await auditedWrite(this.database, audit(key, write, 'created', null, changes, now))) !== undefined;
  }

  /** Compare-and-set from one of `from` to `to`; undefined when the identifier was in none of them. */
  async transition(key: IdentifierKey, from: readonly RegistrationState[], to: RegistrationState, changes: RegistryChanges = {}): Promise<IdentifierRecord | undefined> {
    const now = this.now().toISOString();
    const write = this.#db()
      .updateTable('identifier_registry')
      .set({ state: to, updated_at: now, ...columns(changes), prev_state: sql<string>`state`, audit_seq: sql<number>`audit_seq + 1` })
      .where((eb) => eb.and(keyColumns(key)))
      .where('state', 'in', [...from])
      .returningAll();
    const fromState = from.length === 1 ? (from[0] ?? null) : 'previous';
    const row = await auditedWrite<Row>(this.database, audit(key, write, 'transition', fromState, changes, now));
    return row === undefined ? undefined : recordOf(row);
  }

  /** Records an attempt that failed without changing the state; false when the identifier was no longer in `state`. */
  async note(key: IdentifierKey, state: RegistrationState, changes: RegistryChanges): Promise<boolean> {
    const now = this.now().toISOString();
    const write = this.#db()
      .updateTable('identifier_registry')
      .set({ updated_at: now, ...columns(changes), audit_seq: sql<number>`audit_seq + 1` })
      .where((eb) => eb.and(keyColumns(key)))
      .where('state', '=', state)
      .returningAll();
    return (await auditedWrite(this.database, audit(key, write, 'attempt', state, changes, now))) !== undefined;
  }

  /**
   * Claims a job's identifiers waiting for the platform (never tried yet, or whose retry is due),
   * leasing them for `leaseMs`: those to register first, then those to opt out, each in key
   * order. For each state one statement takes the first `limit` through the (job, state, key)
   * index and leases them: a job of 500,000 identifiers sent in batches of 10,000 had each batch
   * sort every identifier still waiting and lease them one statement at a time (0.5–0.8 s of
   * SQLite's event loop per batch). A row another worker leased meanwhile is left to it: the
   * lease is checked again by the update itself.
   */
  async claimJob(jobId: string, limit: number, leaseMs: number): Promise<IdentifierRecord[]> {
    const now = this.now();
    const nowText = now.toISOString();
    const until = new Date(now.getTime() + leaseMs).toISOString();
    return this.database.transaction<Schema, IdentifierRecord[]>(async (trx) => {
      const claimed: IdentifierRecord[] = [];
      for (const state of ['REQUESTED', 'OPTING_OUT'] as const) {
        const wanted = limit - claimed.length;
        if (wanted <= 0) break;
        const waiting = <Q extends WhereInterface<Schema, 'identifier_registry'>>(query: Q): Q =>
          query
            .where('job_id', '=', jobId)
            .where('state', '=', state)
            .where('lease_until', '<=', nowText)
            .where((eb) => eb.or([eb('attempts', '=', 0), eb('next_attempt_at', '<=', nowText)])) as Q;
        const first = waiting(trx.selectFrom('identifier_registry').select(['id_type', 'id_value', 'id_sub_value']))
          .orderBy('id_type')
          .orderBy('id_value')
          .orderBy('id_sub_value')
          .limit(wanted);
        const rows = await waiting(trx.updateTable('identifier_registry').set({ lease_until: until }))
          .where(({ eb, refTuple }) => eb(refTuple('id_type', 'id_value', 'id_sub_value'), 'in', first.$asTuple('id_type', 'id_value', 'id_sub_value')))
          .returningAll()
          .execute();
        rows.sort((a, b) => compareKeys(a, b));
        for (const row of rows) claimed.push(recordOf(row));
      }
      return claimed;
    });
  }

  /**
   * Claims identifiers whose platform call is due (REQUESTED or OPTING_OUT), leasing them for
   * `leaseMs`: the `limit` due the longest, whichever their state, in that order. Each claim
   * carries the lease it wrote, which releaseLease needs.
   *
   * Each state's due are taken through the index (state, next_attempt_at), oldest first, and the
   * search stops at `limit`: the first statements find how many of the oldest `limit` each state
   * holds, then one UPDATE per state leases that many, its conditions checked again on each row
   * (a replica that leased one meanwhile keeps it): on SQLite each through the key; PostgreSQL
   * joins the state's rows to the batch when it judges that cheaper. Both states in one search
   * would make SQLite and PostgreSQL sort every due identifier, and a lease per row one statement
   * each: with 300,000 due, 720–980 ms of SQLite's event loop per claim (PostgreSQL 2.6–3.4 s), at
   * every recovery pass (each 5 s).
   */
  async claimDue(limit: number, leaseMs: number): Promise<IdentifierRecord[]> {
    const now = this.now();
    const nowText = now.toISOString();
    const until = new Date(now.getTime() + leaseMs).toISOString();
    const states = ['REQUESTED', 'OPTING_OUT'] as const;
    return this.database.transaction<Schema, IdentifierRecord[]>(async (trx) => {
      const oldest = (state: (typeof states)[number], count: number) =>
        trx
          .selectFrom('identifier_registry')
          .select(['next_attempt_at', 'id_type', 'id_value', 'id_sub_value'])
          .where('state', '=', state)
          .where('lease_until', '<=', nowText)
          .where('next_attempt_at', '<=', nowText)
          .orderBy('next_attempt_at')
          .orderBy('id_type')
          .orderBy('id_value')
          .orderBy('id_sub_value')
          .limit(count);
      const candidates: Array<{ state: (typeof states)[number]; row: DueOrder }> = [];
      for (const state of states) for (const row of await oldest(state, limit).execute()) candidates.push({ state, row });
      const taken = candidates.sort((a, b) => compareDue(a.row, b.row)).slice(0, limit);
      const claimed: Row[] = [];
      for (const state of states) {
        const count = taken.filter((candidate) => candidate.state === state).length;
        if (count === 0) continue;
        // On PostgreSQL another replica's change can land between the sub-select and a row's
        // update: the state, the lease and the backoff are checked again on the row. SQLite runs
        // the statement alone, and there the state's term would make it walk the state's index
        // instead of taking each key through the primary key.
        const rows = await trx
          .updateTable('identifier_registry')
          .set({ lease_until: until })
          .where('lease_until', '<=', nowText)
          .$if(this.database.dialect === 'postgres', (update) => update.where('state', '=', state).where('next_attempt_at', '<=', nowText))
          .where(({ eb, refTuple }) => eb(refTuple('id_type', 'id_value', 'id_sub_value'), 'in', oldest(state, count).clearSelect().select(['id_type', 'id_value', 'id_sub_value']).$asTuple('id_type', 'id_value', 'id_sub_value')))
          .returningAll()
          .execute();
        claimed.push(...rows);
      }
      return claimed.sort(compareDue).map(recordOf);
    });
  }

  /**
   * Holds one identifier in `state` for its platform call for `leaseMs`: when nobody holds it, or
   * when the lease is still `held` (the caller's own, renewed). Undefined when another worker
   * holds it or it left `state`: the call is then theirs to make.
   */
  async lease(key: IdentifierKey, state: RegistrationState, leaseMs: number, held?: string): Promise<IdentifierRecord | undefined> {
    const now = this.now();
    const nowText = now.toISOString();
    const until = new Date(now.getTime() + leaseMs).toISOString();
    return this.database.transaction<Schema, IdentifierRecord | undefined>(async (trx) => {
      const row = await trx
        .updateTable('identifier_registry')
        .set({ lease_until: until })
        .where((eb) => eb.and(keyColumns(key)))
        .where('state', '=', state)
        .where((eb) => (held === undefined ? eb('lease_until', '<=', nowText) : eb.or([eb('lease_until', '<=', nowText), eb('lease_until', '=', held)])))
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : recordOf(row);
    });
  }

  /**
   * Ends a claim, only while the lease is still the claim's own: one that ran out and was
   * claimed by another worker meanwhile is that worker's, and stays.
   */
  async releaseLease(claim: IdentifierKey & { readonly leaseUntil: string }): Promise<void> {
    await this.database.transaction<Schema, void>(async (trx) => {
      await trx
        .updateTable('identifier_registry')
        .set({ lease_until: this.now().toISOString() })
        .where((eb) => eb.and(keyColumns(claim)))
        .where('lease_until', '=', claim.leaseUntil)
        .execute();
    });
  }

  /** How many of a job's identifiers still wait for the platform. */
  async waitingInJob(jobId: string): Promise<number> {
    const row = await this.#db()
      .selectFrom('identifier_registry')
      .select((eb) => eb.fn.countAll<string | number>().as('count'))
      .where('job_id', '=', jobId)
      .where('state', 'in', ['REQUESTED', 'OPTING_OUT'])
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /**
   * Every identifier, in key order, `limit` after `after`: a page read through the key, which
   * stops after it. Named by state (all of them) or by the key's terms one by one, SQLite took
   * each page through the state index and sorted the whole registry for it, 2.8–6.0 s of its
   * event loop per page of 500 among 1.3 million identifiers, 2,600 pages for the identifier
   * reconciliation, and PostgreSQL read the registry from its start for each page.
   */
  async inKeyOrder(limit: number, after?: IdentifierKey): Promise<IdentifierRecord[]> {
    let query = this.#db().selectFrom('identifier_registry').selectAll();
    if (after !== undefined) {
      query = query.where(({ eb, refTuple, tuple }) => eb(refTuple('id_type', 'id_value', 'id_sub_value'), '>', tuple(after.idType, after.idValue, after.idSubValue ?? '')));
    }
    const rows = await query.orderBy('id_type').orderBy('id_value').orderBy('id_sub_value').limit(limit).execute();
    return rows.map(recordOf);
  }
}

/** The primary key of an identifier's row (no sub-value is stored as ''). */
/**
 * The identifier's name in the audit trail: a digest of its type, value and sub-value, so that
 * the trail holds no phone number or account alias. Whoever knows the identifier can compute it.
 */
export function auditSubjectId(key: IdentifierKey): string {
  const digest = createHash('sha256').update(`${key.idType}/${key.idValue}/${key.idSubValue ?? ''}`).digest('hex');
  return `sha256:${digest.slice(0, 40)}`;
}

/** The identifier's audit row, written with its change; the trail names it by a digest, the row is found by its three key columns. */
function audit(key: IdentifierKey, write: OperationNodeSource, event: AuditEventKind, fromState: string | null | 'previous', changes: RegistryChanges, at: string) {
  return {
    subject: 'identifier' as const,
    subjectId: auditSubjectId(key),
    table: 'identifier_registry',
    key: sql`changed.id_type = ${key.idType} and changed.id_value = ${key.idValue} and changed.id_sub_value = ${key.idSubValue ?? ''}`,
    write,
    event,
    fromState,
    at,
    errorCode: changes.platformCode ?? null,
    institutionReference: sql`cast(null as varchar(128))`,
    flags: false,
  };
}

type DueOrder = Pick<Row, 'next_attempt_at' | 'id_type' | 'id_value' | 'id_sub_value'>;

/** The order in which due identifiers are claimed: due the longest first, then by key. */
function compareDue(a: DueOrder, b: DueOrder): number {
  if (a.next_attempt_at !== b.next_attempt_at) return a.next_attempt_at < b.next_attempt_at ? -1 : 1;
  return compareKeys(a, b);
}

/** Rows in the order of the registry's key. */
function compareKeys(a: Pick<Row, 'id_type' | 'id_value' | 'id_sub_value'>, b: Pick<Row, 'id_type' | 'id_value' | 'id_sub_value'>): number {
  for (const column of ['id_type', 'id_value', 'id_sub_value'] as const) {
    if (a[column] !== b[column]) return a[column] < b[column] ? -1 : 1;
  }
  return 0;
}

function keyColumns(key: IdentifierKey): { id_type: string; id_value: string; id_sub_value: string } {
  return { id_type: key.idType, id_value: key.idValue, id_sub_value: key.idSubValue ?? '' };
}

function columns(changes: RegistryChanges): Partial<Row> {
  return {
    ...(changes.accountId === undefined ? {} : { account_id: changes.accountId }),
    ...(changes.consent === undefined ? {} : { consent_by: changes.consent?.by ?? null, consent_at: changes.consent?.at ?? null, consent_channel: changes.consent?.channel ?? null }),
    ...(changes.platformCode === undefined ? {} : { platform_code: changes.platformCode }),
    ...(changes.platformMessage === undefined ? {} : { platform_message: changes.platformMessage?.slice(0, 256) ?? null }),
    ...(changes.attempts === undefined ? {} : { attempts: changes.attempts }),
    ...(changes.nextAttemptAt === undefined ? {} : { next_attempt_at: changes.nextAttemptAt }),
    ...(changes.lastError === undefined ? {} : { last_error: changes.lastError }),
    ...(changes.jobId === undefined ? {} : { job_id: changes.jobId }),
  };
}

const STATES: readonly RegistrationState[] = ['REQUESTED', 'REGISTERED', 'FAILED', 'OPTING_OUT', 'DEREGISTERED', 'OPT_OUT_FAILED'];

function recordOf(row: Row): IdentifierRecord {
  const state = STATES.find((candidate) => candidate === row.state);
  if (state === undefined || !isPartyIdType(row.id_type)) throw new Error(`identifier registry: stored ${row.id_type} in state ${row.state}`);
  return {
    idType: row.id_type,
    idValue: row.id_value,
    ...(row.id_sub_value === '' ? {} : { idSubValue: row.id_sub_value }),
    currency: row.currency,
    state,
    accountId: row.account_id,
    consent: row.consent_by === null || row.consent_at === null || row.consent_channel === null ? null : { by: row.consent_by, at: row.consent_at, channel: row.consent_channel },
    platformCode: row.platform_code,
    platformMessage: row.platform_message,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    jobId: row.job_id,
    updatedAt: row.updated_at,
    leaseUntil: row.lease_until,
  };
}
