import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../src/domain/errors.js';
import { CORE_BANKING_OPERATIONS } from '../../src/adapters/core-banking/intercept.js';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import { SandboxCoreBanking } from '../../src/adapters/core-banking/sandbox/index.js';
import { figuresOf, openTestBooks, type TestBooks } from '../institutions/sandbox/sandbox-test-books.js';

const request = { reference: 't-1', amount: { amount: '12.5', currency: 'ZMW' }, payeeAccountId: 'acc-payee' };

let books: TestBooks;
let inner: SandboxCoreBanking;
beforeEach(async () => {
  books = await openTestBooks();
  inner = new SandboxCoreBanking(books.ledger);
});
afterEach(async () => {
  await books.close();
});

async function errorNameOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    if (error instanceof ConnectorError) return error.errorName;
    throw error;
  }
}

describe('FaultyCoreBanking', () => {
  it('fails the first N calls of the chosen operations before calling, then recovers', async () => {
    const faulty = new FaultyCoreBanking(inner, { operations: ['reserve'], failures: 2, kind: 'unavailable' });
    expect(await errorNameOf(faulty.reserve(request))).toBe('InstitutionUnavailable');
    expect(await errorNameOf(faulty.lookupParty({ idType: 'MSISDN', idValue: '260971000101' }))).toBe('resolved');
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '0' });
    expect(await errorNameOf(faulty.reserve(request))).toBe('InstitutionUnavailable');
    expect(await errorNameOf(faulty.reserve(request))).toBe('resolved');
    expect(faulty.injected).toBe(2);
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '12.5' });
    expect(faulty.name).toBe('sandbox');
    expect(faulty.capabilities).toEqual(inner.capabilities);
  });

  it('a timeout happens after the institution did the work; the retry finds it done', async () => {
    const faulty = new FaultyCoreBanking(inner, { operations: ['reserve', 'commit'], failures: 2, kind: 'timeout' });
    expect(await errorNameOf(faulty.reserve(request))).toBe('InstitutionTimeout');
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '1000', held: '12.5' });
    expect(await errorNameOf(faulty.commit(request))).toBe('InstitutionTimeout');
    expect(await figuresOf(books.ledger, 'acc-payee')).toEqual({ balance: '62.5', held: '0' });
    expect(await errorNameOf(faulty.commit(request))).toBe('resolved');
    expect(await figuresOf(books.ledger, 'acc-payee')).toEqual({ balance: '62.5', held: '0' });
    expect(await figuresOf(books.ledger, 'float-zmw')).toEqual({ balance: '987.5', held: '0' });
  });

  it('fails a fraction of calls as the injected random source decides', async () => {
    const draws = [0.1, 0.9, 0.29, 0.3];
    const faulty = new FaultyCoreBanking(inner, {
      operations: ['transactionStatus'],
      fraction: 0.3,
      kind: 'unavailable',
      random: () => draws.shift() ?? 1,
    });
    const outcomes = [];
    for (let call = 0; call < 5; call += 1) outcomes.push(await errorNameOf(faulty.transactionStatus('t-1')));
    expect(outcomes).toEqual(['InstitutionUnavailable', 'resolved', 'InstitutionUnavailable', 'resolved', 'resolved']);
    expect(faulty.injected).toBe(2);
  });

  it('takes either a count or a fraction', () => {
    expect(() => new FaultyCoreBanking(inner, { operations: ['reserve'], kind: 'unavailable' })).toThrow('give either failures or fraction');
    expect(() => new FaultyCoreBanking(inner, { operations: ['reserve'], kind: 'unavailable', failures: 1, fraction: 0.5 })).toThrow('give either failures or fraction');
    expect(() => new FaultyCoreBanking(inner, { operations: ['reserve'], kind: 'unavailable', fraction: 1.5 })).toThrow('fraction must be within 0..1');
    expect(() => new FaultyCoreBanking(inner, { operations: ['reserve'], kind: 'unavailable', failures: -1 })).toThrow('failures must be a whole number');
  });
});

describe('FaultyCoreBanking: every operation of the port', () => {
  it.each(CORE_BANKING_OPERATIONS)('can fail %s', async (operation) => {
    const faulty = new FaultyCoreBanking(inner, { operations: [operation], failures: 1, kind: 'unavailable' });
    const call = faulty[operation] as (argument?: unknown) => Promise<unknown>;
    expect(await errorNameOf(call(undefined))).toBe('InstitutionUnavailable');
    expect(faulty.injected).toBe(1);
  });
});
