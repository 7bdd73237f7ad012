import { sql, type Kysely, type Selectable } from 'kysely';
import { AssertionFailed } from '../../domain/errors.js';
import { INBOUND_TRANSFER_STATES, parseInboundTransferState, type InboundTransferState } from '../../domain/inbound-transfer.js';
import type {
  ChangedPeriod,
  InboundStore,
  InsertResult,
  NewTransfer,
  OperatorGuard,
  RecordSearch,
  QuoteRecord,
  QuoteResponseBody,
  TransferChanges,
  TransferInsertResult,
  TransferRecord,
} from '../../ports/store.js';
import { AuditedTable, RECORD_COLUMNS } from './audited-table.js';
import { claimDueKeys, holdRow, releaseClaims } from './lease-claim.js';
import { visitChanged } from './changed-pages.js';
import { amountTypeOf, idTypeOf } from './stored-values.js';
import { queryTemplate, slotRow, type Slots } from './query-template.js';
import type { AnySchema, SqlDatabase } from './sql-database.js';

interface QuotesTable {
  quote_id: string;
  transaction_id: string;
  request_hash: string;
  amount_type: string;
  amount: string;
  currency: string;
  transfer_amount: string;
  payee_receive_amount: string;
  fee: string;
  payee_id_type: string;
  payee_id_value: string;
  payee_id_sub_value: string | null;
  expiration: string;
  payer_keys: string;
  response: string;
  created_at: string;
}

interface InboundTransfersTable {
  transfer_id: string;
  quote_id: string;
  request_hash: string;
  state: string;
  amount_type: string;
  transaction_type: string;
  amount: string;
  currency: string;
  transfer_amount: string;
  payee_receive_amount: string;
  payer_id_type: string;
  payer_id_value: string;
  payee_id_type: string;
  payee_id_value: string;
  payee_id_sub_value: string | null;
  payee_account_id: string;
  completed_timestamp: string | null;
  notified_state: string | null;
  error_name: string | null;
  error_message: string | null;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
  needs_attention: number;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  audit_seq: number;
  prev_state: string | null;
}

interface Schema {
  quotes: QuotesTable;
  inbound_transfers: InboundTransfersTable;
}

type Db = Kysely<Schema>;

/** The inbound store on any SqlDatabase (SQLite or PostgreSQL): one query layer for both. */
export class SqlInboundStore implements InboundStore {
  constructor(
    private readonly database: SqlDatabase,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** One statement: committed on its own on PostgreSQL (one round trip), group-committed on SQLite. */
  async insertQuote(quote: QuoteRecord): Promise<InsertResult<QuoteRecord>> {
    const inserted = await this.database.autocommit<Schema, boolean>(async (db) => (await INSERT_QUOTE.changed(db, quoteRow(quote))) === 1);
    if (inserted) return { record: quote, created: true };
    const existing = await this.findQuote(quote.quoteId);
    if (existing === undefined) throw new AssertionFailed(`quote ${quote.quoteId} neither inserted nor found`);
    return { record: existing, created: false };
  }

  async findQuote(quoteId: string): Promise<QuoteRecord | undefined> {
    const row = await FIND_QUOTE.first(this.database.quickReader<Schema>(), { quoteId });
    return row === undefined ? undefined : quoteFromRow(row);
  }

  /**
   * One statement, as before the quote rule: an insert that breaks either unique rule (the
   * transferId, or the quote held once: migration 008) does nothing, and only then is the
   * transferId read, which tells the two apart.
   */
  async insertTransfer(transfer: NewTransfer): Promise<TransferInsertResult> {
    const inserted = await TRANSFERS.insert(this.database, newTransferRow(transfer), transfer.createdAt);
    if (inserted !== undefined) return { record: transferFromRow(inserted), created: true };
    const existing = await this.findTransfer(transfer.transferId);
    // No row under this transferId, so the conflict was the quote's (no row is ever deleted).
    if (existing === undefined) return { created: false, quoteTaken: true };
    return { record: existing, created: false };
  }

  async findTransfer(transferId: string): Promise<TransferRecord | undefined> {
    const row = await FIND_TRANSFER.first(this.database.quickReader<Schema>(), { transferId });
    return row === undefined ? undefined : transferFromRow(row);
  }

  async transitionTransfer(
    transferId: string,
    from: readonly InboundTransferState[],
    to: InboundTransferState,
    changes: TransferChanges = {},
    guard?: OperatorGuard,
  ): Promise<TransferRecord | undefined> {
    const step = { key: transferId, from, to, set: changeColumns(changes), at: this.now().toISOString(), errorCode: errorCodeOf(changes), guard, keepContradiction: changes.keepContradiction === true };
    const row = await TRANSFERS.transitionReleasing(this.database, step);
    return row === undefined ? undefined : transferFromRow(row);
  }

  async recordTransferAttempt(transferId: string, state: InboundTransferState, changes: TransferChanges): Promise<boolean> {
    return TRANSFERS.recordAttemptReleasing(this.database, transferId, state, changeColumns(changes), this.now().toISOString(), errorCodeOf(changes), changes.keepContradiction === true);
  }

  async scheduleTransferNow(transferId: string, state: InboundTransferState, now: string): Promise<boolean> {
    return TRANSFERS.scheduleNow(this.database, transferId, state, now);
  }

  holdTransfer(transferId: string, state: InboundTransferState, until: string): Promise<boolean> {
    return holdRow(this.database, 'inbound_transfers', 'transfer_id', transferId, state, until);
  }

  releaseTransferClaims(transferIds: readonly string[], leaseUntil: string): Promise<void> {
    return releaseClaims(this.database, 'inbound_transfers', 'transfer_id', transferIds, leaseUntil);
  }

  async searchTransfers(search: RecordSearch): Promise<TransferRecord[]> {
    let select = this.database.listReader<Schema>().selectFrom('inbound_transfers').selectAll();
    if (search.id !== undefined) select = select.where('transfer_id', '=', search.id);
    if (search.states !== undefined && search.states.length > 0) select = select.where('state', 'in', [...search.states]);
    if (search.createdFrom !== undefined) select = select.where('created_at', '>=', search.createdFrom);
    if (search.createdTo !== undefined) select = select.where('created_at', '<', search.createdTo);
    if (search.needsAttention !== undefined) select = select.where('needs_attention', '=', search.needsAttention ? 1 : 0);
    const rows = await select.orderBy('created_at', 'desc').limit(search.limit).execute();
    return rows.map(transferFromRow);
  }

  visitChangedTransfers(period: ChangedPeriod, visit: (page: readonly TransferRecord[]) => void): Promise<void> {
    return visitChanged(this.database, { table: 'inbound_transfers', key: 'transfer_id', states: INBOUND_TRANSFER_STATES }, period, (rows) => visit(rows.map((row) => transferFromRow(row as Selectable<InboundTransfersTable>))));
  }

  claimDueTransfers(options: {
    readonly states: readonly InboundTransferState[];
    readonly now: string;
    readonly staleBefore: string;
    readonly leaseUntil: string;
    readonly limit: number;
  }): Promise<TransferRecord[]> {
    return this.database.transaction<Schema, TransferRecord[]>(async (trx) => {
      const ids = await claimDueKeys(trx as unknown as Kysely<AnySchema>, this.database.dialect, 'inbound_transfers', 'transfer_id', options);
      if (ids.length === 0) return [];
      const rows = await trx.selectFrom('inbound_transfers').selectAll().where('transfer_id', 'in', ids).orderBy('updated_at').execute();
      return rows.map(transferFromRow);
    });
  }
}

const QUOTE_COLUMNS: Readonly<Record<keyof QuotesTable, true>> = {
  quote_id: true,
  transaction_id: true,
  request_hash: true,
  amount_type: true,
  amount: true,
  currency: true,
  transfer_amount: true,
  payee_receive_amount: true,
  fee: true,
  payee_id_type: true,
  payee_id_value: true,
  payee_id_sub_value: true,
  expiration: true,
  payer_keys: true,
  response: true,
  created_at: true,
};

const TRANSFER_COLUMNS: Readonly<Record<keyof InboundTransfersTable, true>> = {
  ...RECORD_COLUMNS,
  transfer_id: true,
  quote_id: true,
  request_hash: true,
  amount_type: true,
  transaction_type: true,
  amount: true,
  currency: true,
  transfer_amount: true,
  payee_receive_amount: true,
  payer_id_type: true,
  payer_id_value: true,
  payee_id_type: true,
  payee_id_value: true,
  payee_id_sub_value: true,
  payee_account_id: true,
  completed_timestamp: true,
  notified_state: true,
  error_name: true,
  error_message: true,
};

const INSERT_QUOTE = queryTemplate('insert quote', (db: Db, p: Slots<QuotesTable>) =>
  db
    .insertInto('quotes')
    .values(slotRow(p, QUOTE_COLUMNS))
    .onConflict((oc) => oc.column('quote_id').doNothing()),
);

const FIND_QUOTE = queryTemplate('find quote', (db: Db, p: Slots<{ quoteId: string }>) => db.selectFrom('quotes').selectAll().where('quote_id', '=', p.quoteId));

const FIND_TRANSFER = queryTemplate('find transfer', (db: Db, p: Slots<{ transferId: string }>) =>
  db.selectFrom('inbound_transfers').selectAll().where('transfer_id', '=', p.transferId),
);

/**
 * The institution knows an incoming transfer by its transferId (every adapter derives its
 * reference from it). An insert does nothing on a known transferId and on a quote already held
 * (the partial unique index of migration 008), hence `any`.
 */
const TRANSFERS = new AuditedTable<InboundTransfersTable>({
  subject: 'incoming_transfer',
  table: 'inbound_transfers',
  key: 'transfer_id',
  columns: TRANSFER_COLUMNS,
  conflict: 'any',
  institutionReference: sql`changed.transfer_id`,
});

function errorCodeOf(changes: TransferChanges): string | null {
  return changes.errorCode ?? changes.errorName ?? null;
}

function quoteRow(quote: QuoteRecord): QuotesTable {
  return {
    quote_id: quote.quoteId,
    transaction_id: quote.transactionId,
    request_hash: quote.requestHash,
    amount_type: quote.amountType,
    amount: quote.amount,
    currency: quote.currency,
    transfer_amount: quote.transferAmount,
    payee_receive_amount: quote.payeeReceiveAmount,
    fee: quote.fee,
    payee_id_type: quote.payeeIdType,
    payee_id_value: quote.payeeIdValue,
    payee_id_sub_value: quote.payeeIdSubValue,
    expiration: quote.expiration,
    payer_keys: JSON.stringify(quote.payerKeys),
    response: JSON.stringify(quote.response),
    created_at: quote.createdAt,
  };
}

function quoteFromRow(row: Selectable<QuotesTable>): QuoteRecord {
  return {
    quoteId: row.quote_id,
    transactionId: row.transaction_id,
    requestHash: row.request_hash,
    amountType: amountTypeOf(row.amount_type),
    amount: row.amount,
    currency: row.currency,
    transferAmount: row.transfer_amount,
    payeeReceiveAmount: row.payee_receive_amount,
    fee: row.fee,
    payeeIdType: idTypeOf(row.payee_id_type),
    payeeIdValue: row.payee_id_value,
    payeeIdSubValue: row.payee_id_sub_value,
    expiration: row.expiration,
    payerKeys: JSON.parse(row.payer_keys) as string[],
    response: JSON.parse(row.response) as QuoteResponseBody,
    createdAt: row.created_at,
  };
}

function newTransferRow(transfer: NewTransfer): InboundTransfersTable {
  return {
    transfer_id: transfer.transferId,
    quote_id: transfer.quoteId,
    request_hash: transfer.requestHash,
    state: transfer.state,
    amount_type: transfer.amountType,
    transaction_type: transfer.transactionType,
    amount: transfer.amount,
    currency: transfer.currency,
    transfer_amount: transfer.transferAmount,
    payee_receive_amount: transfer.payeeReceiveAmount,
    payer_id_type: transfer.payerIdType,
    payer_id_value: transfer.payerIdValue,
    payee_id_type: transfer.payeeIdType,
    payee_id_value: transfer.payeeIdValue,
    payee_id_sub_value: transfer.payeeIdSubValue,
    payee_account_id: transfer.payeeAccountId,
    completed_timestamp: null,
    notified_state: null,
    error_name: null,
    error_message: null,
    attempts: 0,
    next_attempt_at: null,
    last_error: null,
    needs_attention: 0,
    lease_until: null,
    created_at: transfer.createdAt,
    updated_at: transfer.createdAt,
    audit_seq: 1,
    prev_state: null,
  };
}

function changeColumns(changes: TransferChanges): Partial<InboundTransfersTable> {
  const columns: Partial<InboundTransfersTable> = {};
  if (changes.completedTimestamp !== undefined) columns.completed_timestamp = changes.completedTimestamp;
  if (changes.notifiedState !== undefined) columns.notified_state = changes.notifiedState;
  if (changes.errorName !== undefined) columns.error_name = changes.errorName;
  if (changes.errorMessage !== undefined) columns.error_message = changes.errorMessage.slice(0, 256);
  if (changes.attempts !== undefined) columns.attempts = changes.attempts;
  if (changes.nextAttemptAt !== undefined) columns.next_attempt_at = changes.nextAttemptAt;
  if (changes.lastError !== undefined) columns.last_error = changes.lastError === null ? null : changes.lastError.slice(0, 256);
  if (changes.needsAttention !== undefined) columns.needs_attention = changes.needsAttention ? 1 : 0;
  return columns;
}

function transferFromRow(row: Selectable<InboundTransfersTable>): TransferRecord {
  return {
    transferId: row.transfer_id,
    quoteId: row.quote_id,
    requestHash: row.request_hash,
    state: parseInboundTransferState(row.state),
    amountType: amountTypeOf(row.amount_type),
    transactionType: row.transaction_type,
    amount: row.amount,
    currency: row.currency,
    transferAmount: row.transfer_amount,
    payeeReceiveAmount: row.payee_receive_amount,
    payerIdType: row.payer_id_type,
    payerIdValue: row.payer_id_value,
    payeeIdType: idTypeOf(row.payee_id_type),
    payeeIdValue: row.payee_id_value,
    payeeIdSubValue: row.payee_id_sub_value,
    payeeAccountId: row.payee_account_id,
    completedTimestamp: row.completed_timestamp,
    notifiedState: row.notified_state,
    errorName: row.error_name,
    errorMessage: row.error_message,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    needsAttention: Number(row.needs_attention) === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

