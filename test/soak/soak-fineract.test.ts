import { expect, it } from 'vitest';
import { FINERACT } from '../support/adapter-institutions.js';
import { AMBIGUOUS_FAULTS, describeSoak, runSoak, soakSeed } from './support/soak-run.js';

/**
 * Issue 9's proof for the fineract adapter: 300 incoming transfers and 50 outgoing payments under
 * seeded random faults (answers slower than the adapter's timeout included), the recovery
 * workers left to drain, then exact conservation on the fixture's books. The figures are printed
 * for the CI log; replay a failing run with the same seed.
 */
it('fineract: 300 incoming and 50 outgoing payments under mixed faults conserve money exactly', async () => {
  const figures = await runSoak(FINERACT, { seed: soakSeed(9002) });
  console.log(describeSoak(figures));
  expect(figures.discrepancies).toEqual([]);
  expect(figures.books.float).toBe(figures.books.expectedFloat);
  expect(figures.books.floatAvailable).toBe(figures.books.float);
  expect(figures.books.total).toBe(figures.books.expectedTotal);
  expect(figures.incoming.committed + figures.incoming.aborted + figures.incoming.notQuoted).toBe(300);
  expect(figures.incoming.committed).toBeGreaterThan(100);
  expect(figures.outgoing.completed + figures.outgoing.refunded + figures.outgoing.aborted + figures.outgoing.notStarted).toBe(50);
  // Every fault that leaves a write's outcome unknown met a write, not only reads.
  for (const fault of AMBIGUOUS_FAULTS) expect(figures.writeFaultsPlayed[fault] ?? 0, fault).toBeGreaterThan(0);
}, 300_000);
