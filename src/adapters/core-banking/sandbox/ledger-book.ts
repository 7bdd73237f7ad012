import { sql, type Selectable } from 'kysely';
import { AssertionFailed, assert } from '../../../domain/errors.js';
import type { AccountStatus } from '../../../ports/core-banking.js';
import type { AccountKind, AccountsTable, PostingKind, SandboxDb } from './sandbox-schema.js';
import type { FloatLane } from './ledger-float.js';
import { TemplateFamily, queryTemplate, type Slots } from '../../store/query-template.js';

/**
 * Row-level bookkeeping shared by the ledger's operations. Every function here runs inside
 * the caller's transaction; none starts one. Amounts are bigint minor units.
 */

export interface BookContext {
  readonly trx: SandboxDb;
  /** Row locks are taken on PostgreSQL only: SQLite's write transaction is already exclusive. */
  readonly lockRows: boolean;
  /** ISO timestamp of the operation. */
  readonly now: string;
  /** Which books (the database they are kept in), for what may be remembered of them. */
  readonly books: object;
  /**
   * True in an operation's second run, after its float shard was found short: the float's
   * shards are then locked together and spread again (ledger-float.ts, takeFromFloat).
   */
  readonly spreadFloat?: boolean;
  /** The shards this process takes from and credits to by reference (ledger-float.ts, FloatLane). */
  readonly floatLane: FloatLane;
}

export interface Account {
  readonly accountId: string;
  readonly kind: AccountKind;
  readonly currency: string;
  readonly status: AccountStatus;
  balance: bigint;
  held: bigint;
}

/** What a posting names of its account. */
export type AccountRef = Pick<Account, 'accountId' | 'currency'>;

const KINDS: readonly AccountKind[] = ['customer', 'float', 'outgoing-settlement'];
const STATUSES: readonly AccountStatus[] = ['active', 'barred', 'blocked', 'closed'];

export function accountKindOf(text: string): AccountKind {
  const kind = KINDS.find((candidate) => candidate === text);
  if (kind === undefined) throw new AssertionFailed(`sandbox: stored account kind "${text}"`);
  return kind;
}

export function accountStatusOf(text: string): AccountStatus {
  const status = STATUSES.find((candidate) => candidate === text);
  if (status === undefined) throw new AssertionFailed(`sandbox: stored account status "${text}"`);
  return status;
}

/** Parses a stored minor-unit amount; the ledger writes only canonical integers. */
export function minorOf(text: string): bigint {
  assert(/^-?(0|[1-9][0-9]*)$/.test(text), `sandbox: stored amount "${text}" is not an integer`);
  return BigInt(text);
}

export function accountFromRow(row: Selectable<AccountsTable>): Account {
  return {
    accountId: row.account_id,
    kind: accountKindOf(row.kind),
    currency: row.currency,
    status: accountStatusOf(row.status),
    balance: minorOf(row.balance),
    held: minorOf(row.held),
  };
}

/**
 * Reads (and on PostgreSQL locks) accounts by id, in account-id order so that two operations
 * locking the same pair can never deadlock. Ids not found are absent from the map.
 *
 * The lock is FOR NO KEY UPDATE: it excludes every other writer of the row, but not the key-share
 * lock a posting's foreign key takes on its account, so a transaction that has written postings
 * naming the float can still lock the float after another one did the same (with FOR UPDATE each
 * would wait for the other's key-share lock: a deadlock).
 */
export async function lockAccounts(context: BookContext, accountIds: readonly string[]): Promise<Map<string, Account>> {
  const ids = [...new Set(accountIds)].sort();
  if (ids.length === 0) return new Map();
  const shape = { count: ids.length, lock: context.lockRows };
  const values: Record<`id${number}`, string> = {};
  ids.forEach((id, index) => {
    values[`id${index}`] = id;
  });
  const rows = await LOCK_ACCOUNTS.get(`${shape.count}/${shape.lock ? 'lock' : 'read'}`, shape).rows(context.trx, values);
  return new Map(rows.map((row) => [row.account_id, accountFromRow(row)]));
}

/** Writes an account's balance and held amount back, checking the invariants first. */
export async function saveAccount(context: BookContext, account: Account): Promise<void> {
  assert(account.held >= 0n, `sandbox: ${account.accountId} would hold a negative amount`);
  assert(account.balance >= account.held, `sandbox: ${account.accountId} would hold more than its balance`);
  await SAVE_ACCOUNT.execute(context.trx, { balance: account.balance.toString(), held: account.held.toString(), now: context.now, accountId: account.accountId });
}

const LOCK_ACCOUNTS = new TemplateFamily('lock sandbox accounts', (shape: { readonly count: number; readonly lock: boolean }, name) =>
  queryTemplate(name, (db: SandboxDb, p: Slots<Record<`id${number}`, string>>) => {
    const ids = Array.from({ length: shape.count }, (_, index) => p[`id${index}`] as string);
    const query = db.selectFrom('sandbox_accounts').selectAll().where('account_id', 'in', ids).orderBy('account_id');
    return shape.lock ? query.forNoKeyUpdate() : query;
  }),
);

const SAVE_ACCOUNT = queryTemplate('save sandbox account', (db: SandboxDb, p: Slots<{ balance: string; held: string; now: string; accountId: string }>) =>
  db.updateTable('sandbox_accounts').set({ balance: p.balance, held: p.held, updated_at: p.now }).where('account_id', '=', p.accountId),
);

/**
 * Credits `minor` to a customer account if it is active; answers the account's status (the
 * credit was made only when it is `active`). On PostgreSQL one conditional UPDATE, which takes
 * the row's lock and checks the status in the same statement; on SQLite a read and a write.
 */
export async function creditActiveAccount(context: BookContext, accountId: string, minor: bigint): Promise<AccountStatus> {
  assert(minor > 0n, `sandbox: credit of ${minor} to ${accountId}`);
  if (context.lockRows) {
    const result = await sql<{ account_id: string }>`
      update sandbox_accounts set balance = (balance::numeric + ${minor.toString()}::numeric)::text, updated_at = ${context.now}
      where account_id = ${accountId} and status = 'active'
      returning account_id`.execute(context.trx);
    if (result.rows.length === 1) return 'active';
    const row = await context.trx.selectFrom('sandbox_accounts').select('status').where('account_id', '=', accountId).executeTakeFirst();
    assert(row !== undefined, `sandbox: account ${accountId} vanished`);
    return accountStatusOf(row.status);
  }
  const account = (await lockAccounts(context, [accountId])).get(accountId);
  assert(account !== undefined, `sandbox: account ${accountId} vanished`);
  if (account.status !== 'active') return account.status;
  account.balance += minor;
  await saveAccount(context, account);
  return 'active';
}

/**
 * Records the postings of a TRANSFER of `minor` between two accounts without touching their
 * balances: for callers that save each account themselves, so as to lock the busiest one last.
 */
export async function recordTransfer(context: BookContext, movementId: string, from: AccountRef, to: AccountRef, minor: bigint): Promise<void> {
  assert(minor > 0n, `sandbox: movement ${movementId} of ${minor}`);
  assert(from.currency === to.currency, `sandbox: movement ${movementId} across currencies`);
  assert(from.accountId !== to.accountId, `sandbox: movement ${movementId} to its own source`);
  await insertPostings(context, movementId, 'TRANSFER', [
    { account: from, minor: -minor },
    { account: to, minor },
  ]);
}

/**
 * Credits a customer account from outside the books: the only movement that changes the total
 * (a float is funded through ledger-float.ts, which spreads the amount over its shards).
 */
export async function fundAccount(context: BookContext, movementId: string, account: Account, minor: bigint): Promise<void> {
  await recordFunding(context, movementId, account, minor);
  account.balance += minor;
  await saveAccount(context, account);
}

/** The FUNDING posting of money entering the books, without touching any balance. */
export async function recordFunding(context: BookContext, movementId: string, account: AccountRef, minor: bigint): Promise<void> {
  assert(minor > 0n, `sandbox: funding ${movementId} of ${minor}`);
  await insertPostings(context, movementId, 'FUNDING', [{ account, minor }]);
}

async function insertPostings(
  context: BookContext,
  movementId: string,
  kind: PostingKind,
  legs: ReadonlyArray<{ readonly account: AccountRef; readonly minor: bigint }>,
): Promise<void> {
  const sum = legs.reduce((total, leg) => total + leg.minor, 0n);
  assert(kind === 'FUNDING' || sum === 0n, `sandbox: movement ${movementId} does not balance`);
  const values: PostingValues = { movementId, kind, now: context.now };
  legs.forEach((leg, index) => {
    values[`leg${index}`] = index;
    values[`account${index}`] = leg.account.accountId;
    values[`currency${index}`] = leg.account.currency;
    values[`amount${index}`] = leg.minor.toString();
  });
  await INSERT_POSTINGS.get(String(legs.length), legs.length).execute(context.trx, values);
}

type PostingValues = { movementId: string; kind: string; now: string } & Record<`leg${number}`, number> &
  Record<`account${number}` | `currency${number}` | `amount${number}`, string>;

/** One template per number of legs. */
const INSERT_POSTINGS = new TemplateFamily('insert sandbox postings', (legs: number, name) =>
  queryTemplate(name, (db: SandboxDb, p: Slots<PostingValues>) =>
    db.insertInto('sandbox_postings').values(
      Array.from({ length: legs }, (_, index) => ({
        movement_id: p.movementId,
        leg: p[`leg${index}`] as number,
        kind: p.kind as PostingKind,
        account_id: p[`account${index}`] as string,
        currency: p[`currency${index}`] as string,
        amount: p[`amount${index}`] as string,
        created_at: p.now,
      })),
    ),
  ),
);
