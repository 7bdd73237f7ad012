import { sql, type Selectable } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import type { Money } from '../../../domain/money.js';
import type { AccountStatus } from '../../../ports/core-banking.js';
import { accountFromRow, accountStatusOf, creditActiveAccount, minorOf, recordTransfer, type Account, type AccountRef, type BookContext } from './ledger-book.js';
import { ShardShort, changeShard, floatOf, shardOf, takeFromFloat } from './ledger-float.js';
import { positiveMinor } from './ledger-amounts.js';
import { queryTemplate, rawQuery, type Slots } from '../../store/query-template.js';
import type { AccountsTable, HoldState, HoldsTable, SandboxDb } from './sandbox-schema.js';

/**
 * Holds on the float for incoming transfers: reserve -> HELD, then commit -> CAPTURED or
 * release -> RELEASED.
 *
 * On SQLite each function is the body of one transaction (the write transaction is exclusive).
 * On PostgreSQL a reservation and a commit are one statement each (reserveHoldAtOnce,
 * commitHoldAtOnce): the hold's primary key decides between two reservations of one reference,
 * and the hold's row lock makes a commit and a release take turns. The transactional reserveHold
 * finishes a reservation the statement could not (a short shard, a hold committed meanwhile),
 * taking the reference's advisory lock as releaseHold does. Account rows are locked only to
 * change them, as late as possible: the payee (a commit), then one shard of the float
 * (ledger-float.ts). Locks are always taken in the order reference, hold, customer account,
 * shards, so no transaction deadlocks another.
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
  if (payee === undefined || payee.kind !== 'customer') return refuseReserve(context, request, minor, new ConnectorError('PartyNotFound', 'no such payee account'));
  if (payee.currency !== request.amount.currency) {
    return refuseReserve(context, request, minor, new ConnectorError('UnsupportedCurrency', `payee account is in ${payee.currency}`));
  }
  let float: AccountRef;
  try {
    float = await floatOf(context, request.amount.currency);
  } catch (error) {
    if (error instanceof ConnectorError) return refuseReserve(context, request, minor, error);
    throw error;
  }
  const shard = shardOf(request.reference, context.floatLane);
  // The hold is written first; one already under this reference (a repeat, or a release that
  // came first) is read instead. The reference's turn is ours, so nothing changes it meanwhile.
  const inserted = await INSERT_HELD.changed(context.trx, {
    reference: request.reference,
    floatAccountId: float.accountId,
    floatShard: shard,
    payeeAccountId: payee.accountId,
    currency: payee.currency,
    amount: minor.toString(),
    now: context.now,
  });
  if (inserted === 0) {
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
  const hold = await findHold(context, request.reference, { lock: true });
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
 * Refuses a reservation, unless a hold is already under its reference: that one answers (a late
 * reserve after a release, its RELEASED marker, is TransferStateConflict whatever payee or
 * currency it names; a reserve naming other terms than a hold's is ModifiedRequest). Looked up
 * only on the way to a refusal, so a reservation that goes ahead costs no extra statement.
 */
async function refuseReserve(context: BookContext, request: HoldRequest, minor: bigint, refusal: ConnectorError): Promise<never> {
  const earlier = await findHold(context, request.reference);
  if (earlier !== undefined) checkRepeatedReserve(earlier, request, minor);
  throw refusal;
}

/** How a reservation in one statement ended (PostgreSQL; reserveHoldAtOnce). */
export type AtOnceReserve = 'reserved' | 'in-transaction';

/**
 * The reservation as one autocommitted statement on PostgreSQL: one round trip instead of a
 * transaction of five. The hold is inserted first (ON CONFLICT DO NOTHING: the hold's primary
 * key, not the reference's turn, decides between two reservations of one reference), then its
 * shard is changed under the shard's own invariants. A hold whose shard is short would be left
 * without its amount held, so the statement then fails on purpose and nothing of it stays.
 *
 * Answers 'reserved', or 'in-transaction' for the ledger to finish the reservation in a
 * transaction (a hold committed by another transaction after this statement's snapshot is read
 * there). Throws ShardShort when the shard is short, for the ledger to spread the float in that
 * transaction. Repeats and refusals are answered here as reserveHold answers them.
 */
export async function reserveHoldAtOnce(context: BookContext, request: HoldRequest): Promise<AtOnceReserve> {
  const minor = positiveMinor(request.amount).toString();
  const currency = request.amount.currency;
  let float: AccountRef;
  try {
    float = await floatOf(context, currency);
  } catch (error) {
    // No float in this currency: the transaction answers it, after any hold under the reference.
    if (error instanceof ConnectorError && error.errorName === 'UnsupportedCurrency') return 'in-transaction';
    throw error;
  }
  const shard = shardOf(request.reference, context.floatLane);
  let row;
  try {
    row = await RESERVE_AT_ONCE.first(context.trx, {
      payeeAccountId: request.payeeAccountId,
      reference: request.reference,
      floatAccountId: float.accountId,
      shard,
      currency,
      minor,
      now: context.now,
      shardShort: SHARD_SHORT,
    });
  } catch (error) {
    if (error instanceof Error && error.message.includes(SHARD_SHORT)) throw new ShardShort(float.accountId, shard);
    throw error;
  }
  assert(row !== undefined, 'sandbox: the reservation statement answered no row');
  if (row.inserted === 1) return 'reserved';
  // A hold already under this reference answers before the payee is checked, as in reserveHold.
  if (row.reference !== null) {
    checkRepeatedReserve(holdFromRow(row), request, BigInt(minor));
    return 'reserved';
  }
  if (row.payee_kind !== 'customer') throw new ConnectorError('PartyNotFound', 'no such payee account');
  if (row.payee_currency !== currency) throw new ConnectorError('UnsupportedCurrency', `payee account is in ${String(row.payee_currency)}`);
  return 'in-transaction';
}

/** Text that makes reserveHoldAtOnce's statement fail when the hold's shard is short. */
const SHARD_SHORT = 'sandbox float shard short';

/** The shard short text goes in as a value: a constant cast to integer would fail when the statement is planned, not only when the case is taken. */
const RESERVE_AT_ONCE = queryTemplate(
  'reserve sandbox hold at once',
  (
    db: SandboxDb,
    p: Slots<{ payeeAccountId: string; reference: string; floatAccountId: string; shard: number; currency: string; minor: string; now: string; shardShort: string }>,
  ) =>
    rawQuery(
      sql<Selectable<HoldsTable> & { payee_kind: string | null; payee_currency: string | null; inserted: number; guard: number | null }>`
      with payee as (
        select kind, currency from sandbox_accounts where account_id = ${p.payeeAccountId}
      ), hold as (
        insert into sandbox_holds (reference, state, float_account_id, float_shard, payee_account_id, currency, amount, created_at, updated_at)
        select ${p.reference}, 'HELD', ${p.floatAccountId}, ${p.shard}, ${p.payeeAccountId}, ${p.currency}, ${p.minor}, ${p.now}, ${p.now}
        where exists (select 1 from payee where kind = 'customer' and currency = ${p.currency})
        on conflict (reference) do nothing
        returning reference
      ), taken as (
        update sandbox_float_shards set held = (held::numeric + ${p.minor}::numeric)::text, updated_at = ${p.now}
        where account_id = ${p.floatAccountId} and shard = ${p.shard} and exists (select 1 from hold)
          and balance::numeric >= held::numeric + ${p.minor}::numeric
        returning shard
      )
      select
        (select kind from payee) as payee_kind,
        (select currency from payee) as payee_currency,
        (select count(*) from hold)::integer as inserted,
        cast(case when exists (select 1 from hold) and not exists (select 1 from taken) then ${p.shardShort} end as integer) as guard,
        h.*
      from (select 1) as one left join sandbox_holds h on h.reference = ${p.reference}`,
      db,
    ),
);

/**
 * The commit as one autocommitted statement on PostgreSQL: one round trip instead of a
 * transaction of eight. The hold's row is locked (FOR UPDATE) for the statement, which is how
 * a commit and a release of one reference take turns here; the payee is credited only while
 * the hold is HELD under the same terms and the account is active; the postings, the hold's
 * state and its shard follow the credit. Should any of them not follow it, the statement fails
 * on purpose and nothing of it stays. Answers as commitHold does.
 */
export async function commitHoldAtOnce(context: BookContext, request: HoldRequest): Promise<void> {
  const minor = positiveMinor(request.amount);
  const currency = request.amount.currency;
  const movementId = `commit:${request.reference}`;
  const row = await COMMIT_AT_ONCE.first(context.trx, {
    reference: request.reference,
    minor: minor.toString(),
    negative: (-minor).toString(),
    now: context.now,
    payeeAccountId: request.payeeAccountId,
    currency,
    movementId,
    commitBroken: COMMIT_BROKEN,
  });
  assert(row !== undefined, 'sandbox: the commit statement answered no row');
  if (row.reference === null) throw new ConnectorError('TransferNotFound', 'no reservation under this reference');
  const hold = holdFromRow(row);
  if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the reservation was released');
  checkSameRequest(hold, request, minor);
  if (hold.state === 'CAPTURED' || row.credited === 1) return;
  assert(row.payee_status !== null, `sandbox: payee account ${request.payeeAccountId} vanished`);
  let status = accountStatusOf(row.payee_status);
  if (status === 'active') {
    // The statement reads the status from its snapshot, but the credit, which waited for the
    // account's row, saw the row as another transaction left it (closed, say): read it again.
    const now = await context.trx.selectFrom('sandbox_accounts').select('status').where('account_id', '=', request.payeeAccountId).executeTakeFirst();
    assert(now !== undefined, `sandbox: payee account ${request.payeeAccountId} vanished`);
    status = accountStatusOf(now.status);
  }
  assert(status !== 'active', `sandbox: commit of ${request.reference} credited nothing to an active payee`);
  refuseInactivePayee(status);
}

/** Text that makes commitHoldAtOnce's statement fail when a leg did not follow the credit. */
const COMMIT_BROKEN = 'sandbox commit could not book every leg';

const COMMIT_AT_ONCE = queryTemplate(
  'commit sandbox hold at once',
  (
    db: SandboxDb,
    p: Slots<{ reference: string; minor: string; negative: string; now: string; payeeAccountId: string; currency: string; movementId: string; commitBroken: string }>,
  ) =>
    rawQuery(
      sql<Selectable<HoldsTable> & { payee_status: string | null; credited: number; guard: number | null }>`
    with h as (
      select * from sandbox_holds where reference = ${p.reference} for update
    ), credit as (
      update sandbox_accounts set balance = (balance::numeric + ${p.minor}::numeric)::text, updated_at = ${p.now}
      where account_id = ${p.payeeAccountId} and status = 'active'
        and exists (select 1 from h where state = 'HELD' and amount = ${p.minor} and currency = ${p.currency} and payee_account_id = ${p.payeeAccountId})
      returning account_id
    ), postings as (
      insert into sandbox_postings (movement_id, leg, kind, account_id, currency, amount, created_at)
      select ${p.movementId}, 0, 'TRANSFER', h.float_account_id, ${p.currency}, ${p.negative}, ${p.now} from h, credit
      union all
      select ${p.movementId}, 1, 'TRANSFER', ${p.payeeAccountId}, ${p.currency}, ${p.minor}, ${p.now} from credit
      returning leg
    ), captured as (
      update sandbox_holds set state = 'CAPTURED', updated_at = ${p.now}
      where reference = ${p.reference} and exists (select 1 from credit)
      returning reference
    ), released_from as (
      update sandbox_float_shards s
      set balance = (s.balance::numeric - ${p.minor}::numeric)::text, held = (s.held::numeric - ${p.minor}::numeric)::text, updated_at = ${p.now}
      from h
      where s.account_id = h.float_account_id and s.shard = coalesce(h.float_shard, 0) and exists (select 1 from credit)
        and s.held::numeric >= ${p.minor}::numeric
      returning s.shard
    )
    select
      (select status from sandbox_accounts where account_id = ${p.payeeAccountId}) as payee_status,
      (select count(*) from credit)::integer as credited,
      cast(case when exists (select 1 from credit)
        and ((select count(*) from postings) <> 2 or (select count(*) from captured) <> 1 or (select count(*) from released_from) <> 1)
        then ${p.commitBroken} end as integer) as guard,
      h.*
    from (select 1) as one left join h on true`,
      db,
    ),
);

/**
 * Releases a hold. When there is no hold at all, a RELEASED tombstone of amount 0 is recorded:
 * an abort can overtake its own reservation (the switch times the transfer out while our
 * reserve is still on its way), and the late reserve must then be refused rather than hold
 * float for a transfer that nobody will ever commit or release again.
 */
export async function releaseHold(context: BookContext, reference: string): Promise<void> {
  await lockReference(context, reference);
  // Locked (PostgreSQL): a commit in one statement (commitHoldAtOnce) takes turns on this row.
  let hold = await findHold(context, reference, { lock: true });
  if (hold === undefined) {
    const tombstone = await context.trx
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
      .executeTakeFirst();
    if (Number(tombstone.numInsertedOrUpdatedRows ?? 0n) === 1) return;
    // A reservation in one statement (reserveHoldAtOnce), which does not take the reference's
    // turn, inserted its hold meanwhile: release that one.
    hold = await findHold(context, reference, { lock: true });
    assert(hold !== undefined, `sandbox: hold ${reference} neither inserted nor found`);
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
    const row = await READ_ACCOUNT.first(context.trx, { accountId });
    return row === undefined ? undefined : accountFromRow(row);
  }
  const row = await TAKE_TURN_READING.first(context.trx, { space: HOLD_LOCK_SPACE, reference, accountId });
  return row === undefined || row.account_id === null ? undefined : accountFromRow(row);
}

const READ_ACCOUNT = queryTemplate('read sandbox account', (db: SandboxDb, p: Slots<{ accountId: string }>) =>
  db.selectFrom('sandbox_accounts').selectAll().where('account_id', '=', p.accountId),
);

const TAKE_TURN_READING = queryTemplate('take a reference\'s turn and read an account', (db: SandboxDb, p: Slots<{ space: number; reference: string; accountId: string }>) =>
  rawQuery(
    sql<Selectable<AccountsTable> & { account_id: string | null }>`
    select a.* from (select pg_advisory_xact_lock(${p.space}::integer, hashtext(${p.reference}))) as turn
    left join sandbox_accounts a on a.account_id = ${p.accountId}`,
    db,
  ),
);

const INSERT_HELD = queryTemplate(
  'insert sandbox hold',
  (db: SandboxDb, p: Slots<{ reference: string; floatAccountId: string; floatShard: number; payeeAccountId: string; currency: string; amount: string; now: string }>) =>
    db
      .insertInto('sandbox_holds')
      .values({
        reference: p.reference,
        state: sql.lit('HELD'),
        float_account_id: p.floatAccountId,
        float_shard: p.floatShard,
        payee_account_id: p.payeeAccountId,
        currency: p.currency,
        amount: p.amount,
        created_at: p.now,
        updated_at: p.now,
      })
      .onConflict((oc) => oc.column('reference').doNothing()),
);


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

async function findHold(context: BookContext, reference: string, options: { readonly lock?: boolean } = {}): Promise<Hold | undefined> {
  const template = options.lock === true && context.lockRows ? FIND_HOLD_LOCKED : FIND_HOLD;
  const row = await template.first(context.trx, { reference });
  return row === undefined ? undefined : holdFromRow(row);
}

const FIND_HOLD = queryTemplate('find sandbox hold', (db: SandboxDb, p: Slots<{ reference: string }>) =>
  db.selectFrom('sandbox_holds').selectAll().where('reference', '=', p.reference),
);

const FIND_HOLD_LOCKED = queryTemplate('find and lock sandbox hold', (db: SandboxDb, p: Slots<{ reference: string }>) =>
  db.selectFrom('sandbox_holds').selectAll().where('reference', '=', p.reference).forUpdate(),
);

async function setHoldState(context: BookContext, reference: string, state: HoldState): Promise<void> {
  await SET_HOLD_STATE.execute(context.trx, { state, now: context.now, reference });
}

const SET_HOLD_STATE = queryTemplate('set sandbox hold state', (db: SandboxDb, p: Slots<{ state: HoldState; now: string; reference: string }>) =>
  db.updateTable('sandbox_holds').set({ state: p.state, updated_at: p.now }).where('reference', '=', p.reference),
);

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
