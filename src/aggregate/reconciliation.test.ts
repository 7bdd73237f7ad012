import { describe, expect, it } from 'vitest';
import { countTurns } from '../../test/support/event-loop-turns.js';
import type { CoreBanking, InstitutionMovement, Period } from '../ports/core-banking.js';
import type { OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { InboundStore, TransferRecord } from '../ports/store.js';
import { Reconciliation, reportCsv, reportJson, type ReconciliationLine, type ReconciliationReport } from './reconciliation.js';

const DAY: Period = { from: '2026-11-20T00:00:00.000Z', to: '2026-11-21T00:00:00.000Z' };

/** A COMMITTED incoming transfer as the reconciliation reads it (the fields it uses). */
function committed(index: number): TransferRecord {
  return { transferId: `tr-${String(index).padStart(5, '0')}`, state: 'COMMITTED', payeeReceiveAmount: '9.9', currency: 'ZMW' } as TransferRecord;
}

function credit(reference: string, amount: string): InstitutionMovement {
  return { reference, direction: 'customer-credit', amount: { amount, currency: 'ZMW' }, bookedAt: '2026-11-20T12:00:00.000Z', institutionId: `hold:${reference}` };
}

/**
 * Stores that give their records a page of 1,000 at a time, as the SQL stores do, without a turn
 * of the event loop of their own; an institution that counts how often it is asked.
 */
function world(transfers: readonly TransferRecord[], movements: readonly InstitutionMovement[]) {
  const asked = { transferPages: 0, paymentPages: 0, movements: 0 };
  const inbound = {
    visitChangedTransfers: async (_period: Period, visit: (page: readonly TransferRecord[]) => void) => {
      for (let start = 0; start < transfers.length; start += 1_000) {
        asked.transferPages += 1;
        visit(transfers.slice(start, start + 1_000));
      }
    },
    findTransfer: async () => undefined,
  } as unknown as InboundStore;
  const outgoing = {
    visitChangedPayments: async (_period: Period, visit: (page: readonly OutgoingPaymentRecord[]) => void) => {
      asked.paymentPages += 1;
      visit([]);
    },
    findByTransferId: async () => undefined,
    findByHomeTransactionId: async () => undefined,
    findByRefundReference: async () => undefined,
  } as unknown as OutgoingStore;
  const institution = {
    name: 'counting',
    listMovements: async () => {
      asked.movements += 1;
      return movements;
    },
  } as unknown as CoreBanking;
  return { inbound, outgoing, institution, asked };
}

const clock = { now: () => new Date('2026-11-21T01:00:00.000Z') };

describe('Reconciliation of a large period', () => {
  it('lets the event loop turn while it matches 6,000 records, and judges each exactly', async () => {
    const transfers = Array.from({ length: 6_000 }, (_, index) => committed(index));
    // Every transfer booked, one of them with another amount, and one credit nobody expects.
    const movements = transfers.map((transfer, index) => credit(transfer.transferId, index === 4_321 ? '9.8' : '9.9'));
    movements.push(credit('stranger', '5'));
    const { inbound, outgoing, institution } = world(transfers, movements);
    const counting = countTurns();
    const report = await new Reconciliation(inbound, outgoing, institution, clock).run(DAY);
    const turns = counting.stop();
    expect(report.counts).toStrictEqual({ matched: 5_999, missing_at_institution: 0, unknown_to_connector: 1, amount_mismatch: 1, pending: 0 });
    expect(report.lines.map((line) => [line.category, line.reference])).toStrictEqual([
      ...transfers.filter((_, index) => index !== 4_321).map((transfer) => ['matched', transfer.transferId]),
      ['unknown_to_connector', 'stranger'],
      ['amount_mismatch', 'tr-04321'],
    ]);
    // Three loops over 6,001 items, a turn after every 2,000 of each: the code before took none.
    expect(turns).toBeGreaterThanOrEqual(9);
  });

  it('stops reading at the page that passes the limit, before the payments and the institution', async () => {
    const { inbound, outgoing, institution, asked } = world(
      Array.from({ length: 5_000 }, (_, index) => committed(index)),
      [],
    );
    await expect(new Reconciliation(inbound, outgoing, institution, clock, 2_500).run(DAY)).rejects.toThrow(
      'more than 2500 records in the period (RECONCILIATION_MAX_RECORDS); reconcile it in parts (from, to)',
    );
    expect(asked).toStrictEqual({ transferPages: 3, paymentPages: 0, movements: 0 });
  });
});

describe('a report written in chunks', () => {
  const line = (index: number, note = ''): ReconciliationLine => ({
    category: 'matched',
    reference: `tr-${index}`,
    direction: 'customer-credit',
    subject: 'incoming_transfer',
    subjectId: `tr-${index}`,
    connectorState: 'COMMITTED',
    currency: 'ZMW',
    expectedAmount: '9.9',
    institutionAmount: '9.9',
    institutionId: null,
    bookedAt: '2026-11-20T12:00:00.000Z',
    note,
  });
  const report = (lines: readonly ReconciliationLine[]): ReconciliationReport => ({
    period: DAY,
    adapter: 'sandbox',
    generatedAt: '2026-11-21T01:00:00.000Z',
    counts: { matched: lines.length, missing_at_institution: 0, unknown_to_connector: 0, amount_mismatch: 0, pending: 0 },
    lines,
  });

  it('as JSON: the chunks joined are JSON.stringify of the report, a chunk per 1,000 lines', () => {
    const large = report(Array.from({ length: 2_500 }, (_, index) => line(index, index === 7 ? 'a "quoted", note' : '')));
    const chunks = [...reportJson(large)];
    expect(chunks).toHaveLength(5);
    expect(chunks.join('')).toBe(JSON.stringify(large));
    expect(JSON.parse(chunks.join(''))).toStrictEqual(large);
    const empty = report([]);
    expect([...reportJson(empty)]).toStrictEqual([
      '{"period":{"from":"2026-11-20T00:00:00.000Z","to":"2026-11-21T00:00:00.000Z"},"adapter":"sandbox","generatedAt":"2026-11-21T01:00:00.000Z","counts":{"matched":0,"missing_at_institution":0,"unknown_to_connector":0,"amount_mismatch":0,"pending":0},"lines":[',
      ']}',
    ]);
  });

  it('as CSV: a header, then a row per line ending in CRLF, a chunk per 1,000 rows, fields quoted and formulas defused', () => {
    const lines = Array.from({ length: 1_001 }, (_, index) => line(index));
    lines[1] = line(1, 'expected 9.9, booked "9.8"');
    lines[2] = line(2, '=HYPERLINK("x")');
    const chunks = [...reportCsv(report(lines))];
    expect(chunks).toHaveLength(3);
    const rows = chunks.join('').split('\r\n');
    expect(rows).toHaveLength(1_003);
    expect(rows.slice(0, 4)).toStrictEqual([
      'category,reference,direction,subject,subject_id,connector_state,currency,expected_amount,institution_amount,institution_id,booked_at,note',
      'matched,tr-0,customer-credit,incoming_transfer,tr-0,COMMITTED,ZMW,9.9,9.9,,2026-11-20T12:00:00.000Z,',
      'matched,tr-1,customer-credit,incoming_transfer,tr-1,COMMITTED,ZMW,9.9,9.9,,2026-11-20T12:00:00.000Z,"expected 9.9, booked ""9.8"""',
      'matched,tr-2,customer-credit,incoming_transfer,tr-2,COMMITTED,ZMW,9.9,9.9,,2026-11-20T12:00:00.000Z,"\'=HYPERLINK(""x"")"',
    ]);
    expect(rows[1_001]).toBe('matched,tr-1000,customer-credit,incoming_transfer,tr-1000,COMMITTED,ZMW,9.9,9.9,,2026-11-20T12:00:00.000Z,');
    expect(rows[1_002]).toBe('');
  });

  it('as CSV: any field a spreadsheet would start a formula with is defused, a negative decimal number is kept', () => {
    const notes = ['-2+3+cmd|x', '-5.00', '-12', '+1', '@SUM(A1)', '\t=1', '-1e3', '-.5'];
    const rows = [...reportCsv(report(notes.map((note, index) => line(index, note))))].join('').split('\r\n');
    expect(rows.slice(1, 1 + notes.length).map((row) => row.slice(row.lastIndexOf('Z,') + 2))).toStrictEqual([
      "'-2+3+cmd|x",
      '-5.00',
      '-12',
      "'+1",
      "'@SUM(A1)",
      "'\t=1",
      "'-1e3",
      "'-.5",
    ]);
  });
});
