import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDatabase } from '../adapters/store/sql-database.js';
import { withAuditCause } from '../audit/audit-cause.js';
import { ConnectorError, isConnectorError } from '../domain/errors.js';
import type { Logger } from '../ports/logger.js';
import { forEachConcurrently } from '../shared/bounded.js';
import type { IdentifierStore } from './identifier-store.js';
import type { IdentifierRegistration } from './registration.js';

/**
 * Bulk opt-in and opt-out: a file of identifiers (CSV with a header, or JSON lines) becomes a
 * job whose lines are all stored before any is processed, so a job cut off by a crash resumes
 * where it stopped. A job's id is derived from its action and content: uploading the same file
 * again is the same job, and a line that succeeded is never sent twice.
 */

export const identifierJobMigrations: readonly Migration[] = [
  {
    id: 'identifiers-002-jobs',
    async up(db) {
      await db.schema
        .createTable('identifier_jobs')
        .addColumn('job_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('action', 'varchar(16)', (c) => c.notNull())
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('identifier_job_lines')
        .addColumn('job_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('line', 'integer', (c) => c.notNull())
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('outcome', 'varchar(16)', (c) => c.notNull())
        .addColumn('id_type', 'varchar(16)')
        .addColumn('id_value', 'varchar(128)')
        .addColumn('id_sub_value', 'varchar(128)')
        .addColumn('message', 'varchar(256)')
        .addPrimaryKeyConstraint('identifier_job_lines_pk', ['job_id', 'line'])
        .execute();
    },
  },
  {
    // A job's pending lines, a page at a time in line order: found among the pending ones instead
    // of walking past every line already done, which on SQLite took 68–135 ms a page near the end
    // of a 500,000-line job (about 35 s of the event loop over the job) and as long at every
    // recovery pass of a job still waiting for the platform (a reviewer's measurement). Partial:
    // an index of all the lines by outcome made SQLite count a job's progress through it, a
    // third slower than through the key; this one holds the pending lines only, and serves a
    // query that names 'PENDING' in its text (pendingLines), which a bound value would not.
    id: 'identifiers-007-job-lines-pending',
    async up(db) {
      await db.schema
        .createIndex('identifier_job_lines_pending')
        .ifNotExists()
        .on('identifier_job_lines')
        .columns(['job_id', 'line'])
        .where(sql.ref('outcome'), '=', 'PENDING')
        .execute();
    },
  },
];

export type JobAction = 'register' | 'opt-out';

/** Lines of a job processed at once. */
const LINE_CONCURRENCY = 32;
/** A job's counted progress is given again for this many times what counting it cost... */
const VIEW_KEEP_PER_COST = 10;
/** ...and at most this long. */
const MAX_VIEW_KEEP_MS = 10_000;
/** Jobs whose counted progress a process keeps. */
const MAX_VIEWS_KEPT = 64;

interface Schema {
  identifier_registry: { id_type: string; id_value: string; id_sub_value: string; state: string; platform_code: string | null; platform_message: string | null; last_error: string | null };
  identifier_jobs: { job_id: string; action: string; total: number; state: string; created_at: string; updated_at: string };
  identifier_job_lines: {
    job_id: string;
    line: number;
    input: string;
    outcome: string;
    id_type: string | null;
    id_value: string | null;
    id_sub_value: string | null;
    message: string | null;
  };
}

/** One line of a file, as read: the identifier, the consent, or why it could not be read. */
export interface FileLine {
  readonly line: number;
  readonly input: string;
  readonly fields?: { idType: string; idValue: string; idSubValue?: string; consent: { by: string; at: string; channel: string } };
  readonly problem?: string;
}

const COLUMNS = ['idType', 'idValue', 'idSubValue', 'consentBy', 'consentAt', 'consentChannel'] as const;

/**
 * Reads a CSV file (first line the header `idType,idValue,idSubValue,consentBy,consentAt,consentChannel`,
 * in any order; no quoting: identifiers hold no commas) or JSON lines (one object per line with
 * the same names). Line numbers are the file's own, header included.
 */
export function readIdentifierFile(text: string, format: 'csv' | 'jsonl'): FileLine[] {
  const rows = text.split(/\r?\n/);
  const lines: FileLine[] = [];
  if (format === 'jsonl') {
    rows.forEach((input, index) => {
      if (input.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(input);
      } catch {
        lines.push({ line: index + 1, input, problem: 'not a JSON object' });
        return;
      }
      lines.push(lineOf(index + 1, input, typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}));
    });
    return lines;
  }
  const header = (rows[0] ?? '').split(',').map((name) => name.trim());
  const missing = ['idType', 'idValue', 'consentBy', 'consentAt', 'consentChannel'].filter((name) => !header.includes(name));
  if (missing.length > 0) return [{ line: 1, input: rows[0] ?? '', problem: `the header lacks ${missing.join(', ')} (columns: ${COLUMNS.join(',')})` }];
  rows.slice(1).forEach((input, index) => {
    if (input.trim() === '') return;
    const cells = input.split(',');
    const record: Record<string, unknown> = {};
    header.forEach((name, column) => {
      const cell = cells[column]?.trim();
      if (cell !== undefined && cell !== '') record[name] = cell;
    });
    if (cells.length !== header.length) return void lines.push({ line: index + 2, input, problem: `has ${cells.length} cells, the header ${header.length}` });
    lines.push(lineOf(index + 2, input, record));
  });
  return lines;
}

function lineOf(line: number, input: string, record: Record<string, unknown>): FileLine {
  const text = (name: string): string | undefined => (typeof record[name] === 'string' ? (record[name] as string) : undefined);
  const consent = typeof record['consent'] === 'object' && record['consent'] !== null ? (record['consent'] as Record<string, unknown>) : {};
  const consentText = (name: string, flat: string): string | undefined => (typeof consent[name] === 'string' ? (consent[name] as string) : text(flat));
  const idType = text('idType');
  const idValue = text('idValue');
  const by = consentText('by', 'consentBy');
  const at = consentText('at', 'consentAt');
  const channel = consentText('channel', 'consentChannel');
  if (idType === undefined || idValue === undefined) return { line, input, problem: 'needs idType and idValue' };
  if (by === undefined || at === undefined || channel === undefined || Number.isNaN(Date.parse(at))) return { line, input, problem: 'needs the consent: by, at (ISO 8601) and channel' };
  const idSubValue = text('idSubValue');
  // PostgreSQL stores no NUL in text: one such line made the whole upload fail there.
  if ([idType, idValue, idSubValue, by, at, channel].some((value) => value?.includes('\u0000') === true)) return { line, input, problem: 'holds a NUL character' };
  return { line, input, fields: { idType, idValue, ...(idSubValue === undefined ? {} : { idSubValue }), consent: { by, at, channel } } };
}

/** A line kept as read, its NUL characters written as the text \u0000 (PostgreSQL stores no NUL). */
function storedInput(input: string): string {
  return input.slice(0, 2000).replaceAll('\u0000', '\\u0000');
}

export interface JobView {
  readonly jobId: string;
  readonly action: JobAction;
  /** RUNNING until every line is read and the platform answered every identifier. */
  readonly state: 'RUNNING' | 'DONE';
  readonly total: number;
  readonly processed: number;
  /** Lines by outcome: invalid, refused (by the institution), and the registry states of the others. */
  readonly outcomes: Record<string, number>;
}

export interface LineResult {
  readonly line: number;
  readonly idType: string | null;
  readonly idValue: string | null;
  readonly idSubValue: string | null;
  readonly outcome: string;
  readonly message: string | null;
}

/** Lines of a job's report read per page. */
const LINE_PAGE_ROWS = 5_000;

export class IdentifierJobs {
  readonly #running = new Map<string, Promise<void>>();
  /** Each job's last counted progress, with when it was counted and what counting it cost. */
  readonly #counted = new Map<string, { readonly view: JobView; readonly at: number; readonly costMs: number }>();

  constructor(
    private readonly database: SqlDatabase,
    private readonly registration: IdentifierRegistration,
    private readonly store: IdentifierStore,
    private readonly now: () => Date,
    private readonly logger: Logger,
    /** How long a batch is reserved for the job while its platform call is under way (the switch call's timeout and a margin). */
    private readonly leaseMs: number,
  ) {}

  #db(): Kysely<Schema> {
    return this.database.reader<Schema>();
  }

  /** Stores the job and all its lines (once per content), then processes it in the background. */
  async submit(action: JobAction, text: string, format: 'csv' | 'jsonl'): Promise<JobView> {
    const jobId = createHash('sha256').update(`${action}\n${format}\n${text}`).digest('hex').slice(0, 32);
    const lines = readIdentifierFile(text, format);
    const now = this.now().toISOString();
    await this.database.transaction<Schema, void>(async (trx) => {
      const created = await trx
        .insertInto('identifier_jobs')
        .values({ job_id: jobId, action, total: lines.length, state: 'RUNNING', created_at: now, updated_at: now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(created.numInsertedOrUpdatedRows ?? 0n) === 0) return;
      for (let start = 0; start < lines.length; start += 500) {
        await trx
          .insertInto('identifier_job_lines')
          .values(
            lines.slice(start, start + 500).map((line) => ({
              job_id: jobId,
              line: line.line,
              // A readable line is kept as the fields read from it, so that it reads the same after a restart.
              input: line.fields === undefined ? storedInput(line.input) : JSON.stringify(line.fields),
              outcome: line.problem === undefined ? 'PENDING' : 'INVALID',
              id_type: line.fields?.idType.slice(0, 16) ?? null,
              id_value: line.fields?.idValue.slice(0, 128) ?? null,
              id_sub_value: line.fields?.idSubValue?.slice(0, 128) ?? null,
              message: line.problem ?? null,
            })),
          )
          .execute();
      }
    });
    this.resume(jobId);
    return this.view(jobId);
  }

  /**
   * Processes the job's pending lines unless this process is at it already. A job resumed by the
   * recovery pass (after a restart, an outage) makes its changes with the audit cause `recovery`;
   * one started by its upload, with the upload's.
   */
  resume(jobId: string, by: 'upload' | 'recovery' = 'upload'): void {
    if (this.#running.has(jobId)) return;
    const processed = by === 'recovery' ? withAuditCause({ cause: 'recovery' }, () => this.#process(jobId)) : this.#process(jobId);
    const work = processed
      .catch((error: unknown) => this.logger.error({ jobId, err: error }, 'identifier job stopped; resumed by the next pass'))
      .finally(() => this.#running.delete(jobId));
    this.#running.set(jobId, work);
  }

  /** The recovery pass: resumes every job not done (after a crash or a restart). */
  async resumeUnfinished(): Promise<number> {
    const jobs = await this.#db().selectFrom('identifier_jobs').select('job_id').where('state', '=', 'RUNNING').execute();
    for (const job of jobs) this.resume(job.job_id, 'recovery');
    return jobs.length;
  }

  /** Resolves when every job this process started has stopped. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  async #process(jobId: string): Promise<void> {
    const job = await this.#db().selectFrom('identifier_jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    if (job === undefined) return;
    const action = job.action === 'opt-out' ? 'opt-out' : 'register';
    for (;;) {
      const pending = await this.pendingLines(jobId, 500);
      if (pending.length === 0) break;
      // Lines in parallel: their transactions commit together (group commit), and one
      // identifier's lines take turns in the registration's own queue.
      await forEachConcurrently(pending, LINE_CONCURRENCY, (row) => this.#line(jobId, action, row));
    }
    // Every line read: the platform calls, batched per currency, each batch leased while it is sent.
    await this.registration.sendJob(jobId, this.leaseMs);
    // Done once the platform answered every identifier; until then the next pass resumes the job
    // (a batch still leased by a process that died, a retry after an outage).
    if ((await this.store.waitingInJob(jobId)) > 0) return;
    if ((await this.#waitingElsewhere(jobId)) > 0) return;
    await this.database.transaction<Schema, void>(async (trx) => {
      await trx.updateTable('identifier_jobs').set({ state: 'DONE', updated_at: this.now().toISOString() }).where('job_id', '=', jobId).execute();
    });
    this.logger.info({ jobId, action }, 'identifier job done');
  }

  /**
   * How many of the job's accepted lines name an identifier still waiting for the platform under
   * another request (an individual opt-in whose call went unanswered, another job): its line found
   * it REQUESTED or OPTING_OUT and left it to that request, whose job id it keeps, so the count by
   * job id misses it and the job was DONE with the identifier still waiting. This reads every line
   * of the job, so it runs only once the count by job id has come to nothing.
   */
  async #waitingElsewhere(jobId: string): Promise<number> {
    const row = await this.#joined(jobId)
      .select((eb) => eb.fn.countAll<string | number>().as('count'))
      .where('l.outcome', '=', 'ACCEPTED')
      .where('r.state', 'in', ['REQUESTED', 'OPTING_OUT'])
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /** The first `limit` of the job's lines not processed yet, in line order. */
  async pendingLines(jobId: string, limit: number): Promise<Array<Schema['identifier_job_lines']>> {
    // 'PENDING' written into the statement, for the partial index of identifiers-007.
    return this.#db().selectFrom('identifier_job_lines').selectAll().where('job_id', '=', jobId).where('outcome', '=', sql.lit('PENDING')).orderBy('line').limit(limit).execute();
  }

  /** One line: registered or opted out (the platform call deferred to the job's batches), or why not. */
  async #line(jobId: string, action: JobAction, row: Schema['identifier_job_lines']): Promise<void> {
    const fields = readIdentifierFile(row.input, 'jsonl')[0]?.fields;
    try {
      if (fields === undefined) throw new ConnectorError('ValidationFailed', 'unreadable line');
      const options = { jobId, deferPlatform: true };
      const record = action === 'register' ? await this.registration.register(fields, fields.consent, options) : await this.registration.deregister(fields, fields.consent, options);
      await this.#setLine(jobId, row.line, 'ACCEPTED', null, record);
    } catch (error) {
      // An outage, a store that failed (a dropped connection, a busy database) or a bug stops the
      // job here, the line still pending; the next pass resumes it. Only the connector's own
      // decisions on the line are its outcome: a store error had made it REFUSED for good.
      if (!isConnectorError(error) || error.category === 'unavailable' || error.category === 'timeout' || error.category === 'internal') throw error;
      const outcome = error.category === 'invalid' ? 'INVALID' : 'REFUSED';
      await this.#setLine(jobId, row.line, outcome, error.message.slice(0, 256));
    }
  }

  async #setLine(jobId: string, line: number, outcome: string, message: string | null, record?: { idType: string; idValue: string; idSubValue?: string }): Promise<void> {
    await this.database.transaction<Schema, void>(async (trx) => {
      await trx
        .updateTable('identifier_job_lines')
        .set({ outcome, message, ...(record === undefined ? {} : { id_type: record.idType, id_value: record.idValue, id_sub_value: record.idSubValue ?? null }) })
        .where('job_id', '=', jobId)
        .where('line', '=', line)
        .execute();
    });
  }

  /**
   * The job's progress. Counting it reads every line with its identifier's state (about 0.5 s
   * for 500,000 lines on SQLite, the event loop and so the payments waiting): a job's count is
   * kept, and given again, for ten times what it cost (at most 10 s), however often it is asked
   * for; a job that has changed state since is counted afresh.
   */
  async view(jobId: string): Promise<JobView> {
    const job = await this.#db().selectFrom('identifier_jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    if (job === undefined) throw new Error(`no job ${jobId}`);
    const state = job.state === 'DONE' ? 'DONE' : 'RUNNING';
    const at = this.now().getTime();
    const kept = this.#counted.get(jobId);
    if (kept !== undefined && kept.view.state === state && at >= kept.at && at - kept.at < Math.min(MAX_VIEW_KEEP_MS, kept.costMs * VIEW_KEEP_PER_COST)) return kept.view;
    const started = performance.now();
    const view = await this.#count(jobId, job.action === 'opt-out' ? 'opt-out' : 'register', state, job.total);
    this.#counted.delete(jobId);
    this.#counted.set(jobId, { view, at, costMs: performance.now() - started });
    // The oldest counts go first: a process sees few jobs, but it may run for months.
    for (const old of this.#counted.keys()) {
      if (this.#counted.size <= MAX_VIEWS_KEPT) break;
      this.#counted.delete(old);
    }
    return view;
  }

  async #count(jobId: string, action: JobAction, state: JobView['state'], total: number): Promise<JobView> {
    // One grouped query, however many lines.
    const groups = await this.#joined(jobId)
      .select(['l.outcome', 'r.state', (eb) => eb.fn.countAll<string | number>().as('count')])
      .groupBy(['l.outcome', 'r.state'])
      .execute();
    const outcomes: Record<string, number> = {};
    let processed = 0;
    for (const group of groups) {
      const outcome = lineOutcome(group.outcome, group.state);
      outcomes[outcome] = (outcomes[outcome] ?? 0) + Number(group.count);
      if (outcome !== 'PENDING') processed += Number(group.count);
    }
    return { jobId, action, state, total, processed, outcomes };
  }

  /**
   * Every line's result (its own outcome, or, once accepted, where its identifier stands in the
   * registry), in line order, a page at a time: a job of the largest upload (about 890,000
   * lines) is never held whole.
   */
  async *linePages(jobId: string, pageRows = LINE_PAGE_ROWS): AsyncGenerator<LineResult[]> {
    let after: number | undefined;
    for (;;) {
      const rows = await this.#joined(jobId)
        .select(['l.line', 'l.id_type', 'l.id_value', 'l.id_sub_value', 'l.outcome', 'l.message', 'r.state', 'r.platform_code', 'r.platform_message', 'r.last_error'])
        .$if(after !== undefined, (query) => query.where('l.line', '>', after ?? 0))
        .orderBy('l.line')
        .limit(pageRows)
        .execute();
      const last = rows.at(-1);
      if (last === undefined) return;
      yield rows.map((row) => {
        const accepted = row.outcome === 'ACCEPTED' && row.state !== null;
        const platform = row.platform_code === null ? row.last_error : `${row.platform_code} ${row.platform_message ?? ''}`.trim();
        return { line: row.line, idType: row.id_type, idValue: row.id_value, idSubValue: row.id_sub_value, outcome: lineOutcome(row.outcome, row.state), message: accepted ? platform : row.message };
      });
      if (rows.length < pageRows) return;
      after = last.line;
    }
  }

  /** A job's lines, each with its identifier's registry row when it has one. */
  #joined(jobId: string) {
    return this.#db()
      .selectFrom('identifier_job_lines as l')
      .leftJoin('identifier_registry as r', (join) =>
        join.onRef('r.id_type', '=', 'l.id_type').onRef('r.id_value', '=', 'l.id_value').on(sql<boolean>`r.id_sub_value = coalesce(l.id_sub_value, '')`),
      )
      .where('l.job_id', '=', jobId);
  }
}

/** An accepted line's outcome is its identifier's registry state; other lines keep their own. */
function lineOutcome(outcome: string, state: string | null): string {
  return outcome === 'ACCEPTED' ? (state ?? 'ACCEPTED') : outcome;
}
