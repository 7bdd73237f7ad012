import { isDeepStrictEqual } from 'node:util';
import { SandboxLedger, demoAccounts } from '../../../src/adapters/core-banking/sandbox/index.js';
import { seededRandom } from '../../support/seeded-random.js';
import type { SqlDatabase } from '../../../src/adapters/store/sql-database.js';
import { startFakeSwitch } from '../../support/fake-switch.js';
import { ConnectorChild, freePort, type ChildOptions } from './connector-child.js';
import { checkInvariants, unfinishedTransfers, type InvariantReport } from './ledger-invariants.js';
import { CALLBACK_SECRET, CHANNEL_KEY, OutgoingDriver } from './outgoing-driver.js';
import { checkOutgoing, unsettledPayments, type OutgoingReport } from './outgoing-invariants.js';
import { PUT_RETRIES, SwitchDriver, sleep, statusCodeOf, type Answer, type FlowRecord, type Payee } from './switch-driver.js';

/**
 * The crash harness: one connector process on a real database, switch traffic from several
 * concurrent flows, SIGKILL at seeded random moments (some during start-up), a restart on the
 * same database after each, the institution failing a share of calls until the last restart,
 * then: wait for recovery to finish everything, send every request again, stop cleanly and
 * check the money invariants on the database itself.
 */

export interface CrashRunOptions {
  readonly seed: number;
  /** SIGKILLs of a running connector, at least 1; the run may add kills during start-up. */
  readonly kills: number;
  /** A SQLite path or a postgres:// URL, given to the connector as DATABASE_URL. */
  readonly databaseUrl: string;
  /** Opens the same database in this process, to watch and check it. */
  readonly openDatabase: () => Promise<SqlDatabase>;
  /** CBS_FAULT_RATE for every start but the last. */
  readonly faultRate: string;
  /** The built connector (ConnectorBuild.mainPath): the starts without faults, the last included. */
  readonly mainPath: string;
  /** The built test entry point (ConnectorBuild.testMainPath): the starts with faults. */
  readonly testMainPath: string;
  readonly workDir: string;
  /** Concurrent payments in flight. */
  readonly workers: number;
  /** Upper bound on payments started, whatever the timing. */
  readonly maxFlows: number;
  /** Longest wait for recovery to bring every transfer to a final state. */
  readonly drainDeadlineMs: number;
  /** Outgoing payments (bank flow) planned for the run; 0 drives none. */
  readonly outgoingPayments: number;
}

export interface CrashRunResult {
  /** SIGKILLs the run planned: options.kills plus the kills during start-up it drew. */
  readonly plannedKills: number;
  /** SIGKILLs that ended a live process (ConnectorChild.kill() answered true). */
  readonly kills: number;
  /** Of those, the ones that hit a process still starting. */
  readonly killsDuringStart: number;
  readonly flows: readonly FlowRecord[];
  readonly driver: SwitchDriver;
  /** Problems found by sending every answered request again after the last restart. */
  readonly replayProblems: readonly string[];
  readonly replayed: number;
  readonly report: InvariantReport;
  readonly outgoing: OutgoingDriver;
  readonly outgoingReport: OutgoingReport;
}

/** Payees: the demo customers that are active and have no sub-identifier. */
export const CRASH_PAYEES: readonly Payee[] = demoAccounts.customers
  .filter((customer) => customer.status === 'active' && customer.idType === 'MSISDN' && customer.idSubValue === undefined)
  .map((customer) => ({ idValue: customer.idValue, accountId: customer.accountId }));

/**
 * A run's seed: CRASH_SEED when set, else the test file's fixed `fallback`, so that every run
 * makes the same random choices unless asked otherwise (the tests print the seed either way).
 */
export function crashSeed(fallback: number): number {
  const fromEnv = process.env['CRASH_SEED']?.trim() ?? '';
  if (fromEnv === '') return fallback;
  if (!/^[0-9]{1,10}$/.test(fromEnv) || Number(fromEnv) > 0xffffffff) throw new Error(`CRASH_SEED must be a whole number from 0 to 4294967295, not ${fromEnv.slice(0, 32)}`);
  return Number(fromEnv);
}

export async function runCrashHarness(options: CrashRunOptions): Promise<CrashRunResult> {
  if (!Number.isInteger(options.kills) || options.kills < 1) {
    throw new Error(`a crash run needs at least one kill (CRASH_KILLS), got ${String(options.kills)}`);
  }
  const random = seededRandom(options.seed);
  const fakeSwitch = await startFakeSwitch();
  const incomingPort = await freePort();
  const outgoingPort = await freePort();
  let child: ConnectorChild | undefined;
  const childOptions = (faults: boolean): ChildOptions => ({
    // Fault injection is test code: only the test entry point has it.
    mainPath: faults ? options.testMainPath : options.mainPath,
    cwd: options.workDir,
    incomingPort,
    env: connectorEnv(options, fakeSwitch.url, outgoingPort, faults ? Math.floor(random() * 0xffffffff) : undefined),
  });
  const driver = new SwitchDriver({
    random,
    fakeSwitch,
    targets: () => (child === undefined ? [] : [child.url]),
    payees: CRASH_PAYEES,
    currency: demoAccounts.currency,
    completedShare: 0.7,
    lostNotificationShare: 0.15,
    duplicateShare: 0.25,
    requestTimeoutMs: 10_000,
  });
  const outgoing = new OutgoingDriver({
    random,
    fakeSwitch,
    target: () => `http://127.0.0.1:${outgoingPort}`,
    currency: demoAccounts.currency,
    requestTimeoutMs: 10_000,
  });
  const database = await options.openDatabase();
  let stopping = false;
  try {
    const plans = await channelDebits(options, outgoing, database, childOptions(false));
    child = await ConnectorChild.start(childOptions(true));
    const workers = Array.from({ length: options.workers }, async () => {
      while (!stopping && driver.flows.length < options.maxFlows) {
        const flow = driver.plan();
        await driver.run(flow);
        // Nobody answered the quote: the connector is down; do not spin through payments.
        if (flow.quoteAnswer === undefined) await sleep(50);
      }
    });
    let nextPayment = 0;
    const channels = Array.from({ length: plans.length === 0 ? 0 : 2 }, async () => {
      while (!stopping && nextPayment < plans.length) {
        const plan = plans[nextPayment];
        nextPayment += 1;
        if (plan !== undefined) await outgoing.run(plan);
      }
    });
    let plannedKills = 0;
    let kills = 0;
    let killsDuringStart = 0;
    /** Kills the connector; a process that was already gone crashed by itself: the run fails. */
    const crash = async (victim: ConnectorChild, what: string): Promise<void> => {
      plannedKills += 1;
      if (!(await victim.kill())) {
        throw new Error(`kill ${plannedKills} (${what}) found connector ${victim.pid} already dead (${victim.exitStatus()}): it crashed by itself:\n${victim.tail()}`);
      }
      kills += 1;
    };
    for (let kill = 1; kill <= options.kills; kill += 1) {
      await sleep(30 + Math.floor(random() * 570));
      await crash(child, 'running');
      await sleep(Math.floor(random() * 100));
      const last = kill === options.kills;
      if (!last && random() < 0.15) {
        // Kill it again while it starts: migrations, seeding and the first recovery pass.
        child = ConnectorChild.spawn(childOptions(true));
        await sleep(Math.floor(random() * 250));
        await crash(child, 'during start-up');
        killsDuringStart += 1;
      }
      child = await ConnectorChild.start(childOptions(!last));
    }
    stopping = true;
    await Promise.all([...workers, ...channels]);
    // A payment whose accept a kill cut off before it reached the switch is left to the
    // connector: once the switch's time limit has passed it withdraws the quote and refunds.
    await waitForRecovery(database, options.drainDeadlineMs, child);
    const replay = await replayEverything(driver);
    await child.stop();
    const outgoingReport = await checkOutgoing(database, outgoing, fakeSwitch, demoAccounts.currency);
    const report = await checkInvariants(database, driver.flows, demoAccounts, {
      prefixes: ['collect:', 'refund:'],
      balanceChanges: outgoingReport.balanceChanges,
    });
    return {
      plannedKills,
      kills,
      killsDuringStart,
      flows: driver.flows,
      driver,
      replayProblems: replay.problems,
      replayed: replay.count,
      report,
      outgoing,
      outgoingReport,
    };
  } finally {
    // Also when the run fails half way: the payment loops must not go on against a closed switch.
    stopping = true;
    await child?.kill();
    await database.close();
    await fakeSwitch.close();
  }
}

function connectorEnv(options: CrashRunOptions, sdkUrl: string, outgoingPort: number, faultSeed: number | undefined): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    SDK_BASE_URL: sdkUrl,
    SDK_TIMEOUT_MS: '2000',
    OUTGOING_PORT: String(outgoingPort),
    OPERATIONS_PORT: '0',
    LOG_LEVEL: 'warn',
    RECOVERY_INTERVAL_MS: '100',
    RECOVERY_BASE_BACKOFF_MS: '50',
    RECOVERY_MAX_BACKOFF_MS: '800',
    RESERVATION_QUERY_AFTER_MS: '1500',
    RECOVERY_LEASE_MS: '3000',
    // The outgoing side: the channel's credentials, and the shortest switch time limit allowed,
    // so that interrupted initiations and accepts are taken over within seconds.
    OUTGOING_API_KEY: CHANNEL_KEY,
    CALLBACK_SECRET,
    SDK_TRANSFER_TIMEOUT_MS: '1000',
    ...(faultSeed === undefined ? {} : { CBS_FAULT_RATE: options.faultRate, CBS_FAULT_SEED: String(faultSeed) }),
  };
}

/**
 * Bank flow: the channel debits each customer under its homeTransactionId before it asks for
 * terms. Done before the run, while no connector runs (one start and clean stop create the
 * tables), so that this process never writes the database at the same time as the connector.
 */
async function channelDebits(options: CrashRunOptions, outgoing: OutgoingDriver, database: SqlDatabase, first: ChildOptions): Promise<ReturnType<OutgoingDriver['plan']>> {
  if (options.outgoingPayments === 0) return [];
  await (await ConnectorChild.start(first)).stop();
  const payers = CRASH_PAYEES.filter((payee) => payee.accountId === 'zm-acc-0001' || payee.accountId === 'zm-acc-0002').map((payee) => ({
    msisdn: payee.idValue,
    accountId: payee.accountId,
  }));
  const plans = outgoing.plan(options.outgoingPayments, payers);
  const ledger = new SandboxLedger(database);
  for (const plan of plans) {
    const debit = await ledger.collect(plan.homeTransactionId, plan.payerMsisdn, { amount: plan.amount, currency: demoAccounts.currency });
    if (debit.state !== 'succeeded') throw new Error(`channel debit ${plan.homeTransactionId}: ${debit.state}`);
  }
  return plans;
}

async function waitForRecovery(database: SqlDatabase, deadlineMs: number, child: ConnectorChild): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const left = (await unfinishedTransfers(database)) + (await unsettledPayments(database));
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`${left} transfers or payments still unfinished ${deadlineMs} ms after the last restart:\n${child.tail()}`);
    await sleep(100);
  }
}

/**
 * Sends every request that got a final answer once more, to the restarted connector: each must
 * get the same answer. Two exceptions, both checked exactly: a transfer the hub aborted after
 * it was reserved is refused on a repeat (409, 3106: it never reserves again), and a final
 * notification the switch never delivered is delivered now, late, and must change nothing.
 */
async function replayEverything(driver: SwitchDriver): Promise<{ problems: string[]; count: number }> {
  const problems: string[] = [];
  let count = 0;
  const again = async (key: string, method: 'POST' | 'PUT', path: string, body: unknown, expected: Answer | ((answer: Answer) => boolean)): Promise<void> => {
    count += 1;
    const answer = await driver.send(method, path, body);
    if (answer === undefined) {
      problems.push(`${key}: no answer on replay`);
      return;
    }
    const ok = typeof expected === 'function' ? expected(answer) : sameAnswer(answer, expected);
    if (!ok) problems.push(`${key}: replay answered ${JSON.stringify(answer)}`);
  };
  for (const flow of driver.flows) {
    if (flow.quoteAnswer !== undefined) await again(`quote:${flow.quoteId}`, 'POST', '/quoterequests', flow.quoteBody, flow.quoteAnswer);
    if (flow.transferAnswer !== undefined && flow.transferBody !== undefined) {
      const expected = flow.decision === 'COMPLETED' ? flow.transferAnswer : (answer: Answer) => answer.status === 409 && statusCodeOf(answer.body) === '3106';
      await again(`transfer:${flow.transferId}`, 'POST', '/transfers', flow.transferBody, expected);
    }
    if (flow.decision === undefined) continue;
    const path = `/transfers/${flow.transferId}`;
    if (flow.notificationAnswer !== undefined && flow.notificationBody !== undefined) {
      await again(`notify:${flow.transferId}`, 'PUT', path, flow.notificationBody, flow.notificationAnswer);
    } else if (flow.notificationBody === undefined && flow.transferAnswer !== undefined) {
      const late = await driver.exchange(`late:${flow.transferId}`, 'PUT', path, lateNotification(flow.decision), PUT_RETRIES, false);
      count += 1;
      const wanted = flow.decision === 'COMPLETED' ? { status: 200, body: {} } : undefined;
      const ok = late !== undefined && (wanted === undefined ? late.status === 422 && statusCodeOf(late.body) === '5104' : sameAnswer(late, wanted));
      if (!ok) problems.push(`late notification ${flow.transferId} (${flow.decision}): ${JSON.stringify(late)}`);
    }
  }
  return { problems, count };
}

function lateNotification(decision: 'COMPLETED' | 'ABORTED'): Record<string, unknown> {
  return { currentState: decision, direction: 'INBOUND' };
}

function sameAnswer(a: Answer, b: Answer): boolean {
  return isDeepStrictEqual(a, b);
}
