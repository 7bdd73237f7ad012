import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorError, type ErrorName } from '../../src/domain/errors.js';
import { addMoney } from '../../src/domain/money.js';
import type { CoreBanking, CoreBankingCapabilities } from '../../src/ports/core-banking.js';
import type { FixtureSeed } from './fixture-books.js';
import type { Fault, FaultTarget } from './fixture-server.js';

/**
 * The contract every core-banking adapter passes: one suite, run once per adapter against its
 * fixture institution. It checks what the port promises (src/ports/core-banking.ts) with exact
 * values read back from the fixture's books, including that money is conserved after every
 * test. Cases that depend on a capability are registered only for adapters that declare it (the
 * suite's title names the capabilities), so nothing is ever skipped: a case either runs or does
 * not apply.
 */

/**
 * What the suite reads back from the institution's books, as decimal strings. Fixtures answer at
 * once; the sandbox reads its database, hence the promises.
 */
export interface ContractBooks {
  /** The institution's own reference for the account behind an identifier (PartyDetails.accountId). */
  accountIdOf(idValue: string): string | Promise<string>;
  balanceOf(idValue: string): string | Promise<string>;
  floatBalance(): string | Promise<string>;
  floatAvailable(): string | Promise<string>;
  /** The account customer debits land in and refunds are paid from (the float, or a settlement account). */
  settlementBalance(): string | Promise<string>;
  /** Sum of every balance on the books. */
  total(): string | Promise<string>;
  /** The customer approves / declines the payment prompt of a collection. */
  approveCollection(reference: string): void | Promise<void>;
  rejectCollection(reference: string): void | Promise<void>;
  /**
   * Bank flow: the customer channel debits the customer itself, at the institution and outside
   * the connector (spec: outgoing rule 2), under `reference`; a refund later pays it back.
   */
  debitByChannel(reference: string, idValue: string, amount: string): void | Promise<void>;
}

export interface ContractHarness {
  readonly coreBanking: CoreBanking;
  readonly books: ContractBooks;
  /** Absent for an institution without a wire (the sandbox): wire faults cannot happen there. */
  readonly faults?: { inject(fault: Fault, on?: FaultTarget, times?: number, skip?: number, delayMs?: number): void };
  close(): Promise<void>;
}

export interface ContractSubject {
  /** The adapter's `name`. */
  readonly name: string;
  /** Which variant of the institution the fixture plays, for the suite's title. */
  readonly variant?: string;
  readonly capabilities: CoreBankingCapabilities;
  /** How the institution reports an account seeded as barred (some institutions only know "blocked"). */
  readonly barredReportedAs: 'barred' | 'blocked';
  /** Whether the institution has a wire on which the suite can inject 5xx, hangs and malformed bodies. */
  readonly wire: boolean;
  /**
   * False for an institution that cannot look a transaction up by our reference (Fineract): its
   * transactionStatus must then refuse as NotSupported, which the suite checks instead of a status.
   */
  readonly statusByReference?: false;
  /**
   * Money-moving requests a commit sends before the one that credits the payee (default 0):
   * Fineract repeats the reservation's hold (answered from its store) before its commit batch.
   * Faults meant for the credit itself let these through.
   */
  readonly commitWritesBeforeCredit?: number;
  /** Starts the adapter against a fresh institution holding `seed`; adapter timeouts must be short (< 1 s, see ANSWER_AFTER_TIMEOUT_MS). */
  setup(seed: FixtureSeed): Promise<ContractHarness>;
}

export const CONTRACT_CURRENCY = 'ZMW';
export const PAYEE = { idType: 'MSISDN', idValue: '260971000001', firstName: 'Chanda', lastName: 'Mwila' } as const;
export const PAYER = { idType: 'MSISDN', idValue: '260971000002', firstName: 'Mutale', lastName: 'Banda' } as const;
export const BARRED = { idType: 'MSISDN', idValue: '260971000003', firstName: 'Bwalya', lastName: 'Phiri' } as const;
export const UNKNOWN_MSISDN = '260971999999';

/** The books every case starts from: total 1260. */
export const CONTRACT_SEED: FixtureSeed = {
  currency: CONTRACT_CURRENCY,
  floatBalance: '1000',
  accounts: [
    { ...PAYEE, balance: '50' },
    { ...PAYER, balance: '200' },
    { ...BARRED, balance: '10', status: 'barred' },
  ],
};
const SEED_TOTAL = '1260';
/** A slow-after delay above every adapter's timeout (< 1 s): the write is applied, its answer comes too late. */
const ANSWER_AFTER_TIMEOUT_MS = 1200;

/** Mojaloop transfer ids as the aggregate uses them for references. */
const REF = {
  a: '01JDV6M3AZ6XK1B0SPZ8Q4W2RA',
  b: '01JDV6M3AZ6XK1B0SPZ8Q4W2RB',
  c: '3f1c2a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b',
  d: '01JDV6M3AZ6XK1B0SPZ8Q4W2RD',
} as const;

export function runCoreBankingContract(subject: ContractSubject): void {
  const { outgoingFlow, nativeHolds } = subject.capabilities;
  const traits = [`${outgoingFlow} flow`, nativeHolds ? 'native holds' : 'float check', subject.wire ? 'wire faults' : 'no wire'];
  describe(`${subject.name}${subject.variant === undefined ? '' : ` (${subject.variant})`}: core-banking contract (${traits.join(', ')})`, () => {
    const state: ContractState = { harness: undefined, seedTotal: SEED_TOTAL };
    const harness = (): ContractHarness => {
      if (state.harness === undefined) throw new Error('contract: no harness');
      return state.harness;
    };
    const books = (): ContractBooks => harness().books;
    const bank = (): CoreBanking => harness().coreBanking;
    const faults = (): NonNullable<ContractHarness['faults']> => {
      const injector = harness().faults;
      if (injector === undefined) throw new Error('contract: subject declared a wire but gave no fault injector');
      return injector;
    };

    beforeEach(async () => {
      state.harness = await subject.setup(CONTRACT_SEED);
      state.seedTotal = SEED_TOTAL;
    });
    afterEach(async () => {
      const current = state.harness;
      state.harness = undefined;
      if (current === undefined) return;
      try {
        // Conservation after every case: money only ever moves between accounts of the books.
        expect(await current.books.total()).toBe(state.seedTotal);
      } finally {
        await current.close();
      }
    });

    // A case that needs a capability the adapter does not declare is not registered at all.
    const capable = (condition: boolean) => (title: string, body: () => Promise<void>) => {
      if (condition) it(title, body);
    };
    const onWire = capable(subject.wire);
    const withHolds = capable(nativeHolds);
    const withoutHolds = capable(!nativeHolds);
    const collecting = capable(outgoingFlow === 'mobile-operator');

    it('declares its name and capabilities', async () => {
      expect(bank().name).toBe(subject.name);
      expect(bank().capabilities).toEqual(subject.capabilities);
      await expect(bank().health()).resolves.toBeUndefined();
    });

    describeLookups(subject, bank, books, onWire, faults);
    describeReservations(subject, bank, books, withHolds, withoutHolds);
    describeReservationEdges(bank, books, state, subject);
    const onWireWithHolds = capable(subject.wire && nativeHolds);
    // Every case there needs a wire: an institution without one (the sandbox) has no such group.
    if (subject.wire) describeFaultsOnMoney(subject, bank, books, onWire, onWireWithHolds, faults);
    describeCustomerDebits(subject, bank, books, collecting, onWire, faults);
  });
}

interface ContractState {
  harness: ContractHarness | undefined;
  /** Total of the books the current case started from. */
  seedTotal: string;
}

type Capable = (title: string, body: () => Promise<void>) => void;

function describeLookups(
  subject: ContractSubject,
  bank: () => CoreBanking,
  books: () => ContractBooks,
  onWire: Capable,
  faults: () => NonNullable<ContractHarness['faults']>,
): void {
  describe('lookupParty', () => {
    it('finds an active party by identifier', async () => {
      const party = await bank().lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue });
      expect(party).toEqual({
        idType: 'MSISDN',
        idValue: PAYEE.idValue,
        accountId: await books().accountIdOf(PAYEE.idValue),
        currency: CONTRACT_CURRENCY,
        status: 'active',
        displayName: 'Chanda Mwila',
        firstName: 'Chanda',
        lastName: 'Mwila',
      });
    });

    it('answers PartyNotFound for an unknown identifier', async () => {
      await expectConnectorError(bank().lookupParty({ idType: 'MSISDN', idValue: UNKNOWN_MSISDN }), 'PartyNotFound');
    });

    it(`reports a barred account as ${subject.barredReportedAs}`, async () => {
      const party = await bank().lookupParty({ idType: 'MSISDN', idValue: BARRED.idValue });
      expect(party.status).toBe(subject.barredReportedAs);
    });

    onWire('answers InstitutionUnavailable on a 5xx', async () => {
      faults().inject('server-error');
      await expectConnectorError(bank().lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /HTTP 503/);
    });

    onWire('answers InstitutionTimeout when the institution hangs', async () => {
      faults().inject('hang-before');
      await expectConnectorError(bank().lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionTimeout', /outcome unknown/);
    });

    onWire('answers InstitutionUnavailable for a body that is not JSON', async () => {
      faults().inject('malformed-json');
      await expectConnectorError(bank().lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /malformed/);
    });

    onWire('answers InstitutionUnavailable for JSON of the wrong shape', async () => {
      faults().inject('malformed-shape');
      await expectConnectorError(bank().lookupParty({ idType: 'MSISDN', idValue: PAYEE.idValue }), 'InstitutionUnavailable', /malformed/);
    });

    onWire('health fails while the institution answers 5xx', async () => {
      faults().inject('server-error');
      await expectConnectorError(bank().health(), 'InstitutionUnavailable');
    });
  });
}

function describeReservations(subject: ContractSubject, bank: () => CoreBanking, books: () => ContractBooks, withHolds: Capable, withoutHolds: Capable): void {
  const money = (amount: string) => ({ amount, currency: CONTRACT_CURRENCY });
  const payeeAccount = async () => books().accountIdOf(PAYEE.idValue);

  describe('reserve, commit, release', () => {
    it('reserve then commit credits the payee with exactly the amount', async () => {
      await bank().reserve({ reference: REF.a, amount: money('12.34'), payeeAccountId: await payeeAccount() });
      await bank().commit({ reference: REF.a, amount: money('12.34'), payeeAccountId: await payeeAccount() });
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      expect(await books().floatAvailable()).toBe('987.66');
      await expectStatus(subject, bank(), REF.a, 'succeeded');
    });

    it('a repeated reserve and commit move the money once', async () => {
      const request = { reference: REF.a, amount: money('12.34'), payeeAccountId: await payeeAccount() };
      await bank().reserve(request);
      await bank().reserve(request);
      await bank().commit(request);
      await bank().commit(request);
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      expect(await books().floatAvailable()).toBe('987.66');
    });

    withHolds('reserve holds the float until release gives it back', async () => {
      await bank().reserve({ reference: REF.b, amount: money('100'), payeeAccountId: await payeeAccount() });
      await bank().reserve({ reference: REF.b, amount: money('100'), payeeAccountId: await payeeAccount() });
      expect(await books().floatAvailable()).toBe('900');
      expect(await books().floatBalance()).toBe('1000');
      await bank().release(REF.b, money('100'));
      await bank().release(REF.b, money('100'));
      expect(await books().floatAvailable()).toBe('1000');
      expect(await books().balanceOf(PAYEE.idValue)).toBe('50');
    });

    withoutHolds('reserve checks the float and holds nothing; release is a no-op', async () => {
      await bank().reserve({ reference: REF.b, amount: money('100'), payeeAccountId: await payeeAccount() });
      expect(await books().floatAvailable()).toBe('1000');
      await bank().release(REF.b, money('100'));
      expect(await books().floatBalance()).toBe('1000');
      expect(await books().balanceOf(PAYEE.idValue)).toBe('50');
    });

    it('reserve beyond the float declines with PayeeInsufficientLiquidity', async () => {
      await expectConnectorError(
        bank().reserve({ reference: REF.c, amount: money('1000.01'), payeeAccountId: await payeeAccount() }),
        'PayeeInsufficientLiquidity',
      );
      expect(await books().floatAvailable()).toBe('1000');
    });

    it('release of a reference never reserved is a no-op', async () => {
      await expect(bank().release(REF.d, money('7'))).resolves.toBeUndefined();
      expect(await books().floatAvailable()).toBe('1000');
    });
  });
}

function describeReservationEdges(bank: () => CoreBanking, books: () => ContractBooks, state: ContractState, subject: ContractSubject): void {
  const money = (amount: string) => ({ amount, currency: CONTRACT_CURRENCY });
  const payeeAccount = async () => books().accountIdOf(PAYEE.idValue);

  describe('reserve and commit at the edges', () => {
    it('commit to a barred account declines and moves nothing', async () => {
      const barred = await books().accountIdOf(BARRED.idValue);
      await bank().reserve({ reference: REF.a, amount: money('5'), payeeAccountId: barred });
      const expected: ErrorName = subject.barredReportedAs === 'barred' ? 'PayeeBarred' : 'PayeeBlocked';
      await expectConnectorError(bank().commit({ reference: REF.a, amount: money('5'), payeeAccountId: barred }), expected);
      expect(await books().balanceOf(BARRED.idValue)).toBe('10');
      expect(await books().floatBalance()).toBe('1000');
      await bank().release(REF.a, money('5'));
      expect(await books().floatAvailable()).toBe('1000');
    });

    it('moves amounts beyond a double\'s precision exactly', async () => {
      await state.harness?.close();
      state.harness = await subject.setup({ ...CONTRACT_SEED, floatBalance: '900000000000000000' });
      state.seedTotal = '900000000000000260';
      const amount = money('123456789012345.67');
      await bank().reserve({ reference: REF.a, amount, payeeAccountId: await payeeAccount() });
      await bank().commit({ reference: REF.a, amount, payeeAccountId: await payeeAccount() });
      expect(await books().balanceOf(PAYEE.idValue)).toBe('123456789012395.67');
      expect(await books().floatBalance()).toBe('899876543210987654.33');
    });
  });
}

function describeFaultsOnMoney(
  subject: ContractSubject,
  bank: () => CoreBanking,
  books: () => ContractBooks,
  onWire: Capable,
  onWireWithHolds: Capable,
  faults: () => NonNullable<ContractHarness['faults']>,
): void {
  const request = async () => ({ reference: REF.a, amount: { amount: '12.34', currency: CONTRACT_CURRENCY }, payeeAccountId: await books().accountIdOf(PAYEE.idValue) });
  const beforeCredit = subject.commitWritesBeforeCredit ?? 0;

  describe('faults while moving money', () => {
    onWire('a 5xx on commit moves nothing; the retry credits once', async () => {
      await bank().reserve(await request());
      faults().inject('server-error', 'next-write');
      await expectConnectorError(bank().commit(await request()), 'InstitutionUnavailable');
      expect(await books().balanceOf(PAYEE.idValue)).toBe('50');
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
    });

    onWire('a commit that times out after the institution acted is completed once by the retry', async () => {
      await bank().reserve(await request());
      faults().inject('hang-after', 'next-write');
      await expectConnectorError(bank().commit(await request()), 'InstitutionTimeout', /outcome unknown/);
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      expect(await books().floatAvailable()).toBe('987.66');
    });

    onWire('a malformed answer to commit is not taken as success; the retry credits once', async () => {
      await bank().reserve(await request());
      faults().inject('malformed-shape', 'next-write');
      await expectConnectorError(bank().commit(await request()), 'InstitutionUnavailable', /malformed/);
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
    });

    onWire('a commit applied then answered 5xx has credited the payee; the retry moves nothing more', async () => {
      await bank().reserve(await request());
      faults().inject('applied-then-5xx', 'next-write', 1, beforeCredit);
      await expectConnectorError(bank().commit(await request()), 'InstitutionUnavailable', /HTTP 500/);
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      expect(await books().floatAvailable()).toBe('987.66');
    });

    onWire('a commit applied but answered after the timeout has credited the payee; the retry moves nothing more', async () => {
      await bank().reserve(await request());
      faults().inject('slow-after', 'next-write', 1, beforeCredit, ANSWER_AFTER_TIMEOUT_MS);
      await expectConnectorError(bank().commit(await request()), 'InstitutionTimeout', /outcome unknown/);
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatBalance()).toBe('987.66');
      expect(await books().floatAvailable()).toBe('987.66');
    });

    onWireWithHolds('a reserve that times out is repeated without holding twice', async () => {
      faults().inject('hang-after', 'next-write');
      await expectConnectorError(bank().reserve(await request()), 'InstitutionTimeout');
      await bank().reserve(await request());
      await bank().commit(await request());
      expect(await books().balanceOf(PAYEE.idValue)).toBe('62.34');
      expect(await books().floatAvailable()).toBe('987.66');
    });
  });
}

function describeCustomerDebits(
  subject: ContractSubject,
  bank: () => CoreBanking,
  books: () => ContractBooks,
  collecting: Capable,
  onWire: Capable,
  faults: () => NonNullable<ContractHarness['faults']>,
): void {
  const money = (amount: string) => ({ amount, currency: CONTRACT_CURRENCY });
  // The settlement account may start anywhere (a sandbox opens it empty), so it is checked by difference.
  const plus = (amount: string, delta: string) => addMoney(money(amount), money(delta)).amount;

  describe('collect, refund, transactionStatus', () => {
    collecting('collect prompts the payer, answers pending, and moves the money on approval', async () => {
      const settlement = await books().settlementBalance();
      const result = await bank().collect({ reference: REF.a, amount: money('25'), payerId: PAYER.idValue, description: 'Send money' });
      expect(result.status).toBe('pending');
      expect(await books().balanceOf(PAYER.idValue)).toBe('200');
      expect(await bank().transactionStatus(REF.a)).toBe('pending');
      await books().approveCollection(REF.a);
      expect(await bank().transactionStatus(REF.a)).toBe('succeeded');
      expect(await books().balanceOf(PAYER.idValue)).toBe('175');
      expect(await books().settlementBalance()).toBe(plus(settlement, '25'));
    });

    collecting('a repeated collect prompts once', async () => {
      await bank().collect({ reference: REF.a, amount: money('25'), payerId: PAYER.idValue });
      const again = await bank().collect({ reference: REF.a, amount: money('25'), payerId: PAYER.idValue });
      expect(again.status).toBe('pending');
      await books().approveCollection(REF.a);
      expect(await books().balanceOf(PAYER.idValue)).toBe('175');
    });

    collecting('a declined prompt fails and moves nothing', async () => {
      await bank().collect({ reference: REF.a, amount: money('25'), payerId: PAYER.idValue });
      await books().rejectCollection(REF.a);
      expect(await bank().transactionStatus(REF.a)).toBe('failed');
      expect(await books().balanceOf(PAYER.idValue)).toBe('200');
    });

    it(`refund pays back a customer debit exactly once (debit by ${subject.capabilities.outgoingFlow === 'bank' ? 'the channel' : 'collect'})`, async () => {
      const settlement = await books().settlementBalance();
      if (subject.capabilities.outgoingFlow === 'bank') {
        await books().debitByChannel(REF.a, PAYER.idValue, '30');
      } else {
        await bank().collect({ reference: REF.a, amount: money('30'), payerId: PAYER.idValue });
        await books().approveCollection(REF.a);
      }
      expect(await books().balanceOf(PAYER.idValue)).toBe('170');
      expect(await books().settlementBalance()).toBe(plus(settlement, '30'));
      const refund = { reference: REF.b, originalReference: REF.a, amount: money('30'), payerId: PAYER.idValue };
      await bank().refund(refund);
      await bank().refund(refund);
      expect(await books().balanceOf(PAYER.idValue)).toBe('200');
      expect(await books().settlementBalance()).toBe(settlement);
      await expectStatus(subject, bank(), REF.b, 'succeeded');
    });

    onWire('a refund applied then answered 5xx has paid back the payer; the retry pays nothing more', async () => {
      const settlement = await books().settlementBalance();
      if (subject.capabilities.outgoingFlow === 'bank') {
        await books().debitByChannel(REF.a, PAYER.idValue, '30');
      } else {
        await bank().collect({ reference: REF.a, amount: money('30'), payerId: PAYER.idValue });
        await books().approveCollection(REF.a);
      }
      expect(await books().balanceOf(PAYER.idValue)).toBe('170');
      const refund = { reference: REF.b, originalReference: REF.a, amount: money('30'), payerId: PAYER.idValue };
      faults().inject('applied-then-5xx', 'next-write');
      await expectConnectorError(bank().refund(refund), 'InstitutionUnavailable', /HTTP 500/);
      expect(await books().balanceOf(PAYER.idValue)).toBe('200');
      expect(await books().settlementBalance()).toBe(settlement);
      await bank().refund(refund);
      expect(await books().balanceOf(PAYER.idValue)).toBe('200');
      expect(await books().settlementBalance()).toBe(settlement);
      await expectStatus(subject, bank(), REF.b, 'succeeded');
    });

    it('reports not-found for a reference it never saw', async () => {
      await expectStatus(subject, bank(), REF.d, 'not-found');
    });
  });
}

/** The adapter's status of a reference, or, for an institution that cannot look one up, its NotSupported. */
async function expectStatus(subject: ContractSubject, bank: CoreBanking, reference: string, status: string): Promise<void> {
  if (subject.statusByReference === false) await expectConnectorError(bank.transactionStatus(reference), 'NotSupported');
  else expect(await bank.transactionStatus(reference)).toBe(status);
}

/** Awaits a rejection with a ConnectorError of the given name (and message pattern). */
export async function expectConnectorError(promise: Promise<unknown>, name: ErrorName, message?: RegExp): Promise<ConnectorError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof ConnectorError)) {
    throw new Error(`expected ConnectorError ${name}, got ${caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught)}`);
  }
  expect(caught.errorName).toBe(name);
  if (message !== undefined) expect(caught.message).toMatch(message);
  return caught;
}
