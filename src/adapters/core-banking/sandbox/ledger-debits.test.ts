import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import type { SandboxLedger } from './ledger.js';
import { BOOK_STORES, TEST_ACCOUNTS, figuresOf, type TestBooks } from '../../../../test/institutions/sandbox/sandbox-test-books.js';

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });
const PAYER = '260971000102';
/** One account model: customer debits land in the float, refunds are paid from it (opens at 1000). */
const FLOAT = 'float-zmw';

let books: TestBooks;
let ledger: SandboxLedger;

async function expectError(promise: Promise<unknown>, name: ErrorName, message?: string): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectorError);
  expect(error instanceof ConnectorError ? error.errorName : undefined).toBe(name);
  if (message !== undefined) expect(error instanceof ConnectorError ? error.message : undefined).toBe(message);
}

/** Collections and refunds move money between accounts only: the total stays 1335. */
async function expectConserved(): Promise<void> {
  expect(await ledger.conservationCheck()).toEqual({
    ok: true,
    problems: [],
    currencies: [{ currency: 'ZMW', totalBalance: '1335', totalFunded: '1335', totalHeld: '0', totalHolds: '0' }],
  });
}

// The same cases on both databases: SQLite runs each operation as a transaction of several
// statements, PostgreSQL reserves and commits in one statement each (hold-operations.ts).
describe.each(BOOK_STORES)('on %s', (_store, openTestBooks) => {
  beforeEach(async () => {
    books = await openTestBooks();
    ledger = books.ledger;
  });
  afterEach(async () => {
    await books.close();
  });

  describe('collect, bank flow (immediate debit)', () => {
    it('debits the payer into the float once per reference', async () => {
      expect(await ledger.collect('c-1', PAYER, zmw('25.5'))).toEqual({ state: 'succeeded' });
      expect(await ledger.collect('c-1', PAYER, zmw('25.5'))).toEqual({ state: 'succeeded' });
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '174.5', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1025.5', held: '0' });
      expect(await ledger.transactionStatus('c-1')).toBe('succeeded');
      await expectConserved();
    });

    it('finds the payer by account id or by an identifier of any type', async () => {
      await ledger.collect('c-1', 'acc-payer', zmw('1'));
      await ledger.collect('c-2', '4000123', zmw('2'));
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '199', held: '0' });
      expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '53', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1003', held: '0' });
      await expectConserved();
    });

    it('refuses short funds and inactive accounts, records the refusal and answers a retry the same', async () => {
      await expectError(ledger.collect('c-1', PAYER, zmw('200.01')), 'PayerInsufficientFunds');
      await expectError(ledger.collect('c-1', PAYER, zmw('200.01')), 'PayerInsufficientFunds');
      await expectError(ledger.collect('c-2', '260971000103', zmw('1')), 'PayerRejected', 'Payer rejected the payment: the account is barred');
      await expectError(ledger.collect('c-3', '260971000104', zmw('1')), 'PayerRejected', 'Payer rejected the payment: the account is blocked');
      await expectError(ledger.collect('c-4', '260971000105', zmw('1')), 'PayerRejected', 'Payer rejected the payment: the account is closed');
      await expectError(ledger.collect('c-5', '260971999999', zmw('1')), 'PartyNotFound');
      await expectError(ledger.collect('c-6', 'float-zmw', zmw('1')), 'PartyNotFound');
      for (const reference of ['c-1', 'c-2', 'c-3', 'c-4', 'c-5', 'c-6']) expect(await ledger.transactionStatus(reference)).toBe('failed');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1000', held: '0' });
      await expectConserved();
    });

    it('answers ModifiedRequest for the same reference with another amount or payer', async () => {
      await ledger.collect('c-1', PAYER, zmw('10'));
      await expectError(ledger.collect('c-1', PAYER, zmw('11')), 'ModifiedRequest');
      await expectError(ledger.collect('c-1', 'acc-shop', zmw('10')), 'ModifiedRequest');
      await expectError(ledger.collect('c-1', PAYER, { amount: '10', currency: 'USD' }), 'UnsupportedCurrency');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '190', held: '0' });
      await expectConserved();
    });

    it('debits once when the same collection arrives ten times at once', async () => {
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => ledger.collect('c-1', PAYER, zmw('20'))));
      expect(outcomes).toEqual(Array.from({ length: 10 }, () => ({ state: 'succeeded' })));
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '180', held: '0' });
      await expectConserved();
    });

    it('refuses a payerId that names two customers rather than guess', async () => {
      await books.close();
      books = await openTestBooks({
        ...TEST_ACCOUNTS,
        customers: [
          ...TEST_ACCOUNTS.customers,
          { accountId: 'acc-twin', idType: 'ALIAS', idValue: PAYER, firstName: 'Other', lastName: 'Person', status: 'active', balance: '5' },
        ],
      });
      ledger = books.ledger;
      await expectError(ledger.collect('c-1', PAYER, zmw('1')), 'PayerRejected', 'Payer rejected the payment: payerId names several customers');
      await ledger.collect('c-2', 'acc-twin', zmw('1'));
      expect(await figuresOf(ledger, 'acc-twin')).toEqual({ balance: '4', held: '0' });
    });

    it('refuses a payerId that is one customer\'s account id and another\'s identifier value, in books opened before the accounts check refused them', async () => {
      await books.close();
      const clash = { accountId: '4000123', idType: 'MSISDN', idValue: '260971000199', firstName: 'Mapalo', lastName: 'Lungu', status: 'active', balance: '70' } as const;
      books = await openTestBooks({ ...TEST_ACCOUNTS, customers: [...TEST_ACCOUNTS.customers, clash] }, undefined, { unchecked: true });
      ledger = books.ledger;
      await expectError(ledger.collect('c-1', '4000123', zmw('1')), 'PayerRejected', 'Payer rejected the payment: payerId names several customers');
      expect(await ledger.transactionStatus('c-1')).toBe('failed');
      // Each is still found by what names it alone.
      await ledger.collect('c-2', '260971000199', zmw('2'));
      await ledger.collect('c-3', 'acc-shop', zmw('3'));
      expect(await figuresOf(ledger, '4000123')).toEqual({ balance: '68', held: '0' });
      expect(await figuresOf(ledger, 'acc-shop')).toEqual({ balance: '52', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1005', held: '0' });
    });
  });

  describe('collect, mobile-operator flow (pending until the customer answers)', () => {
    it('moves no money until approved, then exactly once', async () => {
      expect(await ledger.collect('c-1', PAYER, zmw('25'), { pending: true })).toEqual({ state: 'pending' });
      expect(await ledger.collect('c-1', PAYER, zmw('25'), { pending: true })).toEqual({ state: 'pending' });
      expect(await ledger.transactionStatus('c-1')).toBe('pending');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await ledger.settleCollection('c-1', true)).toEqual({ state: 'succeeded' });
      expect(await ledger.settleCollection('c-1', true)).toEqual({ state: 'succeeded' });
      expect(await ledger.transactionStatus('c-1')).toBe('succeeded');
      expect(await ledger.collect('c-1', PAYER, zmw('25'), { pending: true })).toEqual({ state: 'succeeded' });
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '175', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1025', held: '0' });
      await expectError(ledger.settleCollection('c-1', false), 'TransferStateConflict');
      await expectConserved();
    });

    it('a declined prompt fails and moves nothing; approving it later conflicts', async () => {
      await ledger.collect('c-1', PAYER, zmw('25'), { pending: true });
      expect(await ledger.settleCollection('c-1', false)).toEqual({
        state: 'failed',
        refusal: { errorName: 'PayerRejected', detail: 'the customer declined the payment prompt' },
      });
      expect(await ledger.transactionStatus('c-1')).toBe('failed');
      await expectError(ledger.settleCollection('c-1', true), 'TransferStateConflict');
      await expectError(ledger.collect('c-1', PAYER, zmw('25'), { pending: true }), 'PayerRejected');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      await expectConserved();
    });

    it('checks the funds when the customer approves, not when prompted', async () => {
      expect(await ledger.collect('c-1', PAYER, zmw('300'), { pending: true })).toEqual({ state: 'pending' });
      expect(await ledger.settleCollection('c-1', true)).toEqual({
        state: 'failed',
        refusal: { errorName: 'PayerInsufficientFunds', detail: 'the balance is too low' },
      });
      await expectError(ledger.collect('c-2', '260971000103', zmw('1'), { pending: true }), 'PayerRejected');
      await expectError(ledger.settleCollection('c-unknown', true), 'TransferNotFound');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      await expectConserved();
    });
  });

  describe('collect, mobile-operator flow: a prompt expires 5 minutes after it was sent', () => {
    let nowMs = Date.parse('2026-03-01T10:00:00.000Z');
    const at = (offsetMs: number): void => {
      nowMs = Date.parse('2026-03-01T10:00:00.000Z') + offsetMs;
    };
    const EXPIRED = { state: 'failed', refusal: { errorName: 'PayerRejected', detail: 'the customer did not answer the payment prompt within 5 minutes' } };

    beforeEach(async () => {
      await books.close();
      at(0);
      books = await openTestBooks(TEST_ACCOUNTS, () => new Date(nowMs));
      ledger = books.ledger;
    });

    it('is pending until then, failed from then on, and no approval debits the customer afterwards', async () => {
      expect(await ledger.collect('c-1', PAYER, zmw('25'), { pending: true })).toEqual({ state: 'pending' });
      at(5 * 60_000 - 1);
      expect(await ledger.transactionStatus('c-1')).toBe('pending');
      at(5 * 60_000);
      expect(await ledger.transactionStatus('c-1')).toBe('failed');
      await expectError(ledger.settleCollection('c-1', true), 'TransferStateConflict');
      expect(await ledger.settleCollection('c-1', false)).toEqual(EXPIRED);
      await expectError(ledger.collect('c-1', PAYER, zmw('25'), { pending: true }), 'PayerRejected', 'Payer rejected the payment: the customer did not answer the payment prompt within 5 minutes');
      await expectError(ledger.refund('r-1', 'c-1', zmw('25'), PAYER), 'TransferStateConflict');
      expect(await ledger.transactionStatus('c-1')).toBe('failed');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1000', held: '0' });
      await expectConserved();
    });

    it('fails when answered too late, though nothing asked its status before', async () => {
      await ledger.collect('c-1', PAYER, zmw('25'), { pending: true });
      await ledger.collect('c-2', PAYER, zmw('10'), { pending: true });
      at(6 * 60_000);
      await expectError(ledger.settleCollection('c-1', true), 'TransferStateConflict');
      expect(await ledger.collect('c-2', PAYER, zmw('10'), { pending: true }).catch((error: unknown) => error)).toBeInstanceOf(ConnectorError);
      expect(await ledger.transactionStatus('c-1')).toBe('failed');
      expect(await ledger.transactionStatus('c-2')).toBe('failed');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      await expectConserved();
    });

    it('keeps an answer given in time: approval and expiry take turns, the first decides', async () => {
      await ledger.collect('c-1', PAYER, zmw('25'), { pending: true });
      at(5 * 60_000 - 1);
      expect(await ledger.settleCollection('c-1', true)).toEqual({ state: 'succeeded' });
      at(60 * 60_000);
      expect(await ledger.transactionStatus('c-1')).toBe('succeeded');
      expect(await ledger.settleCollection('c-1', true)).toEqual({ state: 'succeeded' });
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '175', held: '0' });
      await expectConserved();
    });

    it('settles an approval racing the status query of an expired prompt one way only', async () => {
      await ledger.collect('c-1', PAYER, zmw('25'), { pending: true });
      at(5 * 60_000);
      const [approval, status] = await Promise.allSettled([ledger.settleCollection('c-1', true), ledger.transactionStatus('c-1')]);
      expect(approval.status).toBe('rejected');
      expect(status).toEqual({ status: 'fulfilled', value: 'failed' });
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      await expectConserved();
    });
  });

  describe('refund', () => {
    beforeEach(async () => {
      await ledger.collect('c-1', PAYER, zmw('30'));
    });

    it('pays the payer back from the float, once per reference', async () => {
      await ledger.refund('r-1', 'c-1', zmw('30'), PAYER);
      await ledger.refund('r-1', 'c-1', zmw('30'), PAYER);
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1000', held: '0' });
      expect(await ledger.transactionStatus('r-1')).toBe('succeeded');
      await expectConserved();
    });

    it('never pays back more than the original debit, in one refund or several', async () => {
      await expectError(ledger.refund('r-1', 'c-1', zmw('30.01'), PAYER), 'ModifiedRequest');
      await ledger.refund('r-2', 'c-1', zmw('20'), PAYER);
      await expectError(ledger.refund('r-3', 'c-1', zmw('10.01'), PAYER), 'ModifiedRequest');
      await ledger.refund('r-4', 'c-1', zmw('10'), 'acc-payer');
      expect(await ledger.transactionStatus('r-1')).toBe('not-found');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1000', held: '0' });
      await expectConserved();
    });

    it('refuses a changed repeat, another payer, an unknown or failed original', async () => {
      await ledger.refund('r-1', 'c-1', zmw('5'), PAYER);
      await expectError(ledger.refund('r-1', 'c-1', zmw('6'), PAYER), 'ModifiedRequest');
      await expectError(ledger.refund('c-1', 'c-1', zmw('5'), PAYER), 'ModifiedRequest');
      await expectError(ledger.refund('r-2', 'c-1', zmw('5'), '4000123'), 'ModifiedRequest');
      await expectError(ledger.refund('r-3', 'c-none', zmw('5'), PAYER), 'TransferNotFound');
      await expectError(ledger.refund('r-4', 'r-1', zmw('5'), PAYER), 'TransferNotFound');
      await expectError(ledger.collect('c-2', PAYER, zmw('999')), 'PayerInsufficientFunds');
      await expectError(ledger.refund('r-5', 'c-2', zmw('5'), PAYER), 'TransferStateConflict');
      await ledger.collect('c-3', PAYER, zmw('5'), { pending: true });
      await expectError(ledger.refund('r-6', 'c-3', zmw('5'), PAYER), 'TransferStateConflict');
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '175', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1025', held: '0' });
      await expectConserved();
    });

    it('waits for the float when its available balance cannot pay the refund: nothing recorded, a retry pays', async () => {
      // The float holds 1030; reserving all of it for a payee leaves nothing available.
      await ledger.reserve('h-1', zmw('1030'), 'acc-payee');
      await expectError(ledger.refund('r-1', 'c-1', zmw('30'), PAYER), 'PayeeInsufficientLiquidity', 'Payee FSP insufficient liquidity: the float cannot pay this refund now');
      expect(await ledger.transactionStatus('r-1')).toBe('not-found');
      await ledger.release('h-1');
      await ledger.refund('r-1', 'c-1', zmw('30'), PAYER);
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      expect(await figuresOf(ledger, FLOAT)).toEqual({ balance: '1000', held: '0' });
      await expectConserved();
    });

    it('refunds once when the same refund arrives ten times at once', async () => {
      await Promise.all(Array.from({ length: 10 }, () => ledger.refund('r-1', 'c-1', zmw('30'), PAYER)));
      expect(await figuresOf(ledger, 'acc-payer')).toEqual({ balance: '200', held: '0' });
      await expectConserved();
    });
  });

  describe('transactionStatus', () => {
    it('answers not-found for a reference never seen', async () => {
      expect(await ledger.transactionStatus('never')).toBe('not-found');
    });
  });
});
