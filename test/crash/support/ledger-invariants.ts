import { SandboxLedger, type ConservationReport, type SandboxAccounts } from '../../../src/adapters/core-banking/sandbox/index.js';
import type { SandboxSchema } from '../../../src/adapters/core-banking/sandbox/sandbox-schema.js';
import type { SqlDatabase } from '../../../src/adapters/store/sql-database.js';
import { formatMinorUnits, toMinorUnits } from '../../../src/domain/money.js';
import type { FlowRecord } from './switch-driver.js';

/**
 * The money invariants after a run, read straight from the database the connector used (the
 * connector's transfer table and the sandbox ledger's tables), against what the switch decided.
 * Every list of problems is expected to be empty; the figures are compared exactly by the tests.
 */

interface TransferRow {
  transfer_id: string;
  state: string;
  payee_receive_amount: string;
  payee_account_id: string;
  currency: string;
}

interface ConnectorView extends SandboxSchema {
  inbound_transfers: TransferRow;
}

const FINAL_STATES = new Set(['COMMITTED', 'ABORTED', 'REJECTED']);

export interface InvariantReport {
  /** Stored transfers by state. */
  readonly states: Readonly<Record<string, number>>;
  /** Every broken invariant, in words; empty when the run kept every one. */
  readonly problems: readonly string[];
  /** Sum of the payee amounts of the transfers the hub committed, from the switch's records. */
  readonly expectedCredits: string;
  /** Sum of the credits the ledger's commit movements made. */
  readonly ledgerCredits: string;
  readonly conservation: ConservationReport;
}

/** Counts stored transfers that are not in a final state (for waiting until recovery is done). */
export async function unfinishedTransfers(database: SqlDatabase): Promise<number> {
  const rows = await database.reader<ConnectorView>().selectFrom('inbound_transfers').select('state').execute();
  return rows.filter((row) => !FINAL_STATES.has(row.state)).length;
}

/** What other flows of the run moved, checked by their own invariants (outgoing-invariants.ts). */
export interface OtherMovements {
  /** Movement id prefixes that belong to them, e.g. "collect:" and "refund:". */
  readonly prefixes: readonly string[];
  /** Their net balance change per account. */
  readonly balanceChanges: ReadonlyMap<string, bigint>;
}

export async function checkInvariants(
  database: SqlDatabase,
  flows: readonly FlowRecord[],
  opening: SandboxAccounts,
  others: OtherMovements = { prefixes: [], balanceChanges: new Map() },
): Promise<InvariantReport> {
  const currency = opening.currency;
  const db = database.reader<ConnectorView>();
  const transfers = new Map((await db.selectFrom('inbound_transfers').selectAll().execute()).map((row) => [row.transfer_id, row]));
  const postings = await db.selectFrom('sandbox_postings').selectAll().orderBy('movement_id').orderBy('leg').execute();
  const holds = new Map((await db.selectFrom('sandbox_holds').selectAll().execute()).map((row) => [row.reference, row]));
  const problems: string[] = [];
  const states: Record<string, number> = {};
  for (const row of transfers.values()) states[row.state] = (states[row.state] ?? 0) + 1;

  const flowsByTransfer = new Map(flows.filter((flow) => flow.decision !== undefined).map((flow) => [flow.transferId, flow]));
  for (const id of transfers.keys()) if (!flowsByTransfer.has(id)) problems.push(`transfer ${id} is stored but the switch never sent it`);

  let expectedCredits = 0n;
  const expectedByAccount = new Map<string, bigint>();
  for (const flow of flowsByTransfer.values()) {
    const row = transfers.get(flow.transferId);
    problems.push(...transferProblems(flow, row));
    if (flow.decision === 'COMPLETED' && flow.payeeReceiveAmount !== undefined) {
      const minor = toMinorUnits(flow.payeeReceiveAmount, currency);
      expectedCredits += minor;
      expectedByAccount.set(flow.payee.accountId, (expectedByAccount.get(flow.payee.accountId) ?? 0n) + minor);
    }
  }

  // The journal: opening funding, then one commit movement per committed transfer, nothing else.
  const movements = new Map<string, typeof postings>();
  for (const posting of postings) movements.set(posting.movement_id, [...(movements.get(posting.movement_id) ?? []), posting]);
  let ledgerCredits = 0n;
  const floatId = opening.float.accountId;
  for (const [movementId, legs] of movements) {
    // Opening balances; their total is checked exactly against the opening books by the caller.
    if (legs.every((leg) => leg.kind === 'FUNDING')) continue;
    if (others.prefixes.some((prefix) => movementId.startsWith(prefix))) continue;
    const transferId = movementId.startsWith('commit:') ? movementId.slice('commit:'.length) : undefined;
    const row = transferId === undefined ? undefined : transfers.get(transferId);
    if (row === undefined) {
      problems.push(`movement ${movementId} belongs to no stored transfer`);
      continue;
    }
    const minor = toMinorUnits(row.payee_receive_amount, currency);
    const shape = legs.map((leg) => `${leg.kind} ${leg.account_id} ${leg.amount}`).join(', ');
    const wanted = `TRANSFER ${floatId} ${-minor}, TRANSFER ${row.payee_account_id} ${minor}`;
    if (shape !== wanted) problems.push(`movement ${movementId} is [${shape}], expected [${wanted}]`);
    if (row.state !== 'COMMITTED') problems.push(`movement ${movementId} credits a transfer in state ${row.state}`);
    ledgerCredits += minor;
  }

  for (const row of transfers.values()) problems.push(...holdProblems(row, holds.get(row.transfer_id), movements.has(`commit:${row.transfer_id}`), currency));
  for (const [reference, hold] of holds) {
    if (!transfers.has(reference)) problems.push(`hold ${reference} (${hold.state}) belongs to no stored transfer`);
  }

  const ledger = new SandboxLedger(database);
  const conservation = await ledger.conservationCheck();
  problems.push(...(await balanceProblems(ledger, opening, expectedByAccount, expectedCredits, others.balanceChanges)));
  return {
    states,
    problems,
    expectedCredits: formatMinorUnits(expectedCredits, currency),
    ledgerCredits: formatMinorUnits(ledgerCredits, currency),
    conservation,
  };
}

/** The stored transfer agrees with the hub's decision and with the agreed quote. */
function transferProblems(flow: FlowRecord, row: TransferRow | undefined): string[] {
  const id = flow.transferId;
  if (row === undefined) {
    // Only a transfer the connector never answered may be missing, and then the hub aborted it.
    return flow.transferAnswer === undefined ? [] : [`transfer ${id} was answered ${flow.transferAnswer.status} but is not stored`];
  }
  const problems: string[] = [];
  if (!FINAL_STATES.has(row.state)) problems.push(`transfer ${id} ended in ${row.state}, not a final state`);
  const wanted = flow.decision === 'COMPLETED' ? ['COMMITTED'] : ['ABORTED', 'REJECTED'];
  if (!wanted.includes(row.state)) problems.push(`transfer ${id}: the hub said ${flow.decision}, the connector is ${row.state}`);
  if (row.payee_receive_amount !== flow.payeeReceiveAmount) {
    problems.push(`transfer ${id}: payee amount ${row.payee_receive_amount}, quoted ${String(flow.payeeReceiveAmount)}`);
  }
  if (row.payee_account_id !== flow.payee.accountId) problems.push(`transfer ${id}: payee account ${row.payee_account_id}`);
  return problems;
}

/** Each transfer's reservation ended as its state says: captured once, or released. */
function holdProblems(row: TransferRow, hold: SandboxSchema['sandbox_holds'] | undefined, credited: boolean, currency: string): string[] {
  const id = row.transfer_id;
  switch (row.state) {
    case 'COMMITTED': {
      const minor = toMinorUnits(row.payee_receive_amount, currency).toString();
      if (hold?.state !== 'CAPTURED' || hold.amount !== minor) return [`transfer ${id} COMMITTED, hold ${JSON.stringify(hold)}`];
      return credited ? [] : [`transfer ${id} COMMITTED without a commit movement`];
    }
    case 'ABORTED':
    case 'REJECTED':
      if (credited) return [`transfer ${id} ${row.state} but credited`];
      return hold === undefined || hold.state === 'RELEASED' ? [] : [`transfer ${id} ${row.state}, hold still ${hold.state}`];
    default:
      return hold?.state === 'CAPTURED' || credited ? [`transfer ${id} ${row.state} but already credited`] : [];
  }
}

/** The float paid out exactly the expected credits, each payee received exactly theirs (besides the other flows' changes). */
async function balanceProblems(
  ledger: SandboxLedger,
  opening: SandboxAccounts,
  expectedByAccount: ReadonlyMap<string, bigint>,
  expectedCredits: bigint,
  otherChanges: ReadonlyMap<string, bigint>,
): Promise<string[]> {
  const currency = opening.currency;
  const openingOf = new Map<string, bigint>([
    [opening.float.accountId, toMinorUnits(opening.float.balance, currency)],
    ...opening.customers.map((customer): [string, bigint] => [customer.accountId, toMinorUnits(customer.balance, currency)]),
  ]);
  const problems: string[] = [];
  for (const account of await ledger.balances()) {
    const start = (openingOf.get(account.accountId) ?? 0n) + (otherChanges.get(account.accountId) ?? 0n);
    const wanted =
      account.accountId === opening.float.accountId ? start - expectedCredits : start + (expectedByAccount.get(account.accountId) ?? 0n);
    const wantedText = formatMinorUnits(wanted, currency);
    if (account.balance !== wantedText) problems.push(`account ${account.accountId}: balance ${account.balance}, expected ${wantedText}`);
    if (account.held !== '0') problems.push(`account ${account.accountId}: still holds ${account.held}`);
  }
  return problems;
}
