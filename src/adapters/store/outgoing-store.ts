import { sql, type Kysely, type Selectable } from 'kysely';
import { OUTGOING_STATES, parseOutgoingState, type OutgoingState } from '../../domain/outgoing-payment.js';
import { AssertionFailed } from '../../domain/errors.js';
import type { OutgoingFlow } from '../../ports/core-banking.js';
import type {
  ClaimOptions,
  NewOutgoingPayment,
  OutgoingChanges,
  OutgoingPaymentRecord,
  OutgoingStore,
  PaymentKind,
} from '../../ports/outgoing-store.js';
import type { ChangedPeriod, OperatorGuard, RecordSearch } from '../../ports/store.js';
import { claimDueKeys, holdRow, releaseClaims } from './lease-claim.js';
import { visitChanged } from './changed-pages.js';
import { AuditedTable, RECORD_COLUMNS } from './audited-table.js';
import { queryTemplate, type Slots } from './query-template.js';
import { refundReference } from '../../domain/outgoing-references.js';
import { amountTypeOf, idTypeOf } from './stored-values.js';
import type { AnySchema, SqlDatabase } from './sql-database.js';

interface OutgoingPaymentsTable {
  home_transaction_id: string;
  transfer_id: string | null;
  request_hash: string;
  kind: string;
  amount_type: string;
  flow: string;
  state: string;
  payer_id: string;
  payee_id_type: string;
  payee_id: string;
  send_amount: string;
  send_currency: string;
  receive_currency: string;
  debit_amount: string | null;
  terms: string | null;
  quote_expiration: string | null;
  switch_state: string | null;
  institution_reference: string | null;
  callback_code: string | null;
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
  refund_reference: string | null;
}

interface Schema {
  outgoing_payments: OutgoingPaymentsTable;
}

type Db = Kysely<Schema>;

/** The outgoing store on any SqlDatabase (SQLite or PostgreSQL), in the pattern of inbound-store.ts. */
export class SqlOutgoingStore implements OutgoingStore {
  constructor(
    private readonly database: SqlDatabase,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async insert(payment: NewOutgoingPayment): Promise<{ record: OutgoingPaymentRecord; created: boolean }> {
    const inserted = await PAYMENTS.insert(this.database, newRow(payment), payment.createdAt);
    if (inserted !== undefined) return { record: paymentFromRow(inserted), created: true };
    const existing = await this.findByHomeTransactionId(payment.homeTransactionId);
    if (existing === undefined) throw new AssertionFailed(`outgoing payment ${payment.homeTransactionId} neither inserted nor found`);
    return { record: existing, created: false };
  }

  async findByHomeTransactionId(homeTransactionId: string): Promise<OutgoingPaymentRecord | undefined> {
    const row = await FIND_BY_HOME_TRANSACTION_ID.first(this.database.quickReader<Schema>(), { homeTransactionId });
    return row === undefined ? undefined : paymentFromRow(row);
  }

  async findByTransferId(transferId: string): Promise<OutgoingPaymentRecord | undefined> {
    const row = await FIND_BY_TRANSFER_ID.first(this.database.quickReader<Schema>(), { transferId });
    return row === undefined ? undefined : paymentFromRow(row);
  }

  async findByRefundReference(refundReference: string): Promise<OutgoingPaymentRecord | undefined> {
    const row = await FIND_BY_REFUND_REFERENCE.first(this.database.quickReader<Schema>(), { refundReference });
    return row === undefined ? undefined : paymentFromRow(row);
  }

  async transition(
    homeTransactionId: string,
    from: readonly OutgoingState[],
    to: OutgoingState,
    changes: OutgoingChanges = {},
    guard?: OperatorGuard,
  ): Promise<OutgoingPaymentRecord | undefined> {
    const step = { key: homeTransactionId, from, to, set: changeColumns(changes), at: this.now().toISOString(), errorCode: errorCodeOf(changes), guard, keepContradiction: changes.keepContradiction === true };
    const row = await PAYMENTS.transitionReleasing(this.database, step);
    return row === undefined ? undefined : paymentFromRow(row);
  }

  async recordAttempt(homeTransactionId: string, state: OutgoingState, changes: OutgoingChanges): Promise<boolean> {
    return PAYMENTS.recordAttemptReleasing(this.database, homeTransactionId, state, changeColumns(changes), this.now().toISOString(), errorCodeOf(changes), changes.keepContradiction === true);
  }

  async holdPrompt(homeTransactionId: string, until: string, now: string): Promise<boolean> {
    const held = await PAYMENTS.update(this.database, {
      key: homeTransactionId,
      event: 'attempt',
      from: ['COLLECTING'],
      set: { next_attempt_at: until, lease_until: until },
      at: now,
      errorCode: null,
      leaseFreeAt: now,
    });
    return held !== undefined;
  }

  holdIntent(homeTransactionId: string, state: OutgoingState, until: string): Promise<boolean> {
    return holdRow(this.database, 'outgoing_payments', 'home_transaction_id', homeTransactionId, state, until);
  }

  releaseClaims(homeTransactionIds: readonly string[], leaseUntil: string): Promise<void> {
    return releaseClaims(this.database, 'outgoing_payments', 'home_transaction_id', homeTransactionIds, leaseUntil);
  }

  async scheduleNow(homeTransactionId: string, state: OutgoingState, now: string): Promise<boolean> {
    return PAYMENTS.scheduleNow(this.database, homeTransactionId, state, now);
  }

  async search(search: RecordSearch): Promise<OutgoingPaymentRecord[]> {
    let select = this.database.listReader<Schema>().selectFrom('outgoing_payments').selectAll();
    const id = search.id;
    if (id !== undefined) {
      // The one or two payments an id names (a homeTransactionId, a transferId), through their
      // unique keys, the other filters applied to them here: in one statement with a state or
      // attention, SQLite took that filter's index and read every payment in the state (0.4–0.8 s
      // among a million, the event loop blocked; a reviewer's measurement).
      const rows = await select.where((eb) => eb.or([eb('home_transaction_id', '=', id), eb('transfer_id', '=', id)])).orderBy('created_at', 'desc').execute();
      return rows.map(paymentFromRow).filter((payment) => matchesSearch(payment, search)).slice(0, search.limit);
    }
    if (search.states !== undefined && search.states.length > 0) select = select.where('state', 'in', [...search.states]);
    if (search.createdFrom !== undefined) select = select.where('created_at', '>=', search.createdFrom);
    if (search.createdTo !== undefined) select = select.where('created_at', '<', search.createdTo);
    if (search.needsAttention !== undefined) select = select.where('needs_attention', '=', search.needsAttention ? 1 : 0);
    const rows = await select.orderBy('created_at', 'desc').limit(search.limit).execute();
    return rows.map(paymentFromRow);
  }

  visitChangedPayments(period: ChangedPeriod, visit: (page: readonly OutgoingPaymentRecord[]) => void): Promise<void> {
    return visitChanged(this.database, { table: 'outgoing_payments', key: 'home_transaction_id', states: OUTGOING_STATES }, period, (rows) => visit(rows.map((row) => paymentFromRow(row as Selectable<OutgoingPaymentsTable>))));
  }

  claimDue(options: ClaimOptions): Promise<OutgoingPaymentRecord[]> {
    return this.database.transaction<Schema, OutgoingPaymentRecord[]>(async (trx) => {
      const ids = await claimDueKeys(trx as unknown as Kysely<AnySchema>, this.database.dialect, 'outgoing_payments', 'home_transaction_id', options);
      if (ids.length === 0) return [];
      const rows = await trx.selectFrom('outgoing_payments').selectAll().where('home_transaction_id', 'in', ids).orderBy('updated_at').execute();
      return rows.map(paymentFromRow);
    });
  }

  async listNeedingAttention(limit: number): Promise<OutgoingPaymentRecord[]> {
    const rows = await this.database
      .reader<Schema>()
      .selectFrom('outgoing_payments')
      .selectAll()
      .where('needs_attention', '=', 1)
      .orderBy('updated_at')
      .limit(limit)
      .execute();
    return rows.map(paymentFromRow);
  }
}

const PAYMENT_COLUMNS: Readonly<Record<keyof OutgoingPaymentsTable, true>> = {
  ...RECORD_COLUMNS,
  home_transaction_id: true,
  transfer_id: true,
  request_hash: true,
  kind: true,
  amount_type: true,
  flow: true,
  payer_id: true,
  payee_id_type: true,
  payee_id: true,
  send_amount: true,
  send_currency: true,
  receive_currency: true,
  debit_amount: true,
  terms: true,
  quote_expiration: true,
  switch_state: true,
  institution_reference: true,
  callback_code: true,
  error_name: true,
  error_message: true,
  refund_reference: true,
};

/**
 * The institution knows the step by the refund's own reference once a refund is under way, else
 * by the collection's reference it gave, else by the transferId (which the debit and the
 * collection carry).
 */
const PAYMENTS = new AuditedTable<OutgoingPaymentsTable>({
  subject: 'outgoing_payment',
  table: 'outgoing_payments',
  key: 'home_transaction_id',
  columns: PAYMENT_COLUMNS,
  conflict: 'key',
  institutionReference: sql`case when changed.state in ('REFUNDING', 'REFUNDED') and changed.refund_reference is not null then changed.refund_reference else coalesce(changed.institution_reference, changed.transfer_id) end`,
});

const FIND_BY_HOME_TRANSACTION_ID = queryTemplate('find outgoing payment', (db: Db, p: Slots<{ homeTransactionId: string }>) =>
  db.selectFrom('outgoing_payments').selectAll().where('home_transaction_id', '=', p.homeTransactionId),
);

const FIND_BY_TRANSFER_ID = queryTemplate('find outgoing payment by transferId', (db: Db, p: Slots<{ transferId: string }>) =>
  db.selectFrom('outgoing_payments').selectAll().where('transfer_id', '=', p.transferId),
);

/** Through outgoing_payments_refund_reference (outgoing-009-refund-reference-index). */
const FIND_BY_REFUND_REFERENCE = queryTemplate('find outgoing payment by refund reference', (db: Db, p: Slots<{ refundReference: string }>) =>
  db.selectFrom('outgoing_payments').selectAll().where('refund_reference', '=', p.refundReference),
);

function errorCodeOf(changes: OutgoingChanges): string | null {
  return changes.errorCode ?? changes.errorName ?? null;
}

function newRow(payment: NewOutgoingPayment): OutgoingPaymentsTable {
  return {
    home_transaction_id: payment.homeTransactionId,
    transfer_id: null,
    request_hash: payment.requestHash,
    kind: payment.kind,
    amount_type: payment.amountType,
    flow: payment.flow,
    state: 'INITIATING',
    payer_id: payment.payerId,
    payee_id_type: payment.payeeIdType,
    payee_id: payment.payeeId,
    send_amount: payment.sendAmount,
    send_currency: payment.sendCurrency,
    receive_currency: payment.receiveCurrency,
    debit_amount: null,
    terms: null,
    quote_expiration: null,
    switch_state: null,
    institution_reference: null,
    callback_code: null,
    error_name: null,
    error_message: null,
    attempts: 0,
    next_attempt_at: null,
    last_error: null,
    needs_attention: 0,
    lease_until: null,
    created_at: payment.createdAt,
    updated_at: payment.createdAt,
    audit_seq: 1,
    prev_state: null,
    refund_reference: null,
  };
}

function changeColumns(changes: OutgoingChanges): Partial<OutgoingPaymentsTable> {
  const columns: Partial<OutgoingPaymentsTable> = {};
  if (changes.transferId !== undefined) {
    columns.transfer_id = changes.transferId;
    columns.refund_reference = refundReference(changes.transferId);
  }
  if (changes.debitAmount !== undefined) columns.debit_amount = changes.debitAmount;
  if (changes.terms !== undefined) columns.terms = changes.terms;
  if (changes.quoteExpiration !== undefined) columns.quote_expiration = changes.quoteExpiration;
  if (changes.switchState !== undefined) columns.switch_state = changes.switchState.slice(0, 64);
  if (changes.institutionReference !== undefined) columns.institution_reference = changes.institutionReference.slice(0, 128);
  if (changes.callbackCode !== undefined) columns.callback_code = changes.callbackCode.slice(0, 32);
  if (changes.errorName !== undefined) columns.error_name = changes.errorName;
  if (changes.errorMessage !== undefined) columns.error_message = changes.errorMessage.slice(0, 256);
  if (changes.attempts !== undefined) columns.attempts = changes.attempts;
  if (changes.nextAttemptAt !== undefined) columns.next_attempt_at = changes.nextAttemptAt;
  if (changes.lastError !== undefined) columns.last_error = changes.lastError === null ? null : changes.lastError.slice(0, 256);
  if (changes.needsAttention !== undefined) columns.needs_attention = changes.needsAttention ? 1 : 0;
  return columns;
}

function paymentFromRow(row: Selectable<OutgoingPaymentsTable>): OutgoingPaymentRecord {
  return {
    homeTransactionId: row.home_transaction_id,
    transferId: row.transfer_id,
    requestHash: row.request_hash,
    kind: kindOf(row.kind),
    amountType: amountTypeOf(row.amount_type),
    flow: flowOf(row.flow),
    state: parseOutgoingState(row.state),
    payerId: row.payer_id,
    payeeIdType: idTypeOf(row.payee_id_type),
    payeeId: row.payee_id,
    sendAmount: row.send_amount,
    sendCurrency: row.send_currency,
    receiveCurrency: row.receive_currency,
    debitAmount: row.debit_amount,
    terms: row.terms,
    quoteExpiration: row.quote_expiration,
    switchState: row.switch_state,
    institutionReference: row.institution_reference,
    callbackCode: row.callback_code,
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

/** Whether a payment passes a search's filters other than its id, as the statement below applies them. */
function matchesSearch(payment: OutgoingPaymentRecord, search: RecordSearch): boolean {
  return (
    (search.states === undefined || search.states.length === 0 || search.states.includes(payment.state)) &&
    (search.createdFrom === undefined || payment.createdAt >= search.createdFrom) &&
    (search.createdTo === undefined || payment.createdAt < search.createdTo) &&
    (search.needsAttention === undefined || payment.needsAttention === search.needsAttention)
  );
}

function kindOf(text: string): PaymentKind {
  if (text === 'SEND_MONEY' || text === 'MERCHANT_PAYMENT') return text;
  throw new AssertionFailed(`stored payment kind ${text}`);
}

function flowOf(text: string): OutgoingFlow {
  if (text === 'bank' || text === 'mobile-operator') return text;
  throw new AssertionFailed(`stored outgoing flow ${text}`);
}

