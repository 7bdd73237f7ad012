import { mkdtempSync, rmSync } from 'node:fs';
import pg from 'pg';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { contradictionNote } from '../../domain/contradiction.js';
import type { InboundTransferState } from '../../domain/inbound-transfer.js';
import type { NewTransfer, QuoteRecord, TransferInsertResult, TransferRecord } from '../../ports/store.js';
import { createTestDatabase } from '../../../test/support/postgres.js';
import { connectorMigrations } from './connector-migrations.js';
import { AuditTrail, auditMigrations } from './audit-trail.js';
import { SqlInboundStore } from './inbound-store.js';
import { PostgresDatabase } from './postgres-database.js';
import type { AnySchema, SqlDatabase } from './sql-database.js';
import { SqliteDatabase } from './sqlite-database.js';

const T0 = '2026-11-23T10:00:00.000Z';

function at(offsetMs: number): string {
  return new Date(Date.parse(T0) + offsetMs).toISOString();
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;

function quote(quoteId: string, changes: Partial<QuoteRecord> = {}): QuoteRecord {
  return {
    quoteId,
    transactionId: `tx-${quoteId}`,
    requestHash: 'a1'.repeat(32),
    amountType: 'SEND',
    amount: '100.50',
    currency: 'ZMW',
    transferAmount: '101.51',
    payeeReceiveAmount: '100.50',
    fee: '1.01',
    payeeIdType: 'MSISDN',
    payeeIdValue: '260971234567',
    payeeIdSubValue: null,
    expiration: at(MINUTE),
    payerKeys: ['CdtTrfTxInf.Dbtr.Nm', 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt'],
    response: {
      quoteId,
      transactionId: `tx-${quoteId}`,
      transferAmount: '101.51',
      transferAmountCurrency: 'ZMW',
      payeeReceiveAmount: '100.50',
      payeeReceiveAmountCurrency: 'ZMW',
      payeeFspFeeAmount: '1.01',
      payeeFspFeeAmountCurrency: 'ZMW',
      expiration: at(MINUTE),
      extensionList: [{ key: 'CdtTrfTxInf.Cdtr.Nm', value: 'Jane Banda' }],
    },
    createdAt: T0,
    ...changes,
  };
}

function newTransfer(transferId: string, changes: Partial<NewTransfer> = {}): NewTransfer {
  return {
    transferId,
    quoteId: `q-${transferId}`,
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
    payeeIdSubValue: 'branch-9',
    payeeAccountId: 'acc-0001234567',
    createdAt: T0,
    ...changes,
  };
}

/** What a freshly inserted transfer reads back as. */
function recordOf(result: TransferInsertResult | undefined): TransferRecord | undefined {
  return result !== undefined && 'record' in result ? result.record : undefined;
}

function storedTransfer(transfer: NewTransfer): TransferRecord {
  return {
    ...transfer,
    completedTimestamp: null,
    notifiedState: null,
    errorName: null,
    errorMessage: null,
    attempts: 0,
    nextAttemptAt: null,
    lastError: null,
    needsAttention: false,
    updatedAt: transfer.createdAt,
  };
}

interface StoreTarget {
  readonly database: SqlDatabase;
  /** Removes what `open` created; called after the database is closed. */
  cleanup(): Promise<void>;
}

/**
 * What SqlInboundStore promises (src/ports/store.ts), checked the same way on every database
 * it runs on. `open` returns an empty, unmigrated database.
 */
function describeInboundStoreContract(name: string, open: () => Promise<StoreTarget>): void {
  describe(`SqlInboundStore on ${name}`, () => {
    const context: { target?: StoreTarget; store?: SqlInboundStore } = {};
    let now = new Date(T0);

    function store(): SqlInboundStore {
      if (context.store === undefined) throw new Error('the store was not opened');
      return context.store;
    }

    async function trailOf(transferId: string): Promise<unknown[]> {
      if (context.target === undefined) throw new Error('the store was not opened');
      return new AuditTrail(context.target.database).history('incoming_transfer', transferId);
    }

    beforeAll(async () => {
      const target = await open();
      context.target = target;
      await target.database.migrate([...connectorMigrations, ...auditMigrations]);
      context.store = new SqlInboundStore(target.database, () => new Date(now.getTime()));
    });

    afterAll(async () => {
      if (context.target === undefined) return;
      await context.target.database.close();
      await context.target.cleanup();
    });

    beforeEach(async () => {
      now = new Date(T0);
      await context.target?.database.transaction<AnySchema, void>(async (trx) => {
        await trx.deleteFrom('inbound_transfers').execute();
        await trx.deleteFrom('quotes').execute();
        // The trail is append-only for the connector; each test starts from empty books.
        await trx.deleteFrom('audit_events').execute();
      });
    });

    describe('quotes', () => {
      it('stores a quote and reads it back unchanged', async () => {
        const stored = quote('q-1');
        expect(await store().insertQuote(stored)).toStrictEqual({ record: stored, created: true });
        expect(await store().findQuote('q-1')).toStrictEqual(stored);
      });

      it('keeps a quote without extension list or with a sub-value as it was given', async () => {
        const { extensionList: _dropped, ...response } = quote('q-2').response;
        const stored = quote('q-2', { payeeIdSubValue: 'wallet-2', payerKeys: [], response });
        await store().insertQuote(stored);
        expect(await store().findQuote('q-2')).toStrictEqual(stored);
      });

      it('finds nothing for an unknown quote id', async () => {
        expect(await store().findQuote('q-unknown')).toBeUndefined();
      });

      it('answers an insert of a known quote id with the stored quote and created=false', async () => {
        const first = quote('q-3');
        await store().insertQuote(first);
        const retry = quote('q-3', { amount: '999.99', fee: '9.99', requestHash: 'ff'.repeat(32) });
        expect(await store().insertQuote(retry)).toStrictEqual({ record: first, created: false });
        expect(await store().findQuote('q-3')).toStrictEqual(first);
      });
    });

    describe('transfers', () => {
      it('stores a transfer with empty recovery bookkeeping', async () => {
        const transfer = newTransfer('t-1');
        const expected = storedTransfer(transfer);
        expect(await store().insertTransfer(transfer)).toStrictEqual({ record: expected, created: true });
        expect(await store().findTransfer('t-1')).toStrictEqual(expected);
      });

      it('finds nothing for an unknown transfer id', async () => {
        expect(await store().findTransfer('t-unknown')).toBeUndefined();
      });

      it('answers an insert of a known transfer id with the stored transfer and created=false', async () => {
        const first = newTransfer('t-2');
        await store().insertTransfer(first);
        const retry = newTransfer('t-2', { amount: '5.00', payeeReceiveAmount: '5.00', state: 'REJECTED' });
        expect(await store().insertTransfer(retry)).toStrictEqual({ record: storedTransfer(first), created: false });
      });

      it('creates a transfer once when ten inserts of its id arrive together', async () => {
        const attempts = Array.from({ length: 10 }, (_, index) => newTransfer('t-3', { amount: `${index + 1}.00` }));
        const results = await Promise.all(attempts.map((transfer) => store().insertTransfer(transfer)));
        const winners = results.filter((result) => result.created);
        expect(winners).toHaveLength(1);
        const winner = recordOf(winners[0]);
        expect(results.map(recordOf)).toStrictEqual(results.map(() => winner));
        expect(await store().findTransfer('t-3')).toStrictEqual(winner);
      });
    });

    describe('one quote, one transfer that holds or moved money', () => {
      for (const state of ['RECEIVED', 'RESERVED', 'COMMITTING', 'COMMITTED', 'RELEASING'] as const) {
        it(`refuses another transferId for a quote whose transfer is ${state}, and stores nothing of it`, async () => {
          const holder = newTransfer('t-holder', { quoteId: 'q-shared', state });
          await store().insertTransfer(holder);
          expect(await store().insertTransfer(newTransfer('t-second', { quoteId: 'q-shared' }))).toStrictEqual({ created: false, quoteTaken: true });
          expect(await store().findTransfer('t-second')).toBeUndefined();
          // The holder's own retry is still answered from its record.
          expect(await store().insertTransfer(holder)).toStrictEqual({ record: storedTransfer(holder), created: false });
          expect(await trailOf('t-second')).toStrictEqual([]);
        });
      }

      for (const state of ['ABORTED', 'REJECTED'] as const) {
        it(`lets another transferId take a quote whose transfer ended ${state} (nothing moved), then refuses a third`, async () => {
          await store().insertTransfer(newTransfer('t-ended', { quoteId: 'q-shared', state }));
          const second = newTransfer('t-second', { quoteId: 'q-shared' });
          expect(await store().insertTransfer(second)).toStrictEqual({ record: storedTransfer(second), created: true });
          expect(await store().insertTransfer(newTransfer('t-third', { quoteId: 'q-shared' }))).toStrictEqual({ created: false, quoteTaken: true });
        });
      }

      it('frees the quote when its transfer moves to ABORTED, not before', async () => {
        await store().insertTransfer(newTransfer('t-first', { quoteId: 'q-shared', state: 'RESERVED' }));
        await store().transitionTransfer('t-first', ['RESERVED'], 'RELEASING');
        expect(await store().insertTransfer(newTransfer('t-second', { quoteId: 'q-shared' }))).toStrictEqual({ created: false, quoteTaken: true });
        await store().transitionTransfer('t-first', ['RELEASING'], 'ABORTED');
        expect((await store().insertTransfer(newTransfer('t-second', { quoteId: 'q-shared' }))).created).toBe(true);
      });

      it('gives a quote to exactly one of ten transferIds arriving together', async () => {
        const attempts = Array.from({ length: 10 }, (_, index) => newTransfer(`t-race-${index}`, { quoteId: 'q-race' }));
        const results = await Promise.all(attempts.map((transfer) => store().insertTransfer(transfer)));
        expect(results.filter((result) => result.created)).toHaveLength(1);
        expect(results.filter((result) => 'quoteTaken' in result)).toHaveLength(9);
        const found = await Promise.all(attempts.map((transfer) => store().findTransfer(transfer.transferId)));
        expect(found.filter((record) => record !== undefined)).toHaveLength(1);
      });
    });

    describe('transitionTransfer', () => {
      it('moves a transfer from a listed state and records the changes and the time', async () => {
        const transfer = newTransfer('t-10');
        await store().insertTransfer(transfer);
        now = new Date(at(5 * SECOND));
        const reserved = await store().transitionTransfer('t-10', ['RECEIVED'], 'RESERVED', { completedTimestamp: at(4 * SECOND) });
        const expected: TransferRecord = {
          ...storedTransfer(transfer),
          state: 'RESERVED',
          completedTimestamp: at(4 * SECOND),
          updatedAt: at(5 * SECOND),
        };
        expect(reserved).toStrictEqual(expected);
        expect(await store().findTransfer('t-10')).toStrictEqual(expected);
      });

      it('leaves a transfer alone when its state is not listed', async () => {
        const transfer = newTransfer('t-11', { state: 'RESERVED' });
        await store().insertTransfer(transfer);
        now = new Date(at(5 * SECOND));
        const moved = await store().transitionTransfer('t-11', ['RECEIVED', 'RELEASING'], 'REJECTED', {
          errorName: 'PAYEE_ACCOUNT_BARRED',
          errorMessage: 'barred',
        });
        expect(moved).toBeUndefined();
        expect(await store().findTransfer('t-11')).toStrictEqual(storedTransfer(transfer));
      });

      it('moves nothing for an unknown transfer id', async () => {
        expect(await store().transitionTransfer('t-unknown', ['RECEIVED'], 'RESERVED')).toBeUndefined();
      });

      it('with keepContradiction, keeps a contradiction flagged meanwhile and clears anything else', async () => {
        const contradiction = contradictionNote('ABORTED', 'transfer', 'COMMITTING');
        await store().insertTransfer(newTransfer('t-14', { state: 'COMMITTING' }));
        await store().insertTransfer(newTransfer('t-15', { state: 'COMMITTING' }));
        // Flagged by another process while this one was inside the institution's commit.
        expect(await store().recordTransferAttempt('t-14', 'COMMITTING', { lastError: contradiction, needsAttention: true })).toBe(true);
        expect(await store().recordTransferAttempt('t-15', 'COMMITTING', { lastError: 'institution timed out', needsAttention: true })).toBe(true);
        // The step started from records without the contradiction: it asks to clear both.
        const changes = { attempts: 0, nextAttemptAt: null, lastError: null, needsAttention: false, keepContradiction: true };
        expect(await store().transitionTransfer('t-14', ['COMMITTING'], 'COMMITTED', changes)).toMatchObject({ state: 'COMMITTED', lastError: contradiction, needsAttention: true });
        expect(await store().transitionTransfer('t-15', ['COMMITTING'], 'COMMITTED', changes)).toMatchObject({ state: 'COMMITTED', lastError: null, needsAttention: false });
        expect(await store().findTransfer('t-14')).toMatchObject({ lastError: contradiction, needsAttention: true });
      });

      it('with keepContradiction, a failed attempt written from the record before the flag keeps it too', async () => {
        const contradiction = contradictionNote('ABORTED', 'transfer', 'COMMITTING');
        await store().insertTransfer(newTransfer('t-16', { state: 'COMMITTING' }));
        expect(await store().recordTransferAttempt('t-16', 'COMMITTING', { lastError: contradiction, needsAttention: true })).toBe(true);
        const failed = { attempts: 1, nextAttemptAt: at(9 * SECOND), lastError: 'institution timed out', needsAttention: false, keepContradiction: true };
        expect(await store().recordTransferAttempt('t-16', 'COMMITTING', failed)).toBe(true);
        expect(await store().findTransfer('t-16')).toMatchObject({ attempts: 1, nextAttemptAt: at(9 * SECOND), lastError: contradiction, needsAttention: true });
        const done = { attempts: 0, nextAttemptAt: null, lastError: null, needsAttention: false, keepContradiction: true };
        expect(await store().transitionTransfer('t-16', ['COMMITTING'], 'COMMITTED', done)).toMatchObject({ lastError: contradiction, needsAttention: true });
      });

      it('lets exactly one of 20 concurrent transitions of the same transfer win', async () => {
        await store().insertTransfer(newTransfer('t-12', { state: 'RESERVED' }));
        const targets: InboundTransferState[] = Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? 'COMMITTING' : 'RELEASING'));
        const results = await Promise.all(
          targets.map((to, index) => store().transitionTransfer('t-12', ['RESERVED'], to, { notifiedState: `notification-${index}` })),
        );
        const winners = results.flatMap((record, index) => (record === undefined ? [] : [{ record, index }]));
        expect(winners).toHaveLength(1);
        const winner = winners[0];
        if (winner === undefined) throw new Error('no winner');
        expect(winner.record.state).toBe(targets[winner.index]);
        expect(winner.record.notifiedState).toBe(`notification-${winner.index}`);
        expect(await store().findTransfer('t-12')).toStrictEqual(winner.record);
      });

      it('truncates a long error message to 256 characters', async () => {
        await store().insertTransfer(newTransfer('t-13'));
        const rejected = await store().transitionTransfer('t-13', ['RECEIVED'], 'REJECTED', {
          errorName: 'PAYEE_ACCOUNT_BARRED',
          errorMessage: 'x'.repeat(300),
        });
        expect(rejected?.errorName).toBe('PAYEE_ACCOUNT_BARRED');
        expect(rejected?.errorMessage).toBe('x'.repeat(256));
      });
    });

    describe('recordTransferAttempt', () => {
      it('records the attempt without changing the state or the update time', async () => {
        const transfer = newTransfer('t-20', { state: 'COMMITTING' });
        await store().insertTransfer(transfer);
        now = new Date(at(MINUTE));
        expect(await store().recordTransferAttempt('t-20', 'COMMITTING', {
          attempts: 3,
          nextAttemptAt: at(2 * MINUTE),
          lastError: 'e'.repeat(300),
          needsAttention: true,
        })).toBe(true);
        const expected: TransferRecord = {
          ...storedTransfer(transfer),
          attempts: 3,
          nextAttemptAt: at(2 * MINUTE),
          lastError: 'e'.repeat(256),
          needsAttention: true,
        };
        expect(await store().findTransfer('t-20')).toStrictEqual(expected);

        await store().recordTransferAttempt('t-20', 'COMMITTING', { attempts: 4, nextAttemptAt: null, lastError: null, needsAttention: false });
        expect(await store().findTransfer('t-20')).toStrictEqual({ ...storedTransfer(transfer), attempts: 4 });
      });

      it('records nothing once the transfer has left the expected state', async () => {
        const transfer = newTransfer('t-21', { state: 'COMMITTING' });
        await store().insertTransfer(transfer);
        const committed = await store().transitionTransfer('t-21', ['COMMITTING'], 'COMMITTED');
        // A late failure of the losing actor must not flag the finished transfer.
        expect(await store().recordTransferAttempt('t-21', 'COMMITTING', { attempts: 9, nextAttemptAt: at(MINUTE), lastError: 'late', needsAttention: true })).toBe(false);
        expect(await store().findTransfer('t-21')).toStrictEqual(committed);
      });
    });

    describe('claimDueTransfers', () => {
      const recoveryStates: InboundTransferState[] = ['COMMITTING', 'RELEASING'];
      const claimAt = (offsetMs: number, limit = 10) => ({
        states: recoveryStates,
        now: at(offsetMs),
        staleBefore: at(offsetMs - 4 * MINUTE),
        leaseUntil: at(offsetMs + MINUTE),
        limit,
      });
      const ids = (records: readonly TransferRecord[]) => records.map((record) => record.transferId);

      /** At 5 minutes: two due (one stale, one whose retry time came), three not. */
      async function seed(): Promise<void> {
        await store().insertTransfer(newTransfer('stale', { state: 'COMMITTING', createdAt: at(0) }));
        await store().insertTransfer(newTransfer('retry-due', { state: 'RELEASING', createdAt: at(10 * SECOND) }));
        await store().recordTransferAttempt('retry-due', 'RELEASING', { attempts: 1, nextAttemptAt: at(4 * MINUTE) });
        await store().insertTransfer(newTransfer('retry-later', { state: 'COMMITTING', createdAt: at(20 * SECOND) }));
        await store().recordTransferAttempt('retry-later', 'COMMITTING', { attempts: 1, nextAttemptAt: at(10 * MINUTE) });
        await store().insertTransfer(newTransfer('recent', { state: 'COMMITTING', createdAt: at(3 * MINUTE) }));
        await store().insertTransfer(newTransfer('other-state', { state: 'RESERVED', createdAt: at(0) }));
      }

      it('claims the due transfers in the listed states, oldest update first', async () => {
        await seed();
        const claimed = await store().claimDueTransfers(claimAt(5 * MINUTE));
        expect(ids(claimed)).toStrictEqual(['stale', 'retry-due']);
        expect(claimed[1]).toStrictEqual({
          ...storedTransfer(newTransfer('retry-due', { state: 'RELEASING', createdAt: at(10 * SECOND) })),
          attempts: 1,
          nextAttemptAt: at(4 * MINUTE),
        });
      });

      it('takes at most `limit` transfers', async () => {
        await seed();
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE, 1)))).toStrictEqual(['stale']);
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE, 1)))).toStrictEqual(['retry-due']);
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE, 1)))).toStrictEqual([]);
      });

      it('does not claim a leased transfer again before its lease expires', async () => {
        await seed();
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE)))).toStrictEqual(['stale', 'retry-due']);
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE + 59 * SECOND)))).toStrictEqual([]);
        expect(ids(await store().claimDueTransfers(claimAt(6 * MINUTE)))).toStrictEqual(['stale', 'retry-due']);
      });

      it('releases the lease when an attempt is recorded or the transfer moves', async () => {
        await seed();
        await store().claimDueTransfers(claimAt(5 * MINUTE));
        await store().recordTransferAttempt('stale', 'COMMITTING', { attempts: 1, nextAttemptAt: at(5 * MINUTE) });
        now = new Date(at(5 * SECOND));
        await store().transitionTransfer('retry-due', ['RELEASING'], 'RELEASING');
        expect(ids(await store().claimDueTransfers(claimAt(5 * MINUTE + SECOND)))).toStrictEqual(['stale', 'retry-due']);
      });

      it('never gives the same transfer to two of four concurrent claimers', async () => {
        const all = Array.from({ length: 40 }, (_, index) => `due-${String(index).padStart(2, '0')}`);
        for (const [index, transferId] of all.entries()) {
          await store().insertTransfer(newTransfer(transferId, { state: 'COMMITTING', createdAt: at(index) }));
        }
        const claimer = async (): Promise<string[]> => {
          const mine: string[] = [];
          for (;;) {
            const batch = await store().claimDueTransfers(claimAt(10 * MINUTE, 3));
            if (batch.length === 0) return mine;
            mine.push(...ids(batch));
          }
        };
        const claims = await Promise.all([claimer(), claimer(), claimer(), claimer()]);
        const everything = claims.flat();
        expect(everything).toHaveLength(40);
        expect([...everything].sort()).toStrictEqual(all);
      });
    });
  });
}

async function openSqlite(): Promise<StoreTarget> {
  const directory = mkdtempSync(join(tmpdir(), 'cc-inbound-store-'));
  return {
    database: new SqliteDatabase(join(directory, 'connector.db')),
    async cleanup() {
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<StoreTarget> {
  const testDatabase = await createTestDatabase();
  return {
    database: new PostgresDatabase({ url: testDatabase.url, poolMax: 8 }),
    cleanup: () => testDatabase.drop(),
  };
}

describeInboundStoreContract('SQLite', openSqlite);
describeInboundStoreContract('PostgreSQL', openPostgres);

for (const [name, open] of [['SQLite', openSqlite], ['PostgreSQL', openPostgres]] as const) {
  describe(`migration 008 (one quote, one transfer) on ${name}, over transfers written before it`, () => {
    it('builds its index though a quote is already used by three transfers; the oldest keeps the quote, nothing is changed', async () => {
      const target = await open();
      try {
        const before = connectorMigrations.filter((migration) => migration.id !== 'connector-008-quote-held-once');
        expect(before).toHaveLength(connectorMigrations.length - 1);
        await target.database.migrate([...before, ...auditMigrations]);
        const store = new SqlInboundStore(target.database, () => new Date(T0));
        const written = [
          newTransfer('t-old', { quoteId: 'q-used-thrice', state: 'COMMITTED', createdAt: at(0) }),
          newTransfer('t-new', { quoteId: 'q-used-thrice', state: 'COMMITTED', createdAt: at(SECOND) }),
          newTransfer('t-newer', { quoteId: 'q-used-thrice', state: 'RESERVED', createdAt: at(2 * SECOND) }),
          newTransfer('t-aborted', { quoteId: 'q-reused', state: 'ABORTED', createdAt: at(0) }),
          newTransfer('t-after-abort', { quoteId: 'q-reused', state: 'COMMITTED', createdAt: at(SECOND) }),
          newTransfer("t-it's", { quoteId: 'q-quoted', state: 'RESERVED', createdAt: at(0) }),
          newTransfer("t-it's-2", { quoteId: 'q-quoted', state: 'RESERVED', createdAt: at(SECOND) }),
        ];
        for (const transfer of written) expect((await store.insertTransfer(transfer)).created).toBe(true);

        await target.database.migrate([...connectorMigrations, ...auditMigrations]);
        for (const transfer of written) expect(await store.findTransfer(transfer.transferId)).toStrictEqual(storedTransfer(transfer));
        // Each quote stays taken: by its oldest transfer, or the one after the abort.
        for (const quoteId of ['q-used-thrice', 'q-reused', 'q-quoted']) {
          expect(await store.insertTransfer(newTransfer(`t-late-${quoteId}`, { quoteId }))).toStrictEqual({ created: false, quoteTaken: true });
        }
        // A transfer left out of the index moves on as any other.
        expect((await store.transitionTransfer('t-newer', ['RESERVED'], 'RELEASING'))?.state).toBe('RELEASING');
        const fresh = newTransfer('t-fresh', { quoteId: 'q-fresh' });
        expect(await store.insertTransfer(fresh)).toStrictEqual({ record: storedTransfer(fresh), created: true });
      } finally {
        await target.database.close();
        await target.cleanup();
      }
    });
  });
}

describe('migration 008 on PostgreSQL while a replica of the previous release still writes', () => {
  it('waits for a transfer being written for a quote already taken and leaves it out of the index (before, the build failed on it)', async () => {
    const testDatabase = await createTestDatabase();
    const old = new PostgresDatabase({ url: testDatabase.url, poolMax: 2 });
    const upgraded = new PostgresDatabase({ url: testDatabase.url, poolMax: 2 });
    const writer = new pg.Client({ connectionString: testDatabase.url });
    try {
      const before = connectorMigrations.filter((migration) => migration.id !== 'connector-008-quote-held-once');
      await old.migrate([...before, ...auditMigrations]);
      const oldStore = new SqlInboundStore(old, () => new Date(T0));
      const first = newTransfer('t-first', { quoteId: 'q-race', state: 'COMMITTED', createdAt: at(0) });
      expect((await oldStore.insertTransfer(first)).created).toBe(true);
      // The previous release's insert of a second transferId for the quote, not committed yet.
      await writer.connect();
      const columns = (await writer.query<{ column_name: string }>("select column_name from information_schema.columns where table_name = 'inbound_transfers' order by ordinal_position")).rows.map((row) => row.column_name);
      const copied = columns.map((column) => (column === 'transfer_id' ? "'t-slipped-in'" : column === 'created_at' ? `'${at(SECOND)}'` : pg.escapeIdentifier(column)));
      await writer.query('begin');
      await writer.query(`insert into inbound_transfers (${columns.map((column) => pg.escapeIdentifier(column)).join(', ')}) select ${copied.join(', ')} from inbound_transfers where transfer_id = 't-first'`);

      const migrating = upgraded.migrate([...connectorMigrations, ...auditMigrations]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await writer.query('commit');
      await migrating;

      const store = new SqlInboundStore(upgraded, () => new Date(T0));
      expect((await store.findTransfer('t-slipped-in'))?.quoteId).toBe('q-race');
      expect(await store.insertTransfer(newTransfer('t-third', { quoteId: 'q-race' }))).toStrictEqual({ created: false, quoteTaken: true });
    } finally {
      await writer.end().catch(() => undefined);
      await old.close();
      await upgraded.close();
      await testDatabase.drop();
    }
  });
});

describe('SqlInboundStore on two PostgreSQL replicas', () => {
  it('never gives the same transfer to claimers in different processes', async () => {
    const testDatabase = await createTestDatabase();
    const replicas = [new PostgresDatabase({ url: testDatabase.url, poolMax: 4 }), new PostgresDatabase({ url: testDatabase.url, poolMax: 4 })];
    try {
      await Promise.all(replicas.map((replica) => replica.migrate([...connectorMigrations, ...auditMigrations])));
      const stores = replicas.map((replica) => new SqlInboundStore(replica, () => new Date(T0)));
      const [first] = stores;
      if (first === undefined) throw new Error('no store');
      const all = Array.from({ length: 60 }, (_, index) => `due-${String(index).padStart(2, '0')}`);
      for (const [index, transferId] of all.entries()) {
        await first.insertTransfer(newTransfer(transferId, { state: 'RELEASING', createdAt: at(index) }));
      }
      const claimer = async (store: SqlInboundStore): Promise<string[]> => {
        const mine: string[] = [];
        for (;;) {
          const batch = await store.claimDueTransfers({
            states: ['RELEASING'],
            now: at(10 * MINUTE),
            staleBefore: at(5 * MINUTE),
            leaseUntil: at(11 * MINUTE),
            limit: 4,
          });
          if (batch.length === 0) return mine;
          mine.push(...batch.map((record) => record.transferId));
        }
      };
      const claims = await Promise.all(stores.flatMap((store) => [claimer(store), claimer(store), claimer(store)]));
      const everything = claims.flat();
      expect(everything).toHaveLength(60);
      expect([...everything].sort()).toStrictEqual(all);
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
      await testDatabase.drop();
    }
  });

  it('gives a quote to exactly one of the transferIds both processes insert together', async () => {
    const testDatabase = await createTestDatabase();
    const replicas = [new PostgresDatabase({ url: testDatabase.url, poolMax: 4 }), new PostgresDatabase({ url: testDatabase.url, poolMax: 4 })];
    try {
      await Promise.all(replicas.map((replica) => replica.migrate([...connectorMigrations, ...auditMigrations])));
      const stores = replicas.map((replica) => new SqlInboundStore(replica, () => new Date(T0)));
      for (let round = 0; round < 5; round += 1) {
        const attempts = stores.flatMap((store, replica) =>
          Array.from({ length: 4 }, (_, index) => store.insertTransfer(newTransfer(`t-${round}-${replica}-${index}`, { quoteId: `q-round-${round}` }))),
        );
        const results = await Promise.all(attempts);
        expect(results.filter((result) => result.created)).toHaveLength(1);
        expect(results.filter((result) => 'quoteTaken' in result)).toHaveLength(7);
      }
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
      await testDatabase.drop();
    }
  });
});
