import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDatabase } from '../../adapters/store/sql-database.js';
import { auditColumnsMigration, auditSeqFromTrailMigration } from '../../adapters/store/audit-trail.js';
import { AuditedTable, RECORD_COLUMNS } from '../../adapters/store/audited-table.js';
import { holdRow } from '../../adapters/store/lease-claim.js';
import { queryTemplate, slotRow, type Slots } from '../../adapters/store/query-template.js';
import { FX_CONVERSIONS, FX_QUOTES, stateCountsMigration } from '../../adapters/store/state-counts.js';

/**
 * The FX provider's durable records: conversion quotes (with the rate they locked) and
 * conversions (fxTransfers) with their state. Every change of a conversion's state is a
 * compare-and-set on the state it came from, so replicas and the recovery worker cannot both
 * take the same step.
 */

export const fxStoreMigrations: readonly Migration[] = [
  {
    id: 'fx-001-quotes-conversions',
    async up(db) {
      await db.schema
        .createTable('fx_quotes')
        .addColumn('conversion_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('conversion_request_id', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('amount_type', 'varchar(8)', (c) => c.notNull())
        .addColumn('source_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('source_amount', 'varchar(32)', (c) => c.notNull())
        .addColumn('target_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('target_amount', 'varchar(32)', (c) => c.notNull())
        .addColumn('rate', 'varchar(40)', (c) => c.notNull())
        .addColumn('expiration', 'varchar(30)', (c) => c.notNull())
        .addColumn('answer', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('fx_conversions')
        .addColumn('commit_request_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('source_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('source_amount', 'varchar(32)', (c) => c.notNull())
        .addColumn('target_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('target_amount', 'varchar(32)', (c) => c.notNull())
        .addColumn('expiration', 'varchar(30)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('lease_until', 'varchar(30)', (c) => c.notNull())
        .addColumn('needs_attention', 'integer', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('error_name', 'varchar(64)')
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('fx_conversions_due').on('fx_conversions').columns(['state', 'next_attempt_at']).execute();
    },
  },
  auditColumnsMigration('fx-002-audit-columns', 'fx_conversions'),
  auditSeqFromTrailMigration('fx-003-audit-seq-from-trail', 'fx_conversions', 'fx_conversion', 'commit_request_id'),
  // The conversions in each state and the quotes given, kept for the metrics on SQLite (state-counts.ts).
  stateCountsMigration('fx-004-conversion-counts', FX_CONVERSIONS),
  stateCountsMigration('fx-005-quote-counts', FX_QUOTES),
];

export type ConversionState = 'RESERVING' | 'RESERVED' | 'COMMITTING' | 'COMMITTED' | 'RELEASING' | 'ABORTED' | 'FAILED';

export interface FxQuoteRecord {
  readonly conversionId: string;
  readonly conversionRequestId: string;
  readonly requestHash: string;
  readonly amountType: string;
  readonly sourceCurrency: string;
  readonly sourceAmount: string;
  readonly targetCurrency: string;
  readonly targetAmount: string;
  readonly rate: string;
  readonly expiration: string;
  /** The answer sent, as JSON: a repeat gets exactly the same. */
  readonly answer: string;
}

/** A conversion claimed for recovery, with the lease its claim wrote. */
export type ClaimedConversion = ConversionRecord & { readonly leaseUntil: string };

export interface ConversionRecord {
  readonly commitRequestId: string;
  readonly requestHash: string;
  readonly state: ConversionState;
  readonly sourceCurrency: string;
  readonly sourceAmount: string;
  readonly targetCurrency: string;
  readonly targetAmount: string;
  readonly expiration: string;
  readonly attempts: number;
  readonly nextAttemptAt: string;
  readonly needsAttention: boolean;
  readonly lastError: string | null;
  readonly errorName: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** What an operator lists: flagged conversions, or those in one state; newest change first. */
export interface ConversionSearch {
  readonly needsAttention?: boolean;
  readonly state?: ConversionState;
  readonly limit: number;
}

interface Schema {
  fx_quotes: {
    conversion_id: string;
    conversion_request_id: string;
    request_hash: string;
    amount_type: string;
    source_currency: string;
    source_amount: string;
    target_currency: string;
    target_amount: string;
    rate: string;
    expiration: string;
    answer: string;
    created_at: string;
  };
  fx_conversions: {
    commit_request_id: string;
    request_hash: string;
    state: string;
    source_currency: string;
    source_amount: string;
    target_currency: string;
    target_amount: string;
    expiration: string;
    attempts: number;
    next_attempt_at: string;
    lease_until: string;
    needs_attention: number;
    last_error: string | null;
    error_name: string | null;
    created_at: string;
    updated_at: string;
    audit_seq: number;
    prev_state: string | null;
  };
}

export interface ConversionChanges {
  readonly attempts?: number;
  readonly nextAttemptAt?: string;
  readonly needsAttention?: boolean;
  readonly lastError?: string | null;
  readonly errorName?: string | null;
  /** See TransferChanges.keepContradiction (src/ports/store.ts). */
  readonly keepContradiction?: boolean;
  /**
   * The holder of the conversion's lease records its own outcome: the lease ends now (a hold its
   * call renewed, `hold`), so the next attempt is due by `nextAttemptAt`, not by the hold's end.
   */
  readonly freeLease?: boolean;
}

export class FxStore {
  readonly #database: SqlDatabase;
  readonly #now: () => Date;

  constructor(database: SqlDatabase, now: () => Date) {
    this.#database = database;
    this.#now = now;
  }

  #db(): Kysely<Schema> {
    return this.#database.reader<Schema>();
  }

  async findQuoteByRequest(conversionRequestId: string): Promise<FxQuoteRecord | undefined> {
    const row = await QUOTE_BY_REQUEST.first(this.#database.quickReader<Schema>(), { conversionRequestId });
    return row === undefined ? undefined : quoteOf(row);
  }

  async findQuote(conversionId: string): Promise<FxQuoteRecord | undefined> {
    const row = await QUOTE_BY_ID.first(this.#database.quickReader<Schema>(), { conversionId });
    return row === undefined ? undefined : quoteOf(row);
  }

  /** Inserts a quote, one statement on its own; false when its conversion or request id exists already (a repeat or a racing duplicate). */
  async insertQuote(quote: FxQuoteRecord): Promise<boolean> {
    const row: Schema['fx_quotes'] = {
      conversion_id: quote.conversionId,
      conversion_request_id: quote.conversionRequestId,
      request_hash: quote.requestHash,
      amount_type: quote.amountType,
      source_currency: quote.sourceCurrency,
      source_amount: quote.sourceAmount,
      target_currency: quote.targetCurrency,
      target_amount: quote.targetAmount,
      rate: quote.rate,
      expiration: quote.expiration,
      answer: quote.answer,
      created_at: this.#now().toISOString(),
    };
    return this.#database.autocommit<Schema, boolean>(async (db) => (await INSERT_QUOTE.changed(db, row)) === 1);
  }

  async findConversion(commitRequestId: string): Promise<ConversionRecord | undefined> {
    const row = await CONVERSION_BY_ID.first(this.#database.quickReader<Schema>(), { commitRequestId });
    return row === undefined ? undefined : conversionOf(row);
  }

  /**
   * Inserts a conversion in RESERVING (an fxTransfer to reserve), or in RELEASING (the hub's abort
   * arrived before its fxTransfer: nothing to reserve, the exchange told to refuse a late hold);
   * undefined when the commitRequestId is already stored.
   */
  async insertConversion(
    conversion: Omit<ConversionRecord, 'attempts' | 'needsAttention' | 'lastError' | 'errorName' | 'state' | 'createdAt' | 'updatedAt'>,
    state: 'RESERVING' | 'RELEASING' = 'RESERVING',
  ): Promise<ConversionRecord | undefined> {
    const now = this.#now().toISOString();
    const inserted = await CONVERSIONS.insert(
      this.#database,
      {
        commit_request_id: conversion.commitRequestId,
        request_hash: conversion.requestHash,
        state,
        source_currency: conversion.sourceCurrency,
        source_amount: conversion.sourceAmount,
        target_currency: conversion.targetCurrency,
        target_amount: conversion.targetAmount,
        expiration: conversion.expiration,
        attempts: 0,
        next_attempt_at: conversion.nextAttemptAt,
        lease_until: now,
        needs_attention: 0,
        last_error: null,
        error_name: null,
        created_at: now,
        updated_at: now,
        audit_seq: 1,
        prev_state: null,
      },
      now,
    );
    return inserted === undefined ? undefined : conversionOf(inserted);
  }

  /** Compare-and-set: moves the conversion from one of `from` to `to`; undefined when it was not in `from`. */
  async transition(commitRequestId: string, from: readonly ConversionState[], to: ConversionState, changes: ConversionChanges = {}): Promise<ConversionRecord | undefined> {
    const now = this.#now().toISOString();
    const set = { state: to, updated_at: now, ...columns(changes), ...(changes.freeLease === true ? { lease_until: now } : {}) };
    const keep = changes.keepContradiction === true ? { keepContradiction: true } : {};
    const row = await CONVERSIONS.update(this.#database, { key: commitRequestId, event: 'transition', from, set, at: now, errorCode: changes.errorName ?? null, ...keep });
    return row === undefined ? undefined : conversionOf(row);
  }

  /** Conversions for the operations server, newest change first. */
  async searchConversions(search: ConversionSearch): Promise<ConversionRecord[]> {
    let select = this.#database.listReader<Schema>().selectFrom('fx_conversions').selectAll();
    if (search.state !== undefined) select = select.where('state', '=', search.state);
    if (search.needsAttention !== undefined) select = select.where('needs_attention', '=', search.needsAttention ? 1 : 0);
    const rows = await select.orderBy('updated_at', 'desc').limit(search.limit).execute();
    return rows.map(conversionOf);
  }

  /** Records a failed attempt or a flag without changing the state. */
  async note(commitRequestId: string, state: ConversionState, changes: ConversionChanges): Promise<void> {
    const now = this.#now().toISOString();
    const set = { updated_at: now, ...columns(changes), ...(changes.freeLease === true ? { lease_until: now } : {}) };
    const keep = changes.keepContradiction === true ? { keepContradiction: true } : {};
    await CONVERSIONS.update(this.#database, { key: commitRequestId, event: 'attempt', from: [state], set, at: now, errorCode: changes.errorName ?? null, ...keep });
  }

  /**
   * Keeps an intent its holder is still working on (an exchange call under way) from the recovery
   * worker until `until`, if it is still in `state`; a lease reaching further stays.
   */
  hold(commitRequestId: string, state: ConversionState, until: string): Promise<boolean> {
    return holdRow(this.#database, 'fx_conversions', 'commit_request_id', commitRequestId, state, until);
  }

  /**
   * Claims up to `limit` conversions due for recovery (an intent whose attempt is due, or a
   * reservation past its expiration not yet flagged), leasing each for `leaseMs`. Each claim
   * carries the lease it wrote, which releaseLease needs.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedConversion[]> {
    const now = this.#now();
    const nowText = now.toISOString();
    const leaseUntil = new Date(now.getTime() + leaseMs).toISOString();
    return this.#database.transaction<Schema, ClaimedConversion[]>(async (trx) => {
      const rows = await trx
        .selectFrom('fx_conversions')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('state', 'in', ['RESERVING', 'COMMITTING', 'RELEASING']), eb('next_attempt_at', '<=', nowText)]),
            eb.and([eb('state', '=', 'RESERVED'), eb('expiration', '<=', nowText), eb('needs_attention', '=', 0)]),
          ]),
        )
        .where('lease_until', '<=', nowText)
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute();
      const claimed: ClaimedConversion[] = [];
      for (const row of rows) {
        const result = await trx
          .updateTable('fx_conversions')
          .set({ lease_until: leaseUntil })
          .where('commit_request_id', '=', row.commit_request_id)
          .where('lease_until', '=', row.lease_until)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) === 1) claimed.push({ ...conversionOf(row), leaseUntil });
      }
      return claimed;
    });
  }

  /**
   * Ends a claim: the conversion's next attempt is due by its own next_attempt_at again. Only
   * while the lease is still the claim's own: one that ran out and was claimed by another worker
   * meanwhile is that worker's, and stays.
   */
  async releaseLease(claim: Pick<ClaimedConversion, 'commitRequestId' | 'leaseUntil'>): Promise<void> {
    await this.#database.transaction<Schema, void>(async (trx) => {
      await trx
        .updateTable('fx_conversions')
        .set({ lease_until: this.#now().toISOString() })
        .where('commit_request_id', '=', claim.commitRequestId)
        .where('lease_until', '=', claim.leaseUntil)
        .execute();
    });
  }
}

function columns(changes: ConversionChanges): Partial<Schema['fx_conversions']> {
  return {
    ...(changes.attempts === undefined ? {} : { attempts: changes.attempts }),
    ...(changes.nextAttemptAt === undefined ? {} : { next_attempt_at: changes.nextAttemptAt }),
    ...(changes.needsAttention === undefined ? {} : { needs_attention: changes.needsAttention ? 1 : 0 }),
    ...(changes.lastError === undefined ? {} : { last_error: changes.lastError }),
    ...(changes.errorName === undefined ? {} : { error_name: changes.errorName }),
  };
}

function quoteOf(row: Schema['fx_quotes']): FxQuoteRecord {
  return {
    conversionId: row.conversion_id,
    conversionRequestId: row.conversion_request_id,
    requestHash: row.request_hash,
    amountType: row.amount_type,
    sourceCurrency: row.source_currency,
    sourceAmount: row.source_amount,
    targetCurrency: row.target_currency,
    targetAmount: row.target_amount,
    rate: row.rate,
    expiration: row.expiration,
    answer: row.answer,
  };
}

const STATES: readonly ConversionState[] = ['RESERVING', 'RESERVED', 'COMMITTING', 'COMMITTED', 'RELEASING', 'ABORTED', 'FAILED'];

function conversionOf(row: Schema['fx_conversions']): ConversionRecord {
  const state = STATES.find((candidate) => candidate === row.state);
  if (state === undefined) throw new Error(`fx: stored conversion ${row.commit_request_id} is in state ${row.state}`);
  return {
    commitRequestId: row.commit_request_id,
    requestHash: row.request_hash,
    state,
    sourceCurrency: row.source_currency,
    sourceAmount: row.source_amount,
    targetCurrency: row.target_currency,
    targetAmount: row.target_amount,
    expiration: row.expiration,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    needsAttention: Number(row.needs_attention) === 1,
    lastError: row.last_error,
    errorName: row.error_name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const CONVERSION_COLUMNS: Readonly<Record<keyof Schema['fx_conversions'], true>> = {
  ...RECORD_COLUMNS,
  commit_request_id: true,
  request_hash: true,
  source_currency: true,
  source_amount: true,
  target_currency: true,
  target_amount: true,
  expiration: true,
  error_name: true,
};

/** The exchange books a conversion under its commitRequestId. */
const CONVERSIONS = new AuditedTable<Schema['fx_conversions']>({
  subject: 'fx_conversion',
  table: 'fx_conversions',
  key: 'commit_request_id',
  columns: CONVERSION_COLUMNS,
  conflict: 'any',
  institutionReference: sql`changed.commit_request_id`,
});

const QUOTE_COLUMNS: Readonly<Record<keyof Schema['fx_quotes'], true>> = {
  conversion_id: true,
  conversion_request_id: true,
  request_hash: true,
  amount_type: true,
  source_currency: true,
  source_amount: true,
  target_currency: true,
  target_amount: true,
  rate: true,
  expiration: true,
  answer: true,
  created_at: true,
};

/** Does nothing when the conversion id or the request id is known already. */
const INSERT_QUOTE = queryTemplate('insert fx quote', (db: Kysely<Schema>, p: Slots<Schema['fx_quotes']>) =>
  db
    .insertInto('fx_quotes')
    .values(slotRow(p, QUOTE_COLUMNS))
    .onConflict((oc) => oc.doNothing()),
);

const QUOTE_BY_REQUEST = queryTemplate('find fx quote by request', (db: Kysely<Schema>, p: Slots<{ conversionRequestId: string }>) =>
  db.selectFrom('fx_quotes').selectAll().where('conversion_request_id', '=', p.conversionRequestId),
);

const QUOTE_BY_ID = queryTemplate('find fx quote', (db: Kysely<Schema>, p: Slots<{ conversionId: string }>) =>
  db.selectFrom('fx_quotes').selectAll().where('conversion_id', '=', p.conversionId),
);

const CONVERSION_BY_ID = queryTemplate('find fx conversion', (db: Kysely<Schema>, p: Slots<{ commitRequestId: string }>) =>
  db.selectFrom('fx_conversions').selectAll().where('commit_request_id', '=', p.commitRequestId),
);
