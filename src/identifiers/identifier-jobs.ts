import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDatabase } from '../adapters/store/sql-database.js';
import { withAuditCause } from '../audit/audit-cause.js';
import { ConnectorError, isConnectorError } from '../domain/errors.js';
import { consentProblem } from '../domain/identifier-rules.js';
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
  {
    // A file uploaded again once its job is DONE is a new run of it (a job of its own, run 2, 3...):
    // its content's digest and run number, the first run's id being the digest itself. And how often
    // a line's processing failed for no decision of the connector's (a store error, a bug): one
    // that failed on every pass had kept its job from ever being DONE.
    id: 'identifiers-008-job-runs-line-attempts',
    async up(db) {
      await db.schema.alterTable('identifier_jobs').addColumn('content_id', 'varchar(64)').execute();
      await db.schema.alterTable('identifier_jobs').addColumn('run', 'integer', (c) => c.notNull().defaultTo(1)).execute();
      await sql`update identifier_jobs set content_id = job_id`.execute(db);
      await db.schema.createIndex('identifier_jobs_content_run').ifNotExists().on('identifier_jobs').columns(['content_id', 'run']).execute();
      await db.schema.alterTable('identifier_job_lines').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
];

export type JobAction = 'register' | 'opt-out';

/** Lines of a job processed at once. */
const LINE_CONCURRENCY = 32;
/** A line whose processing failed this many times (passes) for no decision of the connector's is FAILED. */
const MAX_LINE_ATTEMPTS = 5;
/** A job's counted progress is given again for this many times what counting it cost... */
const VIEW_KEEP_PER_COST = 10;
/** ...and at most this long. */
const MAX_VIEW_KEEP_MS = 10_000;
/** Jobs whose counted progress a process keeps. */
const MAX_VIEWS_KEPT = 64;

interface Schema {
  identifier_registry: { id_type: string; id_value: string; id_sub_value: string; state: string; platform_code: string | null; platform_message: string | null; last_error: string | null };
  identifier_jobs: { job_id: string; content_id: string | null; run: number; action: string; total: number; state: string; created_at: string; updated_at: string };
  identifier_job_lines: {
    job_id: string;
    line: number;
    input: string;
    outcome: string;
    id_type: string | null;
    id_value: string | null;
    id_sub_value: string | null;
    message: string | null;
    attempts: number;
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
  // A byte order mark (as spreadsheet programs write) is no part of the first line: JSON.parse refused it.
  const rows = text.replace(/^\uFEFF/, '').split(/\r?\n/);
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
  const nested = record['consent'];
  if (nested !== undefined && (typeof nested !== 'object' || nested === null || Array.isArray(nested))) return { line, input, problem: 'consent must be an object' };
  const consent = (nested ?? {}) as Record<string, unknown>;
  // Each field with the name it has in the line: a consent's in its object, or flat.
  const field = (name: string): readonly [string, unknown] => [name, record[name]];
  const consentField = (name: string, flat: string): readonly [string, unknown] => (consent[name] === undefined ? [flat, record[flat]] : [`consent.${name}`, consent[name]]);
  const fields = { idType: field('idType'), idValue: field('idValue'), idSubValue: field('idSubValue'), by: consentField('by', 'consentBy'), at: consentField('at', 'consentAt'), channel: consentField('channel', 'consentChannel') };
  // A field that is there but not text is refused, as the individual API refuses it: a number had
  // been dropped silently, and the identifier without it registered.
  const notText = Object.values(fields).find(([, value]) => value !== undefined && typeof value !== 'string');
  if (notText !== undefined) return { line, input, problem: `${notText[0]} must be text` };
  const text = ([, value]: readonly [string, unknown]): string | undefined => (typeof value === 'string' ? value : undefined);
  const idType = text(fields.idType);
  const idValue = text(fields.idValue);
  const idSubValue = text(fields.idSubValue);
  const by = text(fields.by);
  const at = text(fields.at);
  const channel = text(fields.channel);
  if (idType === undefined || idValue === undefined) return { line, input, problem: 'needs idType and idValue' };
  if (by === undefined || at === undefined || channel === undefined) return { line, input, problem: 'needs the consent: by, at (ISO 8601) and channel' };
  // PostgreSQL stores no NUL in text: one such line made the whole upload fail there.
  if ([idType, idValue, idSubValue, by, at, channel].some((value) => value?.includes('\u0000') === true)) return { line, input, problem: 'holds a NUL character' };
  const problem = consentProblem({ by, at, channel }, { by: fields.by[0], at: fields.at[0], channel: fields.channel[0] });
  if (problem !== undefined) return { line, input, problem };
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
  /** Lines by outcome: invalid, refused (by the institution), failed (not processed after 5 attempts), and the registry states of the others. */
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
  /** Aborted by stop(): a job ends between two pages of lines or two platform calls. */
  readonly #stop = new AbortController();
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

  /**
   * Stores the job and all its lines, then processes it in the background. The same file again
   * while its job is unfinished is that job (a client's retry does nothing twice); once it is
   * DONE, a new run of it, whose lines are worked again: an opt-in opted out since registers again,
   * a line refused or failed is asked again, and what is registered is not sent again.
   */
  async submit(action: JobAction, text: string, format: 'csv' | 'jsonl'): Promise<JobView> {
    const contentId = createHash('sha256').update(`${action}\n${format}\n${text}`).digest('hex').slice(0, 32);
    const lines = readIdentifierFile(text, format);
    const now = this.now().toISOString();
    const jobId = await this.database.transaction<Schema, string>(async (trx) => {
      // A job a replica of the previous release stored (it has no content_id) is this file's run 1:
      // its id was the content's, as run 1's is.
      const last = await trx
        .selectFrom('identifier_jobs')
        .select(['job_id', 'run', 'state'])
        .where((eb) => eb.or([eb('content_id', '=', contentId), eb.and([eb('content_id', 'is', null), eb('job_id', '=', contentId)])]))
        .orderBy('run', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (last !== undefined && last.state !== 'DONE') return last.job_id;
      const run = (last?.run ?? 0) + 1;
      // Run n's id follows from the content and n: two replicas given the same file at once make one run.
      const id = run === 1 ? contentId : createHash('sha256').update(`${contentId}\nrun ${run}`).digest('hex').slice(0, 32);
      const created = await trx
        .insertInto('identifier_jobs')
        .values({ job_id: id, content_id: contentId, run, action, total: lines.length, state: 'RUNNING', created_at: now, updated_at: now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(created.numInsertedOrUpdatedRows ?? 0n) === 0) return id;
      for (let start = 0; start < lines.length; start += 500) {
        await trx
          .insertInto('identifier_job_lines')
          .values(
            lines.slice(start, start + 500).map((line) => ({
              job_id: id,
              line: line.line,
              // A readable line is kept as the fields read from it, so that it reads the same after a restart.
              input: line.fields === undefined ? storedInput(line.input) : JSON.stringify(line.fields),
              outcome: line.problem === undefined ? 'PENDING' : 'INVALID',
              id_type: line.fields?.idType.slice(0, 16) ?? null,
              id_value: line.fields?.idValue.slice(0, 128) ?? null,
              id_sub_value: line.fields?.idSubValue?.slice(0, 128) ?? null,
              message: line.problem ?? null,
              attempts: 0,
            })),
          )
          .execute();
      }
      return id;
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
    if (this.#running.has(jobId) || this.#stop.signal.aborted) return;
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

  /**
   * Ends every job between two pages of lines or two platform calls (the page or call under way
   * finished) and resolves once they have ended. Their lines stay pending and their identifiers
   * due: a job left RUNNING is resumed by the recovery pass of the next start or of another replica.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.idle();
  }

  /** How many jobs this process is working on. */
  get running(): number {
    return this.#running.size;
  }

  /** Resolves when every job this process started has stopped. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  async #process(jobId: string): Promise<void> {
    const job = await this.#db().selectFrom('identifier_jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    if (job === undefined) return;
    const action = job.action === 'opt-out' ? 'opt-out' : 'register';
    // Each pending line once per pass, in line order: a line that failed is left for the next pass.
    const stop = this.#stop.signal;
    for (let after = 0; ; ) {
      if (stop.aborted) return this.#stoppedMidway(jobId);
      const pending = await this.pendingLines(jobId, 500, after);
      const last = pending.at(-1);
      if (last === undefined) break;
      // Lines in parallel: their transactions commit together (group commit), and one
      // identifier's lines take turns in the registration's own queue.
      await forEachConcurrently(pending, LINE_CONCURRENCY, (row) => this.#line(jobId, action, row));
      after = last.line;
    }
    // Every line read: the platform calls, batched per currency, each batch leased while it is sent.
    await this.registration.sendJob(jobId, this.leaseMs, stop);
    if (stop.aborted) return this.#stoppedMidway(jobId);
    // A line whose processing failed waits for the next pass.
    if ((await this.pendingLines(jobId, 1)).length > 0) return;
    // Done once the platform answered every identifier; until then the next pass resumes the job
    // (a batch still leased by a process that died, a retry after an outage).
    if ((await this.store.waitingInJob(jobId)) > 0) return;
    if ((await this.#waitingElsewhere(jobId)) > 0) return;
    await this.database.transaction<Schema, void>(async (trx) => {
      await trx.updateTable('identifier_jobs').set({ state: 'DONE', updated_at: this.now().toISOString() }).where('job_id', '=', jobId).execute();
    });
    this.logger.info({ jobId, action }, 'identifier job done');
  }

  #stoppedMidway(jobId: string): void {
    this.logger.info({ jobId }, 'identifier job ended by the stop; resumed by the next start or another replica');
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

  /** The first `limit` of the job's lines not processed yet after line `after`, in line order. */
  async pendingLines(jobId: string, limit: number, after = 0): Promise<Array<Schema['identifier_job_lines']>> {
    // 'PENDING' written into the statement, for the partial index of identifiers-007.
    return this.#db()
      .selectFrom('identifier_job_lines')
      .selectAll()
      .where('job_id', '=', jobId)
      .where('outcome', '=', sql.lit('PENDING'))
      .where('line', '>', after)
      .orderBy('line')
      .limit(limit)
      .execute();
  }

  /** One line: registered or opted out (the platform call deferred to the job's batches), or why not. */
  async #line(jobId: string, action: JobAction, row: Schema['identifier_job_lines']): Promise<void> {
    const read = readIdentifierFile(row.input, 'jsonl')[0];
    try {
      if (read?.fields === undefined) throw new ConnectorError('ValidationFailed', read?.problem ?? 'unreadable line');
      const fields = read.fields;
      const options = { jobId, deferPlatform: true };
      const record = action === 'register' ? await this.registration.register(fields, fields.consent, options) : await this.registration.deregister(fields, fields.consent, options);
      await this.#setLine(jobId, row.line, 'ACCEPTED', null, record);
    } catch (error) {
      // An outage (of the institution, the switch connector) stops the job here, the line still
      // pending; the next pass resumes it.
      if (isConnectorError(error) && (error.category === 'unavailable' || error.category === 'timeout')) throw error;
      // The connector's own decisions on the line are its outcome.
      if (isConnectorError(error) && error.category !== 'internal') return this.#setLine(jobId, row.line, error.category === 'invalid' ? 'INVALID' : 'REFUSED', error.message.slice(0, 256));
      await this.#failed(jobId, row, error);
    }
  }

  /**
   * A line whose processing failed for no decision of the connector's: a store that failed (a
   * dropped connection, a busy database, a value it refused) or a bug. It stays pending for the
   * next pass, the rest of the job going on; after MAX_LINE_ATTEMPTS passes it is FAILED with the
   * error, so that one line can no longer keep its job from ever being DONE. A store that cannot
   * record even that stops the job (the error is thrown), as an outage does.
   */
  async #failed(jobId: string, row: Schema['identifier_job_lines'], error: unknown): Promise<void> {
    const attempts = row.attempts + 1;
    const reason = error instanceof Error ? error.message : String(error);
    this.logger.warn({ jobId, line: row.line, attempts, err: error }, 'identifier job line failed; tried again at the next pass');
    if (attempts >= MAX_LINE_ATTEMPTS) {
      // Only while the line is still pending: another replica working the same job may have
      // finished it meanwhile, and its outcome stands.
      const message = `not processed after ${attempts} attempts: ${reason}`.slice(0, 256);
      await this.database.transaction<Schema, void>(async (trx) => {
        await trx.updateTable('identifier_job_lines').set({ outcome: 'FAILED', message }).where('job_id', '=', jobId).where('line', '=', row.line).where('outcome', '=', 'PENDING').execute();
      });
      return;
    }
    await this.database.transaction<Schema, void>(async (trx) => {
      await trx.updateTable('identifier_job_lines').set({ attempts }).where('job_id', '=', jobId).where('line', '=', row.line).where('outcome', '=', 'PENDING').execute();
    });
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
    if (job === undefined) throw new ConnectorError('IdentifierJobNotFound', `no identifier job ${jobId}`);
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
