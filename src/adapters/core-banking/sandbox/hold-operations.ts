import type { Selectable } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import type { Money } from '../../../domain/money.js';
import type { AccountStatus } from '../../../ports/core-banking.js';
import { lockAccounts, lockSystemAccount, minorOf, move, saveAccount, type Account, type BookContext } from './ledger-book.js';
import { positiveMinor } from './ledger-amounts.js';
import type { HoldState, HoldsTable } from './sandbox-schema.js';

/**
 * Holds on the float for incoming transfers: reserve -> HELD, then commit -> CAPTURED or
 * release -> RELEASED. Each function is the body of one transaction. On PostgreSQL the float
 * account is always locked before the hold row is read, so two operations on one reference
 * take turns and every one of them sees the other's outcome.
 */

export interface HoldRequest {
  readonly reference: string;
  readonly amount: Money;
  readonly payeeAccountId: string;
}

interface Hold {
  readonly reference: string;
  readonly state: HoldState;
  readonly floatAccountId: string | null;
  readonly payeeAccountId: string | null;
  readonly currency: string | null;
  readonly minor: bigint;
}

export async function reserveHold(context: BookContext, request: HoldRequest): Promise<void> {
  const minor = positiveMinor(request.amount);
  const float = await floatFor(context, request.amount.currency);
  const existing = await findHold(context, request.reference);
  if (existing !== undefined) return checkRepeatedReserve(existing, request, minor);
  const payee = (await lockAccounts(context, [request.payeeAccountId])).get(request.payeeAccountId);
  if (payee === undefined || payee.kind !== 'customer') throw new ConnectorError('PartyNotFound', 'no such payee account');
  if (payee.currency !== float.currency) throw new ConnectorError('UnsupportedCurrency', `payee account is in ${payee.currency}`);
  if (float.balance - float.held < minor) throw new ConnectorError('PayeeInsufficientLiquidity');
  const inserted = await context.trx
    .insertInto('sandbox_holds')
    .values({
      reference: request.reference,
      state: 'HELD',
      float_account_id: float.accountId,
      payee_account_id: payee.accountId,
      currency: float.currency,
      amount: minor.toString(),
      created_at: context.now,
      updated_at: context.now,
    })
    .onConflict((oc) => oc.column('reference').doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
    // A release tombstone can be written without the float lock (it names no account).
    const raced = await findHold(context, request.reference);
    assert(raced !== undefined, `sandbox: hold ${request.reference} neither inserted nor found`);
    return checkRepeatedReserve(raced, request, minor);
  }
  float.held += minor;
  await saveAccount(context, float);
}

export async function commitHold(context: BookContext, request: HoldRequest): Promise<void> {
  const minor = positiveMinor(request.amount);
  const float = await floatFor(context, request.amount.currency);
  const hold = await findHold(context, request.reference);
  if (hold === undefined) throw new ConnectorError('TransferNotFound', 'no reservation under this reference');
  if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the reservation was released');
  checkSameRequest(hold, request, minor);
  if (hold.state === 'CAPTURED') return;
  assert(hold.floatAccountId === float.accountId, `sandbox: hold ${hold.reference} is on another float`);
  const payee = (await lockAccounts(context, [request.payeeAccountId])).get(request.payeeAccountId);
  assert(payee !== undefined, `sandbox: payee account of hold ${hold.reference} vanished`);
  refuseInactivePayee(payee.status);
  float.held -= minor;
  await move(context, `commit:${hold.reference}`, float, payee, minor);
  await setHoldState(context, hold.reference, 'CAPTURED');
}

/**
 * Releases a hold. When there is no hold at all, a RELEASED tombstone of amount 0 is recorded:
 * an abort can overtake its own reservation (the switch times the transfer out while our
 * reserve is still on its way), and the late reserve must then be refused rather than hold
 * float for a transfer that nobody will ever commit or release again.
 */
export async function releaseHold(context: BookContext, reference: string): Promise<void> {
  const peek = await findHold(context, reference);
  if (peek === undefined) {
    await context.trx
      .insertInto('sandbox_holds')
      .values({
        reference,
        state: 'RELEASED',
        float_account_id: null,
        payee_account_id: null,
        currency: null,
        amount: '0',
        created_at: context.now,
        updated_at: context.now,
      })
      .onConflict((oc) => oc.column('reference').doNothing())
      .execute();
    const written = await findHold(context, reference);
    if (written === undefined || written.state === 'RELEASED') return;
    return releaseHold(context, reference);
  }
  if (peek.state === 'RELEASED') return;
  if (peek.state === 'CAPTURED') throw new ConnectorError('TransferStateConflict', 'the reservation was committed');
  assert(peek.floatAccountId !== null, `sandbox: held hold ${reference} names no float`);
  const float = (await lockAccounts(context, [peek.floatAccountId])).get(peek.floatAccountId);
  assert(float !== undefined, `sandbox: float of hold ${reference} vanished`);
  // Read again under the float lock: a commit may have captured it meanwhile (PostgreSQL).
  const hold = await findHold(context, reference);
  assert(hold !== undefined, `sandbox: hold ${reference} vanished`);
  if (hold.state === 'CAPTURED') throw new ConnectorError('TransferStateConflict', 'the reservation was committed');
  if (hold.state === 'RELEASED') return;
  float.held -= hold.minor;
  await saveAccount(context, float);
  await setHoldState(context, reference, 'RELEASED');
}

/** Where a reservation stands, for transactionStatus. */
export async function holdState(context: BookContext, reference: string): Promise<HoldState | undefined> {
  return (await findHold(context, reference))?.state;
}

async function floatFor(context: BookContext, currency: string): Promise<Account> {
  const float = await lockSystemAccount(context, 'float', currency);
  if (float === undefined) throw new ConnectorError('UnsupportedCurrency', `no float account in ${currency}`);
  return float;
}

function checkRepeatedReserve(hold: Hold, request: HoldRequest, minor: bigint): void {
  if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the reservation was already released');
  checkSameRequest(hold, request, minor);
}

function checkSameRequest(hold: Hold, request: HoldRequest, minor: bigint): void {
  const same = hold.minor === minor && hold.currency === request.amount.currency && hold.payeeAccountId === request.payeeAccountId;
  if (!same) throw new ConnectorError('ModifiedRequest', 'the reservation under this reference differs');
}

function refuseInactivePayee(status: AccountStatus): void {
  switch (status) {
    case 'active':
      return;
    case 'barred':
      throw new ConnectorError('PayeeBarred');
    case 'blocked':
      throw new ConnectorError('PayeeBlocked');
    case 'closed':
      throw new ConnectorError('PayeeClosed');
  }
}

async function findHold(context: BookContext, reference: string): Promise<Hold | undefined> {
  const row = await context.trx.selectFrom('sandbox_holds').selectAll().where('reference', '=', reference).executeTakeFirst();
  return row === undefined ? undefined : holdFromRow(row);
}

async function setHoldState(context: BookContext, reference: string, state: HoldState): Promise<void> {
  await context.trx.updateTable('sandbox_holds').set({ state, updated_at: context.now }).where('reference', '=', reference).execute();
}

const HOLD_STATES: readonly HoldState[] = ['HELD', 'CAPTURED', 'RELEASED'];

function holdFromRow(row: Selectable<HoldsTable>): Hold {
  const state = HOLD_STATES.find((candidate) => candidate === row.state);
  assert(state !== undefined, `sandbox: stored hold state "${row.state}"`);
  return {
    reference: row.reference,
    state,
    floatAccountId: row.float_account_id,
    payeeAccountId: row.payee_account_id,
    currency: row.currency,
    minor: minorOf(row.amount),
  };
}
