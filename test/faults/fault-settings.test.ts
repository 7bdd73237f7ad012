import { afterEach, describe, expect, it } from 'vitest';
import { isConnectorError } from '../../src/domain/errors.js';
import { readFaultSettings, withFaults, type FaultSettings } from '../support/fault-settings.js';
import { SandboxCoreBanking } from '../../src/adapters/core-banking/sandbox/index.js';
import { openTestBooks, figuresOf, type TestBooks } from '../institutions/sandbox/sandbox-test-books.js';

const books: TestBooks[] = [];
afterEach(async () => {
  while (books.length > 0) await books.pop()?.close();
});

async function sandbox(): Promise<{ books: TestBooks; institution: SandboxCoreBanking }> {
  const opened = await openTestBooks();
  books.push(opened);
  return { books: opened, institution: new SandboxCoreBanking(opened.ledger) };
}

function settings(overrides: Partial<FaultSettings>): FaultSettings {
  return { rate: '1', operations: ['reserve', 'commit', 'release'], kinds: ['unavailable', 'timeout'], seed: 7, ...overrides };
}

/** The error name a call fails with, or 'ok'. */
async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    if (isConnectorError(error)) return error.errorName;
    throw error;
  }
}

const ZMW = (amount: string): { amount: string; currency: string } => ({ amount, currency: 'ZMW' });

describe('withFaults', () => {
  it('rate 1, unavailable: every listed call fails before the institution sees it', async () => {
    const { books: opened, institution } = await sandbox();
    const faulty = withFaults(institution, settings({ kinds: ['unavailable'] }));
    const names = [];
    for (let i = 0; i < 20; i += 1) {
      names.push(await outcome(faulty.reserve({ reference: `r-${i}`, amount: ZMW('1'), payeeAccountId: 'acc-payee' })));
    }
    expect(names).toEqual(Array.from({ length: 20 }, () => 'InstitutionUnavailable'));
    expect(await figuresOf(opened.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
    expect(await opened.ledger.transactionStatus('r-0')).toBe('not-found');
    // An operation not listed passes through.
    expect((await faulty.lookupParty({ idType: 'MSISDN', idValue: '260971000101' })).accountId).toBe('acc-payee');
  });

  it('rate 1, timeout: every listed call is performed, then its answer is lost', async () => {
    const { books: opened, institution } = await sandbox();
    const faulty = withFaults(institution, settings({ kinds: ['timeout'] }));
    expect(await outcome(faulty.reserve({ reference: 't-1', amount: ZMW('12.5'), payeeAccountId: 'acc-payee' }))).toBe('InstitutionTimeout');
    expect(await figuresOf(opened.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '12.5' });
    expect(await outcome(faulty.commit({ reference: 't-1', amount: ZMW('12.5'), payeeAccountId: 'acc-payee' }))).toBe('InstitutionTimeout');
    expect(await figuresOf(opened.ledger, 'acc-payee')).toEqual({ balance: '62.5', held: '0' });
    expect(await figuresOf(opened.ledger, 'float-zmw')).toEqual({ balance: '987.5', held: '0' });
    expect((await opened.ledger.conservationCheck()).ok).toBe(true);
  });

  it('rate 1 with both kinds fails every call, and the seed fixes which kind each gets', async () => {
    const { institution } = await sandbox();
    const run = async (): Promise<string[]> => {
      const faulty = withFaults(institution, settings({ operations: ['release'] }));
      const names: string[] = [];
      for (let i = 0; i < 200; i += 1) names.push(await outcome(faulty.release(`none-${i}`, { amount: '1', currency: 'ZMW' })));
      return names;
    };
    const first = await run();
    expect(first.filter((name) => name === 'ok')).toHaveLength(0);
    const unavailable = first.filter((name) => name === 'InstitutionUnavailable').length;
    expect(unavailable + first.filter((name) => name === 'InstitutionTimeout').length).toBe(200);
    // Equal shares: the count seed 7 gives, well inside the binomial spread around 100.
    expect(unavailable).toBe(94);
    expect(first.filter((name) => name === 'InstitutionTimeout')).toHaveLength(106);
    expect(unavailable).toBeGreaterThan(70);
    expect(unavailable).toBeLessThan(130);
    expect(await run()).toEqual(first);
  });

  it('a fractional rate fails that share of calls', async () => {
    const { institution } = await sandbox();
    const faulty = withFaults(institution, settings({ rate: '0.2', operations: ['release'], seed: 99 }));
    const names: string[] = [];
    for (let i = 0; i < 1000; i += 1) names.push(await outcome(faulty.release(`x-${i}`, { amount: '1', currency: 'ZMW' })));
    const failed = names.filter((name) => name !== 'ok').length;
    // The counts seed 99 gives: the outer (unavailable) layer fails 100 calls, the inner
    // (timeout) layer 91 of those the outer let through.
    expect(names.filter((name) => name === 'InstitutionUnavailable')).toHaveLength(100);
    expect(names.filter((name) => name === 'InstitutionTimeout')).toHaveLength(91);
    expect(failed).toBe(191);
    expect(failed).toBeGreaterThan(150);
    expect(failed).toBeLessThan(250);
  });
});

describe('readFaultSettings (the test entry point, test/support/connector-main.ts)', () => {
  function read(env: Record<string, string>): { settings: FaultSettings | undefined; problems: string[] } {
    const problems: string[] = [];
    return { settings: readFaultSettings(env, problems), problems };
  }

  it('is off with no rate and with rate 0', () => {
    expect(read({})).toEqual({ settings: undefined, problems: [] });
    expect(read({ CBS_FAULT_RATE: '0', CBS_FAULT_KINDS: 'timeout' })).toEqual({ settings: undefined, problems: [] });
  });

  it('reads the rate, operations, kinds and seed', () => {
    expect(read({ CBS_FAULT_RATE: '0.25' })).toEqual({
      settings: { rate: '0.25', operations: ['lookupParty', 'reserve', 'commit', 'release', 'collect', 'refund', 'transactionStatus'], kinds: ['unavailable', 'timeout'], seed: undefined },
      problems: [],
    });
    expect(read({ CBS_FAULT_RATE: '1', CBS_FAULT_OPERATIONS: 'commit, release,commit', CBS_FAULT_KINDS: 'timeout', CBS_FAULT_SEED: '42' })).toEqual({
      settings: { rate: '1', operations: ['commit', 'release'], kinds: ['timeout'], seed: 42 },
      problems: [],
    });
  });

  it('lists every problem', () => {
    expect(read({ CBS_FAULT_RATE: '1.5', CBS_FAULT_OPERATIONS: 'commit,debit', CBS_FAULT_KINDS: 'slow', CBS_FAULT_SEED: '-3' }).problems).toEqual([
      'CBS_FAULT_RATE: "1.5" is not a probability from 0 to 1',
      'CBS_FAULT_OPERATIONS: "debit" is not one of lookupParty, reserve, commit, release, collect, refund, transactionStatus, health, identifierEligibility, listIdentifiers, listMovements',
      'CBS_FAULT_KINDS: "slow" is not one of unavailable, timeout',
      'CBS_FAULT_KINDS: names nothing',
      'CBS_FAULT_SEED: "-3" is not a whole number from 0 to 4294967295',
    ]);
  });
});
