import { setTimeout as sleep } from 'node:timers/promises';
import { formatMinorUnits, toMinorUnits } from '../../../src/domain/money.js';
import type { Fault } from '../../institutions/fixture-server.js';
import type { FixtureInstitution } from '../../institutions/fixture-institution.js';
import { startAdapterHarness, type AdapterSubject } from '../../support/adapter-institutions.js';
import { notification, quoteRequest, transferRequest } from '../../support/backend-bodies.js';
import { TEST_CALLBACK_SECRET, type Harness, type HttpAnswer } from '../../support/harness.js';
import { callbackHeaders, sendMoneyBody } from '../../support/outgoing-bodies.js';
import { drawSoakPlan, FLOAT_OPENING, PAYEE_OPENING, PAYER_OPENING, SOAK_CURRENCY, type IncomingItem, type OutgoingItem, type PlanSize } from './soak-plan.js';
import { hubAnswer } from '../../support/fake-switch.js';

/**
 * A soak run against one adapter's fixture institution: hundreds of incoming transfers and tens
 * of outgoing payments driven through the whole connector (HTTP, SQLite, recovery) while the
 * fixture plays seeded random faults, slow answers past the adapter's timeout included. The
 * switch connector is imitated as it behaves: it retries a failed call a few times, then the hub
 * decides (a transfer whose reservation it never heard of is aborted). Then the faults stop, the
 * recovery workers drain, and the fixture's books are checked account by account.
 */

export interface SoakOptions {
  readonly seed: number;
  readonly size?: PlanSize;
  /** Share of institution requests that meet a fault. */
  readonly faultRate?: number;
  readonly faults?: readonly Fault[];
  /** How long slow answers take: longer than the adapter's (short, 500 ms) timeout. */
  readonly slowMs?: number;
  /** Requests in flight at once. */
  readonly concurrency?: number;
}

export interface IncomingResult {
  readonly item: IncomingItem;
  readonly transferId: string | undefined;
  /** What the payee must have received: the quote's payeeReceiveAmount when the hub committed. */
  readonly credited: string | undefined;
}

export interface OutgoingResult {
  readonly item: OutgoingItem;
  readonly homeTransactionId: string;
  /** The amount the payer was debited when the payment started (bank flow: the channel's debit). */
  readonly debitAmount: string | undefined;
}

export interface SoakFigures {
  readonly adapter: string;
  readonly seed: number;
  readonly incoming: { readonly sent: number; readonly committed: number; readonly aborted: number; readonly notQuoted: number };
  readonly outgoing: { readonly sent: number; readonly completed: number; readonly refunded: number; readonly aborted: number; readonly notStarted: number };
  readonly faultsPlayed: Readonly<Record<string, number>>;
  /** Of those, the faults played on money-moving requests: the ones that leave an outcome unknown. */
  readonly writeFaultsPlayed: Readonly<Record<string, number>>;
  readonly recoveryPasses: number;
  readonly seconds: number;
  /** Every discrepancy found on the books or in the connector's records; empty when conserved. */
  readonly discrepancies: readonly string[];
  readonly books: { readonly float: string; readonly floatAvailable: string; readonly total: string; readonly expectedFloat: string; readonly expectedTotal: string };
}

const DEFAULT_FAULTS: readonly Fault[] = ['server-error', 'hang-before', 'hang-after', 'slow-before', 'slow-after', 'applied-then-5xx'];
const CHAOS_PASSES = 3;
const MAX_PASSES = 60;
/** Longer than every wait the recovery workers observe (backoff cap, callback wait, switch query delay). */
const PASS_STEP_MS = 10 * 60_000;

export async function runSoak(subject: AdapterSubject, options: SoakOptions): Promise<SoakFigures> {
  const started = Date.now();
  const plan = drawSoakPlan(options.seed, options.size ?? { incoming: 300, outgoing: 50 });
  const slowMs = options.slowMs ?? 1200;
  const run = await startAdapterHarness(subject, {
    seed: plan.books,
    env: {
      CALLBACK_WAIT_MS: '60000',
      RECOVERY_BATCH_SIZE: '1000',
      RECOVERY_MAX_BACKOFF_MS: '120000',
      RESERVATION_QUERY_AFTER_MS: '60000',
    },
  });
  const { h, fixture } = run;
  try {
    const openingTotal = fixture.total();
    fixture.chaos({ seed: options.seed, rate: options.faultRate ?? 0.15, faults: options.faults ?? DEFAULT_FAULTS, delayMs: slowMs });
    const concurrency = options.concurrency ?? 6;
    const incoming = await inPool(plan.incoming, concurrency, (item) => driveIncoming(h, item));
    const outgoing = await inPool(plan.outgoing, Math.min(concurrency, 4), (item) => driveOutgoing(h, fixture, subject, item));
    const recoveryPasses = await drain(h, fixture, slowMs);
    const faultsPlayed = { ...fixture.faultCounts };
    const writeFaultsPlayed = { ...fixture.writeFaultCounts };
    const discrepancies: string[] = [];
    const incomingCounts = await checkIncoming(h, fixture, incoming, discrepancies);
    const outgoingCounts = await checkOutgoing(h, fixture, subject, outgoing, discrepancies);

    const creditedMinor = incoming.reduce((sum, result) => sum + (result.credited === undefined ? 0n : minor(result.credited)), 0n);
    const keptMinor = outgoingCounts.keptMinor;
    const expectedFloat = formatMinorUnits(minor(FLOAT_OPENING) - creditedMinor + keptMinor, SOAK_CURRENCY);
    const books = { float: fixture.floatBalance(), floatAvailable: fixture.floatAvailable(), total: fixture.total(), expectedFloat, expectedTotal: openingTotal };
    if (books.float !== expectedFloat) discrepancies.push(`float ${books.float}, expected ${expectedFloat}`);
    if (books.floatAvailable !== books.float) discrepancies.push(`float holds left: ${formatMinorUnits(minor(books.float) - minor(books.floatAvailable), SOAK_CURRENCY)}`);
    if (books.total !== openingTotal) discrepancies.push(`books total ${books.total}, opened at ${openingTotal}`);
    return {
      adapter: subject.title,
      seed: options.seed,
      incoming: { sent: plan.incoming.length, ...incomingCounts },
      outgoing: { sent: plan.outgoing.length, completed: outgoingCounts.completed, refunded: outgoingCounts.refunded, aborted: outgoingCounts.aborted, notStarted: outgoingCounts.notStarted },
      faultsPlayed,
      writeFaultsPlayed,
      recoveryPasses,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      discrepancies,
      books,
    };
  } finally {
    fixture.chaos(undefined);
    await run.close();
  }
}

/** The faults that leave a write's outcome unknown to the adapter: each must have met a write in a soak run. */
export const AMBIGUOUS_FAULTS: readonly Fault[] = ['hang-before', 'hang-after', 'slow-before', 'slow-after', 'applied-then-5xx'];

/** The figures as one line a CI log shows. */
export function describeSoak(figures: SoakFigures): string {
  const counts = (played: Readonly<Record<string, number>>): string => Object.entries(played).map(([fault, count]) => `${fault} ${count}`).join(', ') || 'none';
  return [
    `soak ${figures.adapter} seed ${figures.seed}: ${figures.seconds} s, ${figures.recoveryPasses} recovery passes`,
    `  incoming ${figures.incoming.sent}: committed ${figures.incoming.committed}, aborted ${figures.incoming.aborted}, never quoted ${figures.incoming.notQuoted}`,
    `  outgoing ${figures.outgoing.sent}: completed ${figures.outgoing.completed}, refunded ${figures.outgoing.refunded}, aborted before any debit ${figures.outgoing.aborted}, not started ${figures.outgoing.notStarted}`,
    `  faults played: ${counts(figures.faultsPlayed)}; on writes: ${counts(figures.writeFaultsPlayed)}`,
    `  float ${figures.books.float} (expected ${figures.books.expectedFloat}), available ${figures.books.floatAvailable}, books total ${figures.books.total} (opened ${figures.books.expectedTotal})`,
    `  discrepancies: ${figures.discrepancies.length === 0 ? 'none' : figures.discrepancies.join('; ')}`,
  ].join('\n');
}

function minor(amount: string): bigint {
  return toMinorUnits(amount, SOAK_CURRENCY);
}

async function inPool<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, () => worker()));
  return results;
}

/** As the switch connector does: a call that fails with 5xx (or no answer) is tried again, up to `attempts` times. */
async function withRetries(attempts: number, call: () => Promise<HttpAnswer>): Promise<HttpAnswer | undefined> {
  let last: HttpAnswer | undefined;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    try {
      last = await call();
    } catch {
      last = undefined;
      continue;
    }
    if (last.status < 500) return last;
  }
  return last;
}

type Body = Record<string, unknown>;

async function driveIncoming(h: Harness, item: IncomingItem): Promise<IncomingResult> {
  const quoteBody = quoteRequest({ payeeMsisdn: item.payee, amount: item.amount });
  const quote = await withRetries(item.switchAttempts, () => h.call('POST', '/quoterequests', quoteBody));
  if (quote?.status !== 200) return { item, transferId: undefined, credited: undefined };
  const quoteAnswer = quote.body as Body;
  const body = transferRequest(quoteBody, quoteAnswer);
  const transferId = String(body['transferId']);
  const reserve = await withRetries(item.switchAttempts, () => h.call('POST', '/transfers', body));
  const reserved = reserve !== undefined && reserve.status < 300 && (reserve.body as Body)['transferState'] === 'RESERVED';
  // The hub aborts a transfer whose payee FSP never answered RESERVED.
  const commits = reserved && item.hubCommits;
  const state = commits ? 'COMPLETED' : 'ABORTED';
  h.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, commits ? 'COMMITTED' : 'ABORTED'));
  await withRetries(item.switchAttempts, () => h.call('PUT', `/transfers/${transferId}`, notification(state)));
  return { item, transferId, credited: commits ? String(quoteAnswer['payeeReceiveAmount']) : undefined };
}

async function driveOutgoing(h: Harness, fixture: FixtureInstitution, subject: AdapterSubject, item: OutgoingItem): Promise<OutgoingResult> {
  const body = sendMoneyBody({ sendAmount: item.amount, payer: { name: `Payer ${item.payer}`, payerId: item.payer } });
  const home = String(body['homeTransactionId']);
  h.fakeSwitch.script(home, item.switchFails ? { accept: { status: 500 } } : {});
  const initiated = await withRetries(3, () => h.callOutgoing('POST', '/send-money', body));
  if (initiated?.status !== 200) return { item, homeTransactionId: home, debitAmount: undefined };
  const terms = initiated.body as Body;
  const transferId = String(terms['transferId']);
  const debitAmount = String((terms['debitAmount'] as Body)['amount']);
  if (subject.outgoingFlow === 'bank') {
    // The bank flow: the channel debits its customer at the institution itself, then accepts.
    fixture.debitByChannel(home, item.payer, debitAmount);
    await withRetries(2, () => h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true }));
    return { item, homeTransactionId: home, debitAmount };
  }
  await withRetries(2, () => h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true }));
  // The customer answers the prompt, if the institution ever recorded one.
  let prompted = true;
  try {
    if (item.customerApproves) fixture.approveCollection(transferId);
    else fixture.rejectCollection(transferId);
  } catch {
    prompted = false;
  }
  if (prompted && item.callbackArrives) {
    const code = item.customerApproves ? 'TS' : 'TF';
    await withRetries(2, () => h.callOutgoing('PUT', '/callback', { transaction: { id: transferId, status_code: code } }, callbackHeaders(TEST_CALLBACK_SECRET)));
  }
  return { item, homeTransactionId: home, debitAmount: prompted && item.customerApproves ? debitAmount : undefined };
}

/**
 * A few recovery passes with the faults still on, then the institution is healthy again: once
 * every slow write has landed, the workers run until they claim nothing.
 */
async function drain(h: Harness, fixture: FixtureInstitution, slowMs: number): Promise<number> {
  let passes = 0;
  for (; passes < CHAOS_PASSES; passes += 1) await recoveryPass(h);
  fixture.chaos(undefined);
  await sleep(slowMs + 500);
  for (; passes < MAX_PASSES; passes += 1) {
    const claimed = await recoveryPass(h);
    if (claimed === 0) return passes + 1;
  }
  return passes;
}

async function recoveryPass(h: Harness): Promise<number> {
  h.clock.advance(PASS_STEP_MS);
  const incoming = await h.app.recovery.runOnce();
  const outgoing = await h.app.outgoingRecovery.runOnce();
  return incoming.claimed + outgoing.claimed;
}

interface InboundRow {
  transfer_id: string;
  state: string;
}

async function checkIncoming(
  h: Harness,
  fixture: FixtureInstitution,
  results: readonly IncomingResult[],
  discrepancies: string[],
): Promise<{ committed: number; aborted: number; notQuoted: number }> {
  const rows = await h.app.database.reader<{ inbound_transfers: InboundRow }>().selectFrom('inbound_transfers').select(['transfer_id', 'state']).execute();
  const byId = new Map(rows.map((row) => [row.transfer_id, row]));
  let committed = 0;
  let aborted = 0;
  let notQuoted = 0;
  for (const result of results) {
    const expected = formatMinorUnits(minor(PAYEE_OPENING) + (result.credited === undefined ? 0n : minor(result.credited)), SOAK_CURRENCY);
    const balance = fixture.balanceOf(result.item.payee);
    if (balance !== expected) discrepancies.push(`payee ${result.item.payee} holds ${balance}, expected ${expected}`);
    if (result.transferId === undefined) {
      notQuoted += 1;
      continue;
    }
    const row = byId.get(result.transferId);
    const want = result.credited === undefined ? ['ABORTED', 'REJECTED'] : ['COMMITTED'];
    // A transfer whose POST never reached the connector has no record, and nothing to undo.
    if (row === undefined && result.credited === undefined) {
      aborted += 1;
      continue;
    }
    if (row === undefined || !want.includes(row.state)) discrepancies.push(`incoming ${result.transferId} is ${row?.state ?? 'unknown'}, expected ${want.join(' or ')}`);
    if (result.credited === undefined) aborted += 1;
    else committed += 1;
  }
  return { committed, aborted, notQuoted };
}

interface OutgoingRow {
  home_transaction_id: string;
  state: string;
  last_error: string | null;
}

async function checkOutgoing(
  h: Harness,
  fixture: FixtureInstitution,
  subject: AdapterSubject,
  results: readonly OutgoingResult[],
  discrepancies: string[],
): Promise<{ completed: number; refunded: number; aborted: number; notStarted: number; keptMinor: bigint }> {
  const rows = await h.app.database.reader<{ outgoing_payments: OutgoingRow }>().selectFrom('outgoing_payments').select(['home_transaction_id', 'state', 'last_error']).execute();
  const byHome = new Map(rows.map((row) => [row.home_transaction_id, row]));
  const counts = { completed: 0, refunded: 0, aborted: 0, notStarted: 0, keptMinor: 0n };
  for (const result of results) {
    const row = byHome.get(result.homeTransactionId);
    const state = row?.state;
    const balance = fixture.balanceOf(result.item.payer);
    // Where the payer's money must be, by the payment's final state.
    let kept = 0n;
    switch (state) {
      case 'COMPLETED':
        counts.completed += 1;
        if (result.debitAmount === undefined) discrepancies.push(`outgoing ${result.homeTransactionId} COMPLETED but the payer was never debited`);
        else kept = minor(result.debitAmount);
        if (result.item.switchFails) discrepancies.push(`outgoing ${result.homeTransactionId} COMPLETED though the switch failed it`);
        break;
      case 'REFUNDED':
        counts.refunded += 1;
        break;
      case 'ABORTED':
      case 'FAILED':
        counts.aborted += 1;
        if (subject.outgoingFlow === 'bank' && result.debitAmount !== undefined) discrepancies.push(`outgoing ${result.homeTransactionId} ${state} after the channel's debit: never refunded`);
        break;
      case undefined:
        counts.notStarted += 1;
        if (result.debitAmount !== undefined) discrepancies.push(`outgoing ${result.homeTransactionId} debited but never recorded`);
        break;
      default:
        discrepancies.push(`outgoing ${result.homeTransactionId} stuck in ${state} (${row?.last_error ?? 'no error recorded'})`);
    }
    counts.keptMinor += kept;
    const expected = formatMinorUnits(minor(PAYER_OPENING) - kept, SOAK_CURRENCY);
    if (balance !== expected) discrepancies.push(`payer ${result.item.payer} holds ${balance}, expected ${expected} (payment ${state ?? 'never recorded'})`);
  }
  return counts;
}

/** The seed a soak test runs with: its own, or SOAK_SEED to replay or explore another run. */
export function soakSeed(fallback: number): number {
  const text = process.env['SOAK_SEED'];
  if (text === undefined || text === '') return fallback;
  const seed = Number.parseInt(text, 10);
  if (!Number.isSafeInteger(seed) || String(seed) !== text.trim()) throw new Error(`SOAK_SEED must be an integer, not ${text}`);
  return seed;
}
