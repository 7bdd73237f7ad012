import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import type { SandboxLedger } from './ledger.js';
import { BOOK_STORES, TEST_ACCOUNTS, figuresOf, type TestBooks } from '../../../../test/institutions/sandbox/sandbox-test-books.js';

const zmw = (amount: string) => ({ amount, currency: 'ZMW' });
const REF = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';
const OTHER = '01JDV6M3AZ6XK1B0SPZ8Q4W2RB';

let books: TestBooks;
let ledger: SandboxLedger;

async function expectError(promise: Promise<unknown>, name: ErrorName): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectorError);
  expect(error instanceof ConnectorError ? error.errorName : undefined).toBe(name);
}

/** The books conserve money: every figure is exact, and the total is what was funded. */
async function expectConserved(total: string, held: string): Promise<void> {
  expect(await ledger.conservationCheck()).toEqual({
    ok: true,
    problems: [],
    currencies: [{ currency: 'ZMW', totalBalance: total, totalFunded: total, totalHeld: held, totalHolds: held }],
  });
}

// The same cases on both databases: SQLite runs each operation as a transaction of several
// statements, PostgreSQL reserves and commits in one statement each (hold-operations.ts).
describe.each(BOOK_STORES)('on %s', (store, openTestBooks) => {
  beforeEach(async () => {
    books = await openTestBooks();
    ledger = books.ledger;
  });
  afterEach(async () => {
    await books.close();
  });

  describe('reserve', () => {
    it('holds the amount on the float and leaves the balance', async () => {
      await ledger.reserve(REF, zmw('12.34'), 'acc-payee');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '12.34' });
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '50', held: '0' });
      expect(await ledger.transactionStatus(REF)).toBe('pending');
      await expectConserved('1335', '12.34');
    });

    it('is a no-op when repeated with the same amount, ModifiedRequest with another', async () => {
      await ledger.reserve(REF, zmw('12.34'), 'acc-payee');
      await ledger.reserve(REF, zmw('12.34'), 'acc-payee');
      await expectError(ledger.reserve(REF, zmw('12.35'), 'acc-payee'), 'ModifiedRequest');
      await expectError(ledger.reserve(REF, zmw('12.34'), 'acc-shop'), 'ModifiedRequest');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '12.34' });
      await expectConserved('1335', '12.34');
    });

    it('refuses more than the available float with PayeeInsufficientLiquidity', async () => {
      await ledger.reserve(REF, zmw('600'), 'acc-payee');
      await expectError(ledger.reserve(OTHER, zmw('400.01'), 'acc-payee'), 'PayeeInsufficientLiquidity');
      await ledger.reserve(OTHER, zmw('400'), 'acc-payee');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '1000' });
      await expectConserved('1335', '1000');
    });

    it('refuses an unknown payee account, a float-less currency and a malformed amount', async () => {
      await expectError(ledger.reserve(REF, zmw('1'), 'acc-nobody'), 'PartyNotFound');
      await expectError(ledger.reserve(REF, zmw('1'), 'float-zmw'), 'PartyNotFound');
      await expectError(ledger.reserve(REF, { amount: '1', currency: 'USD' }, 'acc-payee'), 'UnsupportedCurrency');
      await expectError(ledger.reserve(REF, zmw('1.001'), 'acc-payee'), 'ValidationFailed');
      await expectError(ledger.reserve(REF, zmw('0'), 'acc-payee'), 'ValidationFailed');
      expect(await ledger.transactionStatus(REF)).toBe('not-found');
      await expectConserved('1335', '0');
    });

    it('holds once when the same reserve arrives ten times at once', async () => {
      await Promise.all(Array.from({ length: 10 }, () => ledger.reserve(REF, zmw('99.99'), 'acc-payee')));
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '99.99' });
      await expectConserved('1335', '99.99');
    });

    it('lets only the reserves that fit through when many arrive at once', async () => {
      const references = Array.from({ length: 12 }, (_, index) => `ref-${index}`);
      const outcomes = await Promise.allSettled(references.map((reference) => ledger.reserve(reference, zmw('100'), 'acc-payee')));
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(10);
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '1000' });
      await expectConserved('1335', '1000');
    });
  });

  describe('commit', () => {
    it('moves the held amount from the float to the payee, once', async () => {
      await ledger.reserve(REF, zmw('12.34'), 'acc-payee');
      await ledger.commit(REF, zmw('12.34'), 'acc-payee');
      await ledger.commit(REF, zmw('12.34'), 'acc-payee');
      await ledger.reserve(REF, zmw('12.34'), 'acc-payee');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '987.66', held: '0' });
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '62.34', held: '0' });
      expect(await ledger.transactionStatus(REF)).toBe('succeeded');
      await expectConserved('1335', '0');
    });

    it('refuses a commit without a reservation, with another amount, or after a release', async () => {
      await expectError(ledger.commit(REF, zmw('5'), 'acc-payee'), 'TransferNotFound');
      await ledger.reserve(REF, zmw('5'), 'acc-payee');
      await expectError(ledger.commit(REF, zmw('5.01'), 'acc-payee'), 'ModifiedRequest');
      await expectError(ledger.commit(REF, zmw('5'), 'acc-shop'), 'ModifiedRequest');
      await ledger.release(REF);
      await expectError(ledger.commit(REF, zmw('5'), 'acc-payee'), 'TransferStateConflict');
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '50', held: '0' });
      await expectConserved('1335', '0');
    });

    it('refuses to credit a barred, blocked or closed account and keeps the hold', async () => {
      const cases: Array<[string, ErrorName]> = [
        ['acc-barred', 'PayeeBarred'],
        ['acc-blocked', 'PayeeBlocked'],
        ['acc-closed', 'PayeeClosed'],
      ];
      for (const [accountId, error] of cases) {
        await ledger.reserve(`ref-${accountId}`, zmw('5'), accountId);
        await expectError(ledger.commit(`ref-${accountId}`, zmw('5'), accountId), error);
      }
      expect(await figuresOf(ledger, 'acc-barred')).toEqual({ balance: '10', held: '0' });
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '15' });
      await expectConserved('1335', '15');
    });

    it('moves 18-digit amounts exactly', async () => {
      await ledger.fund('float-zmw', zmw('999999999999999999'), 'top-up-1');
      await ledger.reserve(REF, zmw('999999999999999999.99'), 'acc-payee');
      await ledger.commit(REF, zmw('999999999999999999.99'), 'acc-payee');
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '1000000000000000049.99', held: '0' });
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '999.01', held: '0' });
      await expectConserved('1000000000000001334', '0');
    });
  });

  describe('release', () => {
    it('gives the hold back to the float; again is a no-op; after a commit it conflicts', async () => {
      await ledger.reserve(REF, zmw('70'), 'acc-payee');
      await ledger.release(REF);
      await ledger.release(REF);
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
      expect(await ledger.transactionStatus(REF)).toBe('failed');
      await expectError(ledger.reserve(REF, zmw('70'), 'acc-payee'), 'TransferStateConflict');
      await ledger.reserve(OTHER, zmw('30'), 'acc-payee');
      await ledger.commit(OTHER, zmw('30'), 'acc-payee');
      await expectError(ledger.release(OTHER), 'TransferStateConflict');
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '80', held: '0' });
      await expectConserved('1335', '0');
    });

    it('records a tombstone when nothing was reserved, so a late reserve is refused', async () => {
      await ledger.release(REF);
      await expectError(ledger.reserve(REF, zmw('10'), 'acc-payee'), 'TransferStateConflict');
      await expectError(ledger.commit(REF, zmw('10'), 'acc-payee'), 'TransferStateConflict');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
      await expectConserved('1335', '0');
    });

    it('refuses a late reserve of a released reference as TransferStateConflict whatever payee or currency it names', async () => {
      await ledger.release(REF);
      await ledger.reserve(OTHER, zmw('40'), 'acc-payee');
      await ledger.release(OTHER);
      for (const reference of [REF, OTHER]) {
        await expectError(ledger.reserve(reference, zmw('10'), 'acc-nobody'), 'TransferStateConflict');
        await expectError(ledger.reserve(reference, zmw('10'), 'float-zmw'), 'TransferStateConflict');
        await expectError(ledger.reserve(reference, { amount: '10', currency: 'USD' }, 'acc-payee'), 'TransferStateConflict');
        expect(await ledger.transactionStatus(reference)).toBe('failed');
      }
      // A hold still held answers a reserve naming other terms as the changed request it is.
      await ledger.reserve('held-ref', zmw('5'), 'acc-payee');
      await expectError(ledger.reserve('held-ref', zmw('5'), 'acc-nobody'), 'ModifiedRequest');
      await expectError(ledger.reserve('held-ref', { amount: '5', currency: 'USD' }, 'acc-payee'), 'ModifiedRequest');
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '5' });
      await expectConserved('1335', '5');
    });

    it('settles a race of reserve and release on one reference either way, never holding a released reference', async () => {
      const [reserved, released] = await Promise.allSettled([ledger.reserve(REF, zmw('10'), 'acc-payee'), ledger.release(REF)]);
      expect(released.status).toBe('fulfilled');
      // The reservation first, then the release gives it back; or the release first, leaving a
      // tombstone that refuses the late reservation. On SQLite both go in one group, in the order
      // they were asked for: the reservation, then its release.
      if (store === 'SQLite') expect(reserved.status).toBe('fulfilled');
      if (reserved.status === 'rejected') {
        expect(reserved.reason).toBeInstanceOf(ConnectorError);
        expect((reserved.reason as ConnectorError).errorName).toBe('TransferStateConflict');
      }
      expect(await figuresOf(ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
      expect(await ledger.transactionStatus(REF)).toBe('failed');
      await expectConserved('1335', '0');
    });
  });

  describe('fund', () => {
    it('is the only change of the total, recorded once per reference', async () => {
      await ledger.fund('acc-payee', zmw('0.5'), 'gift-1');
      await ledger.fund('acc-payee', zmw('0.5'), 'gift-1');
      await expectError(ledger.fund('acc-payee', zmw('0.6'), 'gift-1'), 'ModifiedRequest');
      await expectError(ledger.fund('acc-nobody', zmw('1')), 'ValidationFailed');
      await expectError(ledger.fund('acc-payee', { amount: '1', currency: 'USD' }), 'UnsupportedCurrency');
      expect(await figuresOf(ledger, 'acc-payee')).toEqual({ balance: '50.5', held: '0' });
      await expectConserved('1335.5', '0');
    });

    it('the seed funds every opening balance', async () => {
      expect((await ledger.balances()).map((account) => [account.accountId, account.kind, account.balance, account.held, account.status])).toEqual([
        ['acc-barred', 'customer', '10', '0', 'barred'],
        ['acc-blocked', 'customer', '20', '0', 'blocked'],
        ['acc-closed', 'customer', '0', '0', 'closed'],
        ['acc-payee', 'customer', '50', '0', 'active'],
        ['acc-payer', 'customer', '200', '0', 'active'],
        ['acc-shop', 'customer', '55', '0', 'active'],
        ['float-zmw', 'float', '1000', '0', 'active'],
      ]);
      expect(TEST_ACCOUNTS.customers).toHaveLength(6);
      await expectConserved('1335', '0');
    });
  });
});
