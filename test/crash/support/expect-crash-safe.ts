import { expect } from 'vitest';
import type { SandboxAccounts } from '../../../src/adapters/core-banking/sandbox/index.js';
import { formatMinorUnits, toMinorUnits } from '../../../src/domain/money.js';
import type { CrashRunResult } from './crash-run.js';

/** The assertions every crash run must pass, whatever the store. */
export function expectCrashSafe(result: CrashRunResult, opening: SandboxAccounts, requestedKills: number): void {
  const { report, driver } = result;
  // Every switch request got one answer, the same every time, before and after every crash.
  expect(driver.answers.unexpected).toEqual([]);
  expect(driver.answers.inconsistencies).toEqual([]);
  expect(result.replayProblems).toEqual([]);
  // Every transfer final, as the hub decided; each credited or released once; nothing else moved.
  expect(report.problems).toEqual([]);
  expect(report.ledgerCredits).toBe(report.expectedCredits);
  const completed = result.flows.filter((flow) => flow.decision === 'COMPLETED').length;
  const stored = Object.values(report.states).reduce((sum, count) => sum + count, 0);
  expect(report.states['COMMITTED'] ?? 0).toBe(completed);
  expect((report.states['ABORTED'] ?? 0) + (report.states['REJECTED'] ?? 0)).toBe(stored - completed);
  // The books conserve money: nothing entered or left but the opening funding.
  const currency = opening.currency;
  const funded = [opening.float.balance, ...opening.customers.map((customer) => customer.balance)].reduce(
    (sum, balance) => sum + toMinorUnits(balance, currency),
    0n,
  );
  expect(report.conservation).toEqual({
    ok: true,
    problems: [],
    currencies: [
      { currency, totalBalance: formatMinorUnits(funded, currency), totalFunded: formatMinorUnits(funded, currency), totalHeld: '0', totalHolds: '0' },
    ],
  });
  // Outgoing payments: never refunded when the switch completed them, refunded exactly once when
  // it failed them after the customer was debited, nothing half-done, no second accept.
  expect(result.outgoing.unexpected).toEqual([]);
  expect(result.outgoing.inconsistencies).toEqual([]);
  expect(result.outgoingReport.problems).toEqual([]);
  expect(result.outgoingReport.refunds).toBe(result.outgoingReport.states['REFUNDED'] ?? 0);
  expect(result.outgoingReport.states['COMPLETED'] ?? 0).toBeGreaterThan(0);
  expect(result.outgoingReport.states['REFUNDED'] ?? 0).toBeGreaterThan(0);
  // The run really did crash, retry and fail: otherwise it proves nothing. Every planned SIGKILL
  // ended a live connector (one found dead would have failed the run): the requested kills of a
  // running connector, plus those during start-up.
  expect(requestedKills).toBeGreaterThanOrEqual(1);
  expect(result.kills).toBe(result.plannedKills);
  expect(result.kills - result.killsDuringStart).toBe(requestedKills);
  expect(completed).toBeGreaterThan(0);
  expect(stored - completed).toBeGreaterThan(0);
  expect(driver.answers.noAnswer).toBeGreaterThan(0);
  expect(driver.answers.retriedAfter5xx).toBeGreaterThan(0);
}

/** One line for the test log: what the run did. */
export function describeRun(name: string, seed: number, result: CrashRunResult): string {
  const { report, driver } = result;
  const states = Object.entries(report.states)
    .map(([state, count]) => `${state} ${count}`)
    .join(', ');
  return (
    `crash harness (${name}) seed=${seed} (rerun with CRASH_SEED=${seed}): ${result.kills} kills (${result.killsDuringStart} during start-up), ` +
    `${result.flows.length} payments, transfers ${states}, credits ${report.ledgerCredits}, ` +
    `${driver.answers.noAnswer} requests cut off, ${driver.answers.retriedAfter5xx} 5xx retried, ${result.replayed} replayed; ` +
    `outgoing payments ${Object.entries(result.outgoingReport.states).map(([state, count]) => `${state} ${count}`).join(', ')}, ` +
    `${result.outgoingReport.refunds} refunds, ${result.outgoing.noAnswer} channel requests cut off`
  );
}
