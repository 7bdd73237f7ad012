import { setImmediate as nextTurn } from 'node:timers/promises';
import { ConnectorError } from '../domain/errors.js';
import { sameMoney, type Money } from '../domain/money.js';
import { refundReference } from '../domain/outgoing-references.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking, InstitutionMovement, Period } from '../ports/core-banking.js';
import type { OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { InboundStore, TransferRecord } from '../ports/store.js';
import { csvField } from '../shared/csv.js';

export const RECONCILIATION_CATEGORIES = ['matched', 'missing_at_institution', 'unknown_to_connector', 'amount_mismatch', 'pending'] as const;
export type ReconciliationCategory = (typeof RECONCILIATION_CATEGORIES)[number];

/** One line of the report: one movement expected by the connector, booked by the institution, or both. */
export interface ReconciliationLine {
  readonly category: ReconciliationCategory;
  readonly reference: string;
  readonly direction: InstitutionMovement['direction'];
  readonly subject: 'incoming_transfer' | 'outgoing_payment' | null;
  /** The connector's id of the record (transferId, or homeTransactionId for an outgoing payment). */
  readonly subjectId: string | null;
  readonly connectorState: string | null;
  readonly currency: string;
  readonly expectedAmount: string | null;
  readonly institutionAmount: string | null;
  readonly institutionId: string | null;
  readonly bookedAt: string | null;
  readonly note: string;
}

export interface ReconciliationReport {
  readonly period: Period;
  readonly adapter: string;
  readonly generatedAt: string;
  readonly counts: Readonly<Record<ReconciliationCategory, number>>;
  readonly lines: readonly ReconciliationLine[];
}

/** What the connector's records say the institution should have booked under one reference. */
interface Expectation {
  readonly reference: string;
  readonly direction: InstitutionMovement['direction'];
  readonly amount: Money;
  readonly subject: 'incoming_transfer' | 'outgoing_payment';
  readonly subjectId: string;
  readonly state: string;
  /** True while the connector is still finishing the step (an intent state): not a discrepancy yet. */
  readonly pending: boolean;
}

/** How many items the report's loops handle before the event loop takes a turn (see run). */
const TURN_SIZE = 2_000;
/** Movements near the period's edges may be booked on the other side of midnight: looked for this far out. */
const EDGE_MS = 24 * 60 * 60 * 1000;
/**
 * The most records (incoming transfers and outgoing payments together) one report reads: the
 * report is built in memory, about 2 MiB per 1,000 records with the institution's movements (a
 * peak RSS of about 300 MiB for a day of 100,000 on the sandbox), so a period with more is
 * refused, at the page that passes the limit and before the institution is asked, rather than
 * risking the process (RECONCILIATION_MAX_RECORDS).
 */
export const RECONCILIATION_MAX_RECORDS = 100_000;

/**
 * Compares the connector's records of a period with what the institution booked under our
 * references. A record belongs to the period in which it last changed; the institution's
 * movements are read a day beyond each edge so that one booked just across midnight still
 * matches. Every expected movement is matched, missing at the institution, or booked with
 * another amount; every movement booked in the period that no record explains (or a second
 * one under the same reference) is unknown to the connector.
 */
export class Reconciliation {
  constructor(
    private readonly inboundStore: InboundStore,
    private readonly outgoingStore: OutgoingStore,
    private readonly coreBanking: CoreBanking,
    private readonly clock: Clock,
    private readonly maxRecords: number = RECONCILIATION_MAX_RECORDS,
  ) {}

  async run(period: Period): Promise<ReconciliationReport> {
    if (this.coreBanking.listMovements === undefined) {
      throw new ConnectorError('NotSupported', `the ${this.coreBanking.name} adapter cannot list the institution's transactions`);
    }
    const wide: Period = { from: shift(period.from, -EDGE_MS), to: shift(period.to, EDGE_MS) };
    // The records arrive a page at a time, each kept only as what it expects the institution to
    // have booked; past the limit the reading stops, before the institution is asked anything.
    const expectations: Expectation[] = [];
    let records = 0;
    const expect =
      <R>(expected: (record: R) => Expectation[]) =>
      (page: readonly R[]): void => {
        records += page.length;
        if (records > this.maxRecords) {
          throw new ConnectorError('ValidationFailed', `more than ${this.maxRecords} records in the period (RECONCILIATION_MAX_RECORDS); reconcile it in parts (from, to)`);
        }
        for (const record of page) expectations.push(...expected(record));
      };
    await this.inboundStore.visitChangedTransfers(period, expect(expectedOfTransfer));
    await this.outgoingStore.visitChangedPayments(period, expect(expectedOfPayment));
    const movements = await this.coreBanking.listMovements(wide);

    // Each loop below lets the event loop take a turn every TURN_SIZE items: a day of 50,000
    // records had held it for 0.8–1.1 s here, payments waiting behind.
    const booked = new Map<string, InstitutionMovement[]>();
    for (const [index, movement] of movements.entries()) {
      const key = keyOf(movement.reference, movement.direction);
      const found = booked.get(key);
      if (found === undefined) booked.set(key, [movement]);
      else found.push(movement);
      if (index % TURN_SIZE === TURN_SIZE - 1) await nextTurn();
    }

    const lines: ReconciliationLine[] = [];
    const explained = new Set<InstitutionMovement>();
    for (const [index, expectation] of expectations.entries()) {
      const found = booked.get(keyOf(expectation.reference, expectation.direction)) ?? [];
      const [first, ...extra] = found;
      if (first !== undefined) explained.add(first);
      lines.push(judge(expectation, first));
      for (const duplicate of extra) {
        explained.add(duplicate);
        lines.push(unknownLine(duplicate, expectation, 'booked more than once under this reference'));
      }
      if (index % TURN_SIZE === TURN_SIZE - 1) await nextTurn();
    }
    const inPeriod = (movement: InstitutionMovement): boolean => movement.bookedAt >= period.from && movement.bookedAt < period.to;
    for (const [index, movement] of movements.entries()) {
      if (index % TURN_SIZE === TURN_SIZE - 1) await nextTurn();
      if (explained.has(movement) || !inPeriod(movement)) continue;
      const owner = await this.#owner(movement);
      if (owner === 'elsewhere') continue;
      lines.push(owner === undefined ? unknownLine(movement, undefined, 'no record of the connector carries this reference') : ownerLine(movement, owner));
    }

    const counts = Object.fromEntries(RECONCILIATION_CATEGORIES.map((category) => [category, 0])) as Record<ReconciliationCategory, number>;
    for (const line of lines) counts[line.category] += 1;
    return { period, adapter: this.coreBanking.name, generatedAt: this.clock.now().toISOString(), counts, lines: inReportOrder(lines) };
  }

  /**
   * Whose is a movement no record of the period expected: a record that changed in another
   * period and expects it there ('elsewhere'), a record that does not expect it (its
   * expectation, possibly none), or nobody (undefined). A refund is booked under its own
   * reference, which names no record: its payment is found by it (a refund booked on one day
   * whose payment became REFUNDED the next belongs to that next day, as the payment's debit does).
   */
  async #owner(movement: InstitutionMovement): Promise<'elsewhere' | { readonly record: TransferRecord | OutgoingPaymentRecord; readonly expects: Expectation | undefined } | undefined> {
    const transfer = await this.inboundStore.findTransfer(movement.reference);
    const payment =
      transfer === undefined
        ? ((await this.outgoingStore.findByTransferId(movement.reference)) ??
          (await this.outgoingStore.findByHomeTransactionId(movement.reference)) ??
          (await this.outgoingStore.findByRefundReference(movement.reference)))
        : undefined;
    const record = transfer ?? payment;
    if (record === undefined) return undefined;
    const expects = (isPayment(record) ? expectedOfPayment(record) : expectedOfTransfer(record)).find(
      (expectation) => expectation.reference === movement.reference && expectation.direction === movement.direction,
    );
    if (expects !== undefined && !expects.pending) return 'elsewhere';
    return { record, expects };
  }
}

/**
 * The lines by category (RECONCILIATION_CATEGORIES' order), then by reference. Sorted through
 * small records of the two keys: the lines themselves, objects of thirteen fields, took 0.2 s to
 * sort for 50,000 (about 50 ms this way), the event loop held throughout.
 */
function inReportOrder(lines: readonly ReconciliationLine[]): ReconciliationLine[] {
  const keyed = lines.map((line) => ({ rank: RECONCILIATION_CATEGORIES.indexOf(line.category), reference: line.reference, line }));
  keyed.sort((a, b) => a.rank - b.rank || a.reference.localeCompare(b.reference));
  return keyed.map((entry) => entry.line);
}

function expectedOfTransfer(transfer: TransferRecord): Expectation[] {
  const base = { reference: transfer.transferId, direction: 'customer-credit' as const, amount: { amount: transfer.payeeReceiveAmount, currency: transfer.currency }, subject: 'incoming_transfer' as const, subjectId: transfer.transferId, state: transfer.state };
  if (transfer.state === 'COMMITTED') return [{ ...base, pending: false }];
  if (transfer.state === 'COMMITTING') return [{ ...base, pending: true }];
  return [];
}

/**
 * Outgoing payments: the customer's debit and the refund. The mobile-operator flow's collection
 * carries the transferId; in the bank flow the channel debits under its homeTransactionId (the
 * refund names it as the original) before it accepts.
 */
function expectedOfPayment(payment: OutgoingPaymentRecord): Expectation[] {
  if (payment.transferId === null || payment.debitAmount === null) return [];
  const amount = { amount: payment.debitAmount, currency: payment.sendCurrency };
  const base = { amount, subject: 'outgoing_payment' as const, subjectId: payment.homeTransactionId, state: payment.state };
  const expectations: Expectation[] = [];
  const debited = ['ACCEPTING', 'CONFIRMING', 'COMPLETED', 'REFUNDING', 'REFUNDED'].includes(payment.state);
  if (payment.flow === 'mobile-operator') {
    const collecting = payment.state === 'COLLECTING' || payment.state === 'AWAITING_DEBIT';
    if (debited || collecting) expectations.push({ ...base, reference: payment.transferId, direction: 'customer-debit', pending: collecting });
  } else if (debited) {
    expectations.push({ ...base, reference: payment.homeTransactionId, direction: 'customer-debit', pending: false });
  }
  if (payment.state === 'REFUNDED' || payment.state === 'REFUNDING') {
    expectations.push({ ...base, reference: refundReference(payment.transferId), direction: 'customer-credit', pending: payment.state === 'REFUNDING' });
  }
  return expectations;
}

function judge(expectation: Expectation, movement: InstitutionMovement | undefined): ReconciliationLine {
  const line = {
    category: 'matched' as ReconciliationCategory,
    reference: expectation.reference,
    direction: expectation.direction,
    subject: expectation.subject,
    subjectId: expectation.subjectId,
    connectorState: expectation.state,
    currency: expectation.amount.currency,
    expectedAmount: expectation.amount.amount,
    institutionAmount: movement?.amount.amount ?? null,
    institutionId: movement?.institutionId ?? null,
    bookedAt: movement?.bookedAt ?? null,
  };
  if (expectation.pending) return { ...line, category: 'pending', note: `the connector is still finishing this step (${expectation.state})` };
  if (movement === undefined) return { ...line, category: 'missing_at_institution', note: `the connector recorded ${expectation.state}; the institution booked nothing under this reference` };
  if (!sameMoney(movement.amount, expectation.amount)) {
    return { ...line, category: 'amount_mismatch', note: `expected ${expectation.amount.amount} ${expectation.amount.currency}, booked ${movement.amount.amount} ${movement.amount.currency}` };
  }
  return { ...line, category: 'matched', note: '' };
}

function unknownLine(movement: InstitutionMovement, expectation: Expectation | undefined, note: string): ReconciliationLine {
  return {
    category: 'unknown_to_connector',
    reference: movement.reference,
    direction: movement.direction,
    subject: expectation?.subject ?? null,
    subjectId: expectation?.subjectId ?? null,
    connectorState: expectation?.state ?? null,
    currency: movement.amount.currency,
    expectedAmount: null,
    institutionAmount: movement.amount.amount,
    institutionId: movement.institutionId,
    bookedAt: movement.bookedAt,
    note,
  };
}

function ownerLine(movement: InstitutionMovement, owner: { readonly record: TransferRecord | OutgoingPaymentRecord; readonly expects: Expectation | undefined }): ReconciliationLine {
  const record = owner.record;
  const line = {
    ...unknownLine(movement, undefined, ''),
    subject: isPayment(record) ? ('outgoing_payment' as const) : ('incoming_transfer' as const),
    subjectId: isPayment(record) ? record.homeTransactionId : record.transferId,
    connectorState: owner.record.state,
  };
  if (owner.expects?.pending === true) return { ...line, category: 'pending', expectedAmount: owner.expects.amount.amount, note: `the connector is still finishing this step (${owner.record.state})` };
  return { ...line, note: `the connector's record is ${owner.record.state}, which expects no such movement` };
}

function isPayment(record: TransferRecord | OutgoingPaymentRecord): record is OutgoingPaymentRecord {
  return 'homeTransactionId' in record;
}

function keyOf(reference: string, direction: string): string {
  return `${direction} ${reference}`;
}

function shift(instant: string, ms: number): string {
  return new Date(Date.parse(instant) + ms).toISOString();
}

/** How many lines of a report go into one chunk of its text (reportJson, reportCsv). */
const LINES_PER_CHUNK = 1_000;

/**
 * The report as JSON, in chunks of LINES_PER_CHUNK lines, whose text joined is exactly
 * `JSON.stringify(report)`: written a chunk at a time, the answer never holds the event loop for
 * the whole report (0.3 s for 50,000 lines in one piece).
 */
export function* reportJson(report: ReconciliationReport): Generator<string> {
  const { lines, ...head } = report;
  // The report with no lines, `...,"lines":[]}`, cut before its last two characters.
  yield JSON.stringify({ ...head, lines: [] }).slice(0, -2);
  for (let start = 0; start < lines.length; start += LINES_PER_CHUNK) {
    const chunk = lines.slice(start, start + LINES_PER_CHUNK).map((line) => JSON.stringify(line)).join(',');
    yield start === 0 ? chunk : `,${chunk}`;
  }
  yield ']}';
}

/** The report as CSV (RFC 4180: a header, then a row per line, CRLF after each), in chunks of LINES_PER_CHUNK rows. */
export function* reportCsv(report: ReconciliationReport): Generator<string> {
  const header = ['category', 'reference', 'direction', 'subject', 'subject_id', 'connector_state', 'currency', 'expected_amount', 'institution_amount', 'institution_id', 'booked_at', 'note'];
  yield `${header.join(',')}\r\n`;
  for (let start = 0; start < report.lines.length; start += LINES_PER_CHUNK) {
    yield report.lines
      .slice(start, start + LINES_PER_CHUNK)
      .map((line) =>
        [
          line.category,
          line.reference,
          line.direction,
          line.subject ?? '',
          line.subjectId ?? '',
          line.connectorState ?? '',
          line.currency,
          line.expectedAmount ?? '',
          line.institutionAmount ?? '',
          line.institutionId ?? '',
          line.bookedAt ?? '',
          line.note,
        ]
          .map(csvField)
          .join(',') + '\r\n',
      )
      .join('');
  }
}

/**
 * A report read back from its JSON (reportJson), as the command line receives it: the report, or
 * undefined when the value is not one (a field missing or of another type, a category unknown, or
 * counts that are not its lines'). Its CSV is then reportCsv's, the same bytes the server writes.
 */
export function readReport(value: unknown): ReconciliationReport | undefined {
  if (!isObject(value) || !isObject(value['period']) || !isObject(value['counts']) || !Array.isArray(value['lines'])) return undefined;
  const { period, counts, lines } = value;
  if (typeof value['adapter'] !== 'string' || typeof value['generatedAt'] !== 'string' || typeof period['from'] !== 'string' || typeof period['to'] !== 'string') return undefined;
  const read: ReconciliationLine[] = [];
  for (const line of lines) {
    const parsed = readLine(line);
    if (parsed === undefined) return undefined;
    read.push(parsed);
  }
  const counted = Object.fromEntries(RECONCILIATION_CATEGORIES.map((category) => [category, read.filter((line) => line.category === category).length])) as Record<ReconciliationCategory, number>;
  if (Object.keys(counts).length !== RECONCILIATION_CATEGORIES.length || RECONCILIATION_CATEGORIES.some((category) => counts[category] !== counted[category])) return undefined;
  return { period: { from: period['from'], to: period['to'] }, adapter: value['adapter'], generatedAt: value['generatedAt'], counts: counted, lines: read };
}

function readLine(value: unknown): ReconciliationLine | undefined {
  if (!isObject(value)) return undefined;
  const text = (name: string): string | undefined => {
    const field = value[name];
    return typeof field === 'string' ? field : undefined;
  };
  const textOrNull = (name: string): string | null | undefined => (value[name] === null ? null : text(name));
  const category = RECONCILIATION_CATEGORIES.find((known) => known === value['category']);
  const direction = DIRECTIONS.find((known) => known === value['direction']);
  const subject = value['subject'] === null ? null : SUBJECTS.find((known) => known === value['subject']);
  const [reference, currency, note] = [text('reference'), text('currency'), text('note')];
  const [subjectId, connectorState, expectedAmount, institutionAmount, institutionId, bookedAt] = ['subjectId', 'connectorState', 'expectedAmount', 'institutionAmount', 'institutionId', 'bookedAt'].map(textOrNull);
  if (category === undefined || direction === undefined || subject === undefined || reference === undefined || currency === undefined || note === undefined) return undefined;
  if (subjectId === undefined || connectorState === undefined || expectedAmount === undefined || institutionAmount === undefined || institutionId === undefined || bookedAt === undefined) return undefined;
  return { category, reference, direction, subject, subjectId, connectorState, currency, expectedAmount, institutionAmount, institutionId, bookedAt, note };
}

const DIRECTIONS = ['customer-credit', 'customer-debit'] as const;
const SUBJECTS = ['incoming_transfer', 'outgoing_payment'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The period of one UTC day, YYYY-MM-DD. */
export function dayPeriod(day: string): Period {
  const from = Date.parse(`${day}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(from) || new Date(from).toISOString().slice(0, 10) !== day) {
    throw new ConnectorError('ValidationFailed', `date: "${day}" is not a day (YYYY-MM-DD)`);
  }
  return { from: new Date(from).toISOString(), to: new Date(from + EDGE_MS).toISOString() };
}
