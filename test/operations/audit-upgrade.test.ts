import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { auditMigrations } from '../../src/adapters/store/audit-trail.js';
import { connectorMigrations } from '../../src/adapters/store/connector-migrations.js';
import { SqlInboundStore } from '../../src/adapters/store/inbound-store.js';
import { outgoingMigrations } from '../../src/adapters/store/outgoing-migrations.js';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import type { AnySchema, SqlDatabase } from '../../src/adapters/store/sql-database.js';
import { refundReference } from '../../src/domain/outgoing-references.js';
import type { NewOutgoingPayment } from '../../src/ports/outgoing-store.js';
import { FxStore, fxStoreMigrations } from '../../src/fxp/store/fx-store.js';
import { auditSubjectId, IdentifierStore, identifierMigrations } from '../../src/identifiers/identifier-store.js';
import { STORE_TARGETS, type StoreTarget } from '../support/store-targets.js';

/**
 * An upgrade from the release before the audit columns (e0f8a1d and earlier). That release kept
 * no sequence number on the row: it numbered each audit entry from the trail's largest. The
 * columns' migration adds `audit_seq` at 0 and `refund_reference` empty, so a record with a
 * trail looks, right after it, like a record of this release whose row says 0. The tests make
 * that state with this release's stores (records, trails), then put the row's columns back to
 * what the migration leaves, forget the backfills as applied, and migrate again, as the upgrade
 * would.
 */

const T0 = '2026-11-23T10:00:00.000Z';
const NOW = (): Date => new Date(T0);
const MIGRATIONS = [...connectorMigrations, ...outgoingMigrations, ...fxStoreMigrations, ...identifierMigrations, ...auditMigrations];
const BACKFILLS = [
  'connector-003-audit-seq-from-trail',
  'outgoing-004-audit-seq-from-trail',
  'outgoing-005-refund-reference-from-transfer',
  'fx-003-audit-seq-from-trail',
  'identifiers-004-audit-seq-from-trail',
];

function newPayment(homeTransactionId: string): NewOutgoingPayment {
  return {
    homeTransactionId,
    requestHash: 'c3'.repeat(32),
    kind: 'SEND_MONEY',
    amountType: 'SEND',
    flow: 'bank',
    payerId: '0009876543',
    payeeIdType: 'MSISDN',
    payeeId: '260971111111',
    sendAmount: '25.00',
    sendCurrency: 'ZMW',
    receiveCurrency: 'ZMW',
    createdAt: T0,
  };
}

async function trail(database: SqlDatabase, subject: string, subjectId: string): Promise<Array<[number, string | null, string, string | null]>> {
  const result = await sql<{ seq: number | string; from_state: string | null; to_state: string; institution_reference: string | null }>`
    select seq, from_state, to_state, institution_reference from audit_events
     where subject = ${subject} and subject_id = ${subjectId} order by seq`.execute(database.reader<AnySchema>());
  return result.rows.map((row) => [Number(row.seq), row.from_state, row.to_state, row.institution_reference]);
}

/** The rows as the audit columns' migration leaves a record of the release before. */
async function asBeforeTheUpgrade(database: SqlDatabase): Promise<void> {
  await database.transaction<AnySchema, void>(async (trx) => {
    for (const table of ['inbound_transfers', 'outgoing_payments', 'fx_conversions', 'identifier_registry']) {
      await sql`update ${sql.table(table)} set audit_seq = 0, prev_state = null`.execute(trx);
    }
    await sql`update outgoing_payments set refund_reference = null`.execute(trx);
    await trx.deleteFrom('schema_migrations').where('id', 'in', BACKFILLS).execute();
  });
}

for (const [name, open] of STORE_TARGETS) {
  describe(`an upgrade from the release before the audit columns (${name})`, () => {
    let target: StoreTarget | undefined;
    afterEach(async () => {
      await target?.database.close();
      await target?.cleanup();
      target = undefined;
    });

    it('carries on every audited record from the number its trail reached, and names a refund by its own reference', async () => {
      target = await open();
      const database = target.database;
      await database.migrate(MIGRATIONS);
      const inbound = new SqlInboundStore(database);
      const outgoing = new SqlOutgoingStore(database, NOW);
      const fx = new FxStore(database, NOW);
      const identifiers = new IdentifierStore(database, NOW);
      const identifier = { idType: 'MSISDN' as const, idValue: '260971234567' };
      const withSubValue = { idType: 'ACCOUNT_ID' as const, idValue: '0001234567', idSubValue: 'savings' };

      // Records with trails of 2 (transfer, identifier), 3 (payment) and 1 (conversion) entries.
      await inbound.insertTransfer({
        transferId: 'tr-old',
        quoteId: 'q-old',
        requestHash: 'b2'.repeat(32),
        state: 'RECEIVED',
        amountType: 'SEND',
        transactionType: 'TRANSFER',
        amount: '100.50',
        currency: 'ZMW',
        transferAmount: '101.51',
        payeeReceiveAmount: '100.50',
        payerIdType: 'MSISDN',
        payerIdValue: '260977654321',
        payeeIdType: 'ACCOUNT_ID',
        payeeIdValue: '0001234567',
        payeeIdSubValue: null,
        payeeAccountId: 'acc-0001234567',
        createdAt: T0,
      });
      expect((await inbound.transitionTransfer('tr-old', ['RECEIVED'], 'RESERVED', { completedTimestamp: T0 }))?.state).toBe('RESERVED');
      await outgoing.insert(newPayment('home-old'));
      expect((await outgoing.transition('home-old', ['INITIATING'], 'QUOTED', { transferId: 'tf-old' }))?.state).toBe('QUOTED');
      expect((await outgoing.transition('home-old', ['QUOTED'], 'ACCEPTING'))?.state).toBe('ACCEPTING');
      await fx.insertConversion({
        commitRequestId: 'fx-old',
        requestHash: 'd4'.repeat(32),
        sourceCurrency: 'ZMW',
        sourceAmount: '100',
        targetCurrency: 'USD',
        targetAmount: '5',
        expiration: '2026-11-23T10:05:00.000Z',
        nextAttemptAt: '2026-11-23T10:01:00.000Z',
      });
      for (const key of [identifier, withSubValue]) {
        expect(await identifiers.insert(key, 'ZMW', 'REQUESTED', {})).toBe(true);
        expect((await identifiers.transition(key, ['REQUESTED'], 'REGISTERED'))?.state).toBe('REGISTERED');
      }

      await asBeforeTheUpgrade(database);
      await database.migrate(MIGRATIONS);

      expect((await inbound.transitionTransfer('tr-old', ['RESERVED'], 'COMMITTING', { notifiedState: 'COMMITTED' }))?.state).toBe('COMMITTING');
      expect((await trail(database, 'incoming_transfer', 'tr-old')).map(([seq, from, to]) => [seq, from, to])).toStrictEqual([
        [1, null, 'RECEIVED'],
        [2, 'RECEIVED', 'RESERVED'],
        [3, 'RESERVED', 'COMMITTING'],
      ]);
      // From two states: the previous state comes from the row (prev_state), set by the change itself.
      expect((await outgoing.transition('home-old', ['ACCEPTING', 'CONFIRMING'], 'REFUNDING'))?.state).toBe('REFUNDING');
      expect(await trail(database, 'outgoing_payment', 'home-old')).toStrictEqual([
        [1, null, 'INITIATING', null],
        [2, 'INITIATING', 'QUOTED', 'tf-old'],
        [3, 'QUOTED', 'ACCEPTING', 'tf-old'],
        [4, 'ACCEPTING', 'REFUNDING', refundReference('tf-old')],
      ]);
      expect((await fx.transition('fx-old', ['RESERVING'], 'RESERVED', { lastError: null }))?.state).toBe('RESERVED');
      expect((await trail(database, 'fx_conversion', 'fx-old')).map(([seq, from, to]) => [seq, from, to])).toStrictEqual([
        [1, null, 'RESERVING'],
        [2, 'RESERVING', 'RESERVED'],
      ]);
      for (const key of [identifier, withSubValue]) {
        expect((await identifiers.transition(key, ['REGISTERED'], 'OPTING_OUT'))?.state).toBe('OPTING_OUT');
        expect((await trail(database, 'identifier', auditSubjectId(key))).map(([seq, from, to]) => [seq, from, to])).toStrictEqual([
          [1, null, 'REQUESTED'],
          [2, 'REQUESTED', 'REGISTERED'],
          [3, 'REGISTERED', 'OPTING_OUT'],
        ]);
      }
    });

    it('brings up a table larger than one page, and leaves rows without a trail, or ahead of it, as they are', async () => {
      target = await open();
      const database = target.database;
      await database.migrate(MIGRATIONS);
      const identifiers = new IdentifierStore(database, NOW);
      // 1,203 identifiers: more than two pages of the backfill's 500 rows.
      const keys = Array.from({ length: 1_203 }, (_, index) => ({ idType: 'MSISDN' as const, idValue: `26097${String(index).padStart(7, '0')}` }));
      for (const key of keys) await identifiers.insert(key, 'ZMW', 'REQUESTED', {});
      const outgoing = new SqlOutgoingStore(database, NOW);
      for (let index = 0; index < 1_203; index += 1) {
        const homeTransactionId = `home-${String(index).padStart(5, '0')}`;
        await outgoing.insert(newPayment(homeTransactionId));
        // Every third payment has no transferId yet: it keeps no refund reference.
        if (index % 3 !== 0) await outgoing.transition(homeTransactionId, ['INITIATING'], 'QUOTED', { transferId: `tf-${index}` });
      }
      await asBeforeTheUpgrade(database);
      // A row with no trail at all (written by hand), and one whose number is ahead of its trail.
      await sql`delete from audit_events where subject = 'identifier' and subject_id = ${auditSubjectId(keys[0]!)}`.execute(database.reader<AnySchema>());
      await sql`update identifier_registry set audit_seq = 7 where id_value = ${keys[1]!.idValue}`.execute(database.reader<AnySchema>());
      await database.migrate(MIGRATIONS);

      const seqs = await sql<{ audit_seq: number | string; n: number | string }>`
        select audit_seq, count(*) as n from identifier_registry group by audit_seq order by audit_seq`.execute(database.reader<AnySchema>());
      expect(seqs.rows.map((row) => [Number(row.audit_seq), Number(row.n)])).toStrictEqual([
        [0, 1],
        [1, 1_201],
        [7, 1],
      ]);
      const payments = await sql<{ home_transaction_id: string; transfer_id: string | null; refund_reference: string | null; audit_seq: number | string }>`
        select home_transaction_id, transfer_id, refund_reference, audit_seq from outgoing_payments order by home_transaction_id`.execute(database.reader<AnySchema>());
      expect(payments.rows).toHaveLength(1_203);
      for (const [index, row] of payments.rows.entries()) {
        const expected = index % 3 === 0 ? { transfer: null, reference: null, seq: 1 } : { transfer: `tf-${index}`, reference: refundReference(`tf-${index}`), seq: 2 };
        expect([row.home_transaction_id, row.transfer_id, row.refund_reference, Number(row.audit_seq)]).toStrictEqual([
          `home-${String(index).padStart(5, '0')}`,
          expected.transfer,
          expected.reference,
          expected.seq,
        ]);
      }
    });
  });
}
