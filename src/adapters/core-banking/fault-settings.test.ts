import { afterEach, describe, expect, it } from 'vitest';
import { isConnectorError } from '../../domain/errors.js';
import { withFaults, type FaultSettings } from './fault-settings.js';
import { SandboxCoreBanking } from './sandbox/index.js';
import { openTestBooks, figuresOf, type TestBooks } from '../../../test/institutions/sandbox/sandbox-test-books.js';

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
