import type { SandboxSchema } from '../../../src/adapters/core-banking/sandbox/sandbox-schema.js';
import type { SqlDatabase } from '../../../src/adapters/store/sql-database.js';
import { toMinorUnits } from '../../../src/domain/money.js';
import type { FakeSwitch } from '../../support/fake-switch.js';
import type { OutgoingDriver } from './outgoing-driver.js';

/**
 * The outgoing side's money invariants after a crash run: a payment the switch completed is never
 * refunded, a payment the switch failed after the connector asked it to proceed is refunded
 * exactly once and exactly the debit, nothing is left half-done, and no transfer was accepted at
 * the switch twice. Answers the balance changes the channel's debits and the refunds made, for
 * the ledger-wide balance check.
 */

interface PaymentRow {
  home_transaction_id: string;
  transfer_id: string | null;
  state: string;
  debit_amount: string | null;
}

interface View extends SandboxSchema {
  outgoing_payments: PaymentRow;
}

/** Where a payment may rest: final, or QUOTED (the customer never accepted; the channel reverses its own debit). */
const RESTING = new Set(['COMPLETED', 'REFUNDED', 'ABORTED', 'FAILED', 'QUOTED']);

/** Counts outgoing payments not yet resting (for waiting until recovery is done). */
export async function unsettledPayments(database: SqlDatabase): Promise<number> {
  const rows = await database.reader<View>().selectFrom('outgoing_payments').select('state').execute();
  return rows.filter((row) => !RESTING.has(row.state)).length;
}

export interface OutgoingReport {
  readonly states: Readonly<Record<string, number>>;
  readonly problems: readonly string[];
  /** Balance change per account from the channel's debits and the connector's refunds. */
  readonly balanceChanges: ReadonlyMap<string, bigint>;
  readonly refunds: number;
}

export async function checkOutgoing(database: SqlDatabase, driver: OutgoingDriver, fakeSwitch: FakeSwitch, currency: string): Promise<OutgoingReport> {
  const db = database.reader<View>();
  const rows = new Map((await db.selectFrom('outgoing_payments').selectAll().execute()).map((row) => [row.home_transaction_id, row]));
  const debits = await db.selectFrom('sandbox_debits').selectAll().execute();
  const problems: string[] = [];
  const states: Record<string, number> = {};
  const changes = new Map<string, bigint>();
  const change = (accountId: string, minor: bigint): void => {
    changes.set(accountId, (changes.get(accountId) ?? 0n) + minor);
  };
  // One account model: customer debits land in the float and refunds are paid from it.
  const floatRow = await database.reader<SandboxSchema>().selectFrom('sandbox_accounts').select('account_id').where('kind', '=', 'float').where('currency', '=', currency).executeTakeFirstOrThrow();
  const settlement = floatRow.account_id;
  let refunds = 0;
  for (const plan of driver.payments) {
    const minor = toMinorUnits(plan.amount, currency);
    // The channel's own debit, made before the run.
    change(plan.payerAccount, -minor);
    change(settlement, minor);
    const row = rows.get(plan.homeTransactionId);
    const refundRows = debits.filter((debit) => debit.kind === 'refund' && debit.original_reference === plan.homeTransactionId);
    for (const refund of refundRows) {
      const refunded = storedMinor(refund.amount);
      change(plan.payerAccount, refunded);
      change(settlement, -refunded);
    }
    refunds += refundRows.length;
    if (row === undefined) {
      if (plan.terms !== undefined) problems.push(`payment ${plan.homeTransactionId} got terms but is not stored`);
      if (refundRows.length > 0) problems.push(`payment ${plan.homeTransactionId} never stored but refunded`);
      continue;
    }
    states[row.state] = (states[row.state] ?? 0) + 1;
    if (!RESTING.has(row.state)) problems.push(`payment ${plan.homeTransactionId} left in ${row.state}`);
    const entry = fakeSwitch.transferOf(plan.homeTransactionId);
    const accepts = row.transfer_id === null ? [] : fakeSwitch.requests.filter((r) => r.method === 'PUT' && r.path === `/transfers/${row.transfer_id}` && isAccept(r.body));
    if (accepts.length > 1) problems.push(`payment ${plan.homeTransactionId} accepted at the switch ${accepts.length} times`);
    const completedAtSwitch = entry?.state === 'COMPLETED';
    if (completedAtSwitch && row.state !== 'COMPLETED') problems.push(`payment ${plan.homeTransactionId}: the switch completed it, the connector says ${row.state}`);
    if (!completedAtSwitch && row.state === 'COMPLETED') problems.push(`payment ${plan.homeTransactionId} COMPLETED but the switch says ${String(entry?.state)}`);
    const wantedRefunds = row.state === 'REFUNDED' ? [minor.toString()] : [];
    const madeRefunds = refundRows.map((refund) => `${refund.state === 'succeeded' ? '' : `${refund.state} `}${refund.amount}`);
    if (JSON.stringify(madeRefunds) !== JSON.stringify(wantedRefunds)) {
      problems.push(`payment ${plan.homeTransactionId} ${row.state}: refunds ${JSON.stringify(madeRefunds)}, expected ${JSON.stringify(wantedRefunds)}`);
    }
    if (plan.switchFails && accepts.length === 1 && row.state !== 'REFUNDED') {
      problems.push(`payment ${plan.homeTransactionId}: the switch failed its accept, the connector says ${row.state}`);
    }
  }
  return { states, problems, balanceChanges: changes, refunds };
}

/** The ledger stores minor units as canonical integer text. */
function storedMinor(text: string): bigint {
  if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new Error(`stored amount "${text}" is not minor units`);
  return BigInt(text);
}

function isAccept(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'acceptQuote' in body && body.acceptQuote === true;
}
