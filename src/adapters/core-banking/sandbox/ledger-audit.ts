import type { AccountStatus } from '../../../ports/core-banking.js';
import { accountFromRow, minorOf, type Account } from './ledger-book.js';
import { formatSigned } from './ledger-amounts.js';
import type { AccountKind, SandboxDb } from './sandbox-schema.js';

/** Read-only views over the books: balances for people, the conservation check for tests. */

export interface AccountBalance {
  readonly accountId: string;
  readonly kind: AccountKind;
  readonly currency: string;
  readonly status: AccountStatus;
  /** Decimal strings in the account's currency. */
  readonly balance: string;
  readonly held: string;
  readonly available: string;
}

export interface CurrencyTotals {
  readonly currency: string;
  /** Sum of every account's balance. */
  readonly totalBalance: string;
  /** Sum of every FUNDING posting: what entered the books from outside. */
  readonly totalFunded: string;
  /** Sum of every account's held amount. */
  readonly totalHeld: string;
  /** Sum of the holds in state HELD. */
  readonly totalHolds: string;
}

export interface ConservationReport {
  /** True when no problem was found. */
  readonly ok: boolean;
  readonly currencies: readonly CurrencyTotals[];
  readonly problems: readonly string[];
}

/**
 * Every account with its figures: a float's are the sums of its shards (ledger-float.ts). One
 * statement, so one consistent state.
 */
export async function readBalances(db: SandboxDb): Promise<AccountBalance[]> {
  const rows = await db
    .selectFrom('sandbox_accounts as a')
    .leftJoin('sandbox_float_shards as s', 's.account_id', 'a.account_id')
    .selectAll('a')
    .select(['s.shard', 's.balance as shard_balance', 's.held as shard_held'])
    .orderBy('a.account_id')
    .orderBy('s.shard')
    .execute();
  const accounts: Account[] = [];
  for (const row of rows) {
    let account = accounts.at(-1);
    if (account?.accountId !== row.account_id) {
      account = accountFromRow(row);
      accounts.push(account);
    }
    if (row.shard_balance !== null && row.shard_held !== null) {
      account.balance += minorOf(row.shard_balance);
      account.held += minorOf(row.shard_held);
    }
  }
  return accounts.map((account) => ({
    accountId: account.accountId,
    kind: account.kind,
    currency: account.currency,
    status: account.status,
    balance: formatSigned(account.balance, account.currency),
    held: formatSigned(account.held, account.currency),
    available: formatSigned(account.balance - account.held, account.currency),
  }));
}

/**
 * Checks the books from the journal up: every account's balance equals the sum of its postings,
 * every TRANSFER movement sums to zero, the balances of a currency sum to what was funded, and
 * every account's held amount equals the sum of its HELD holds. A float's figures are its own
 * row's plus its shards'; each shard holds exactly its HELD holds and no more than its balance.
 * Run inside one transaction, so it sees one consistent state.
 */
export async function checkConservation(db: SandboxDb): Promise<ConservationReport> {
  const accounts = (await db.selectFrom('sandbox_accounts').selectAll().orderBy('account_id').execute()).map(accountFromRow);
  const shards = await db.selectFrom('sandbox_float_shards').selectAll().orderBy('account_id').orderBy('shard').execute();
  const postings = await db.selectFrom('sandbox_postings').select(['movement_id', 'kind', 'account_id', 'amount']).execute();
  const holds = await db.selectFrom('sandbox_holds').select(['float_account_id', 'float_shard', 'amount']).where('state', '=', 'HELD').execute();
  const problems: string[] = [];
  const byId = new Map(accounts.map((account) => [account.accountId, account]));
  const heldByShard = new Map<string, bigint>();
  for (const hold of holds) add(heldByShard, `${hold.float_account_id ?? '?'}#${hold.float_shard ?? 0}`, minorOf(hold.amount));
  for (const row of shards) {
    const balance = minorOf(row.balance);
    const held = minorOf(row.held);
    const name = `${row.account_id} shard ${row.shard}`;
    const account = byId.get(row.account_id);
    if (account === undefined) {
      problems.push(`${name} belongs to no account`);
      continue;
    }
    account.balance += balance;
    account.held += held;
    const holdsOnShard = heldByShard.get(`${row.account_id}#${row.shard}`) ?? 0n;
    if (held !== holdsOnShard) problems.push(`${name}: held ${held} but its holds sum to ${holdsOnShard}`);
    if (held < 0n || held > balance) problems.push(`${name}: held ${held} of balance ${balance}`);
  }
  const posted = new Map<string, bigint>();
  const movements = new Map<string, bigint>();
  const funded = new Map<string, bigint>();
  const currencyOf = new Map(accounts.map((account) => [account.accountId, account.currency]));
  for (const posting of postings) {
    const minor = minorOf(posting.amount);
    add(posted, posting.account_id, minor);
    if (posting.kind === 'FUNDING') add(funded, currencyOf.get(posting.account_id) ?? '?', minor);
    else add(movements, posting.movement_id, minor);
  }
  for (const [movementId, sum] of movements) if (sum !== 0n) problems.push(`movement ${movementId} sums to ${sum}`);
  const heldByHolds = new Map<string, bigint>();
  for (const hold of holds) add(heldByHolds, hold.float_account_id ?? '?', minorOf(hold.amount));
  for (const account of accounts) problems.push(...accountProblems(account, posted.get(account.accountId) ?? 0n, heldByHolds.get(account.accountId) ?? 0n));
  const currencies = totalsByCurrency(accounts, funded, heldByHolds);
  for (const totals of currencies) {
    if (totals.totalBalance !== totals.totalFunded) problems.push(`${totals.currency}: balances sum to ${totals.totalBalance}, funding to ${totals.totalFunded}`);
    if (totals.totalHeld !== totals.totalHolds) problems.push(`${totals.currency}: accounts hold ${totals.totalHeld}, holds sum to ${totals.totalHolds}`);
  }
  return { ok: problems.length === 0, currencies, problems };
}

function accountProblems(account: Account, posted: bigint, heldByHolds: bigint): string[] {
  const problems: string[] = [];
  if (account.balance !== posted) problems.push(`${account.accountId}: balance ${account.balance} but postings sum to ${posted}`);
  if (account.held !== heldByHolds) problems.push(`${account.accountId}: held ${account.held} but its holds sum to ${heldByHolds}`);
  if (account.held < 0n || account.held > account.balance) problems.push(`${account.accountId}: held ${account.held} of balance ${account.balance}`);
  return problems;
}

function totalsByCurrency(accounts: readonly Account[], funded: Map<string, bigint>, heldByHolds: Map<string, bigint>): CurrencyTotals[] {
  const currencies = [...new Set(accounts.map((account) => account.currency))].sort();
  return currencies.map((currency) => {
    const inCurrency = accounts.filter((account) => account.currency === currency);
    const sum = (pick: (account: Account) => bigint): bigint => inCurrency.reduce((total, account) => total + pick(account), 0n);
    return {
      currency,
      totalBalance: formatSigned(sum((account) => account.balance), currency),
      totalFunded: formatSigned(funded.get(currency) ?? 0n, currency),
      totalHeld: formatSigned(sum((account) => account.held), currency),
      totalHolds: formatSigned(sum((account) => heldByHolds.get(account.accountId) ?? 0n), currency),
    };
  });
}

function add(sums: Map<string, bigint>, key: string, minor: bigint): void {
  sums.set(key, (sums.get(key) ?? 0n) + minor);
}
