import { sql, type Selectable } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import type { Money } from '../../../domain/money.js';
import type { AccountStatus } from '../../../ports/core-banking.js';
import { accountFromRow, creditActiveAccount, minorOf, recordTransfer, type Account, type BookContext } from './ledger-book.js';
import { changeShard, floatOf, shardOf, takeFromFloat } from './ledger-float.js';
import { positiveMinor } from './ledger-amounts.js';
import type { AccountsTable, HoldState, HoldsTable } from './sandbox-schema.js';

/**
 * Holds on the float for incoming transfers: reserve -> HELD, then commit -> CAPTURED or
 * release -> RELEASED. Each function is the body of one transaction.
 *
 * Locking on PostgreSQL: operations on one reference take turns on a transaction-level advisory
 * lock named by the reference, so each sees the other's outcome, while operations on different
 * references never wait for each other there. Account rows are locked only to change them, as
 * late as possible: the payee (a commit), then one shard of the float (ledger-float.ts) just
 * before the commit. Every ledger transaction locks at most one customer account and then the
 * float's shards, in that order, so none can deadlock another.
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
  /** The float shard holding the amount (0 for holds older than the shards). */
  readonly floatShard: number;
  readonly payeeAccountId: string | null;
  readonly currency: string | null;
  readonly minor: bigint;
}

export async function reserveHold(context: BookContext, request: HoldRequest): Promise<void> {
  const minor = positiveMinor(request.amount);
  // Read, not locked: a reservation changes nothing on the payee's account.
  const payee = await takeTurnReading(context, request.reference, request.payeeAccountId);
  if (payee === undefined || payee.kind !== 'customer') throw new ConnectorError('PartyNotFound', 'no such payee account');
  if (payee.currency !== request.amount.currency) throw new ConnectorError('UnsupportedCurrency', `payee account is in ${payee.currency}`);
  const float = await floatOf(context, request.amount.currency);
  const shard = shardOf(request.reference);
  // The hold is written first; one already under this reference (a repeat, or a release that
  // came first) is read instead. The reference's turn is ours, so nothing changes it meanwhile.
  const inserted = await context.trx
    .insertInto('sandbox_holds')
    .values({
      reference: request.reference,
      state: 'HELD',
      float_account_id: float.accountId,
      float_shard: shard,
      payee_account_id: payee.accountId,
      currency: payee.currency,
      amount: minor.toString(),
      created_at: context.now,
      updated_at: context.now,
    })
    .onConflict((oc) => oc.column('reference').doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
    const existing = await findHold(context, request.reference);
    assert(existing !== undefined, `sandbox: hold ${request.reference} neither inserted nor found`);
    return checkRepeatedReserve(existing, request, minor);
  }
  // Refused when the float's available balance is short; thrown inside the transaction, so the
  // hold inserted above is rolled back with it.
  if (!(await takeFromFloat(context, float.accountId, shard, { balance: 0n, held: minor }))) throw new ConnectorError('PayeeInsufficientLiquidity');
}

export async function commitHold(context: BookContext, request: HoldRequest): Promise<void> {
  const minor = positiveMinor(request.amount);
  await lockReference(context, request.reference);
  const hold = await findHold(context, request.reference);
  if (hold === undefined) throw new ConnectorError('TransferNotFound', 'no reservation under this reference');
  if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the reservation was released');
  checkSameRequest(hold, request, minor);
  if (hold.state === 'CAPTURED') return;
  assert(hold.floatAccountId !== null && hold.currency !== null, `sandbox: held hold ${hold.reference} names no float`);
  // The payee first (credited only while active; otherwise nothing of this transaction stays),
  // then the postings and the hold, then the float, which every transfer touches, last.
  refuseInactivePayee(await creditActiveAccount(context, request.payeeAccountId, minor));
  await recordTransfer(context, `commit:${hold.reference}`, { accountId: hold.floatAccountId, currency: hold.currency }, { accountId: request.payeeAccountId, currency: hold.currency }, minor);
  await setHoldState(context, hold.reference, 'CAPTURED');
  await changeShard(context, hold.floatAccountId, hold.floatShard, { balance: -minor, held: -minor });
}

/**
 * Releases a hold. When there is no hold at all, a RELEASED tombstone of amount 0 is recorded:
 * an abort can overtake its own reservation (the switch times the transfer out while our
 * reserve is still on its way), and the late reserve must then be refused rather than hold
 * float for a transfer that nobody will ever commit or release again.
 */
export async function releaseHold(context: BookContext, reference: string): Promise<void> {
  await lockReference(context, reference);
  const hold = await findHold(context, reference);
  if (hold === undefined) {
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
      .execute();
    return;
  }
  if (hold.state === 'RELEASED') return;
  if (hold.state === 'CAPTURED') throw new ConnectorError('TransferStateConflict', 'the reservation was committed');
  assert(hold.floatAccountId !== null, `sandbox: held hold ${reference} names no float`);
  await setHoldState(context, reference, 'RELEASED');
  await changeShard(context, hold.floatAccountId, hold.floatShard, { balance: 0n, held: -hold.minor });
}

/** Where a reservation stands, for transactionStatus. */
export async function holdState(context: BookContext, reference: string): Promise<HoldState | undefined> {
  return (await findHold(context, reference))?.state;
}

/**
 * Operations on one reference take turns (PostgreSQL): a transaction-level advisory lock in the
 * holds' own key space, keyed by a hash of the reference (a collision only makes two references
 * take turns). SQLite's write transaction is already exclusive.
 */
async function lockReference(context: BookContext, reference: string): Promise<void> {
  if (context.lockRows) await sql`select pg_advisory_xact_lock(${HOLD_LOCK_SPACE}::integer, hashtext(${reference}))`.execute(context.trx);
}

/** "hold" in ASCII, as a 32-bit key space for lockReference. */
const HOLD_LOCK_SPACE = 0x686f6c64;

/**
 * Takes the reference's turn (lockReference) and reads an account, in one statement on
 * PostgreSQL: the account is read from the statement's snapshot, which is enough for what never
 * changes (its kind and currency).
 */
async function takeTurnReading(context: BookContext, reference: string, accountId: string): Promise<Account | undefined> {
  if (!context.lockRows) {
    const row = await context.trx.selectFrom('sandbox_accounts').selectAll().where('account_id', '=', accountId).executeTakeFirst();
    return row === undefined ? undefined : accountFromRow(row);
  }
  const result = await sql<Selectable<AccountsTable> & { account_id: string | null }>`
    select a.* from (select pg_advisory_xact_lock(${HOLD_LOCK_SPACE}::integer, hashtext(${reference}))) as turn
    left join sandbox_accounts a on a.account_id = ${accountId}`.execute(context.trx);
  const row = result.rows[0];
  return row === undefined || row.account_id === null ? undefined : accountFromRow(row);
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
    floatShard: row.float_shard ?? 0,
    payeeAccountId: row.payee_account_id,
    currency: row.currency,
    minor: minorOf(row.amount),
  };
}
