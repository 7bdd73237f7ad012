import { sql, type Kysely } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import { formatMinorUnits, toMinorUnits, type Money } from '../../../domain/money.js';
import type { SqlDatabase } from '../../../adapters/store/sql-database.js';
import type { ConversionHoldStatus } from '../../ports/exchange.js';
import type { SandboxExchangeConfig } from './exchange-config.js';
import type { ExchangeSchema } from './exchange-migrations.js';

/**
 * The sandbox exchange's books: a double-entry ledger in the connector's database, like the
 * sandbox institution's. Per currency, a `liquidity` account (the provider's own money) and a
 * `clearing` account (the other side at the hub, which may go below zero). A conversion holds
 * target liquidity; its commit credits the source to liquidity from clearing and pays the held
 * target from liquidity to clearing, each as postings that sum to zero per currency.
 *
 * Each operation is one transaction, idempotent on its reference. On PostgreSQL a reference's
 * operations take turns on an advisory lock, then accounts are locked in id order.
 */

type Trx = Kysely<ExchangeSchema>;
interface Context {
  readonly trx: Trx;
  readonly lockRows: boolean;
  readonly now: string;
}

interface Account {
  readonly accountId: string;
  readonly currency: string;
  balance: bigint;
  held: bigint;
}

export const liquidityAccountId = (currency: string): string => `liquidity-${currency.toLowerCase()}`;
export const clearingAccountId = (currency: string): string => `clearing-${currency.toLowerCase()}`;

/** "fxhd" in ASCII: the key space of the advisory locks per reference. */
const LOCK_SPACE = 0x66786864;

export interface ExchangeBalance {
  readonly accountId: string;
  readonly currency: string;
  /** Signed decimal: clearing accounts go below zero. */
  readonly balance: string;
  readonly held: string;
}

export class ExchangeLedger {
  readonly #database: SqlDatabase;
  readonly #clock: () => Date;

  constructor(database: SqlDatabase, clock: () => Date) {
    this.#database = database;
    this.#clock = clock;
  }

  /** Opens every account with its liquidity, once: false when the books are open already. */
  open(config: SandboxExchangeConfig): Promise<boolean> {
    return this.#write(async (context) => {
      if (context.lockRows) await sql`select pg_advisory_xact_lock(${LOCK_SPACE}::integer, 0)`.execute(context.trx);
      const existing = await context.trx.selectFrom('fx_exchange_accounts').select('account_id').limit(1).executeTakeFirst();
      if (existing !== undefined) return false;
      for (const [currency, amount] of Object.entries(config.liquidity)) {
        const minor = toMinorUnits(amount, currency);
        for (const [accountId, kind, balance] of [[liquidityAccountId(currency), 'liquidity', minor], [clearingAccountId(currency), 'clearing', 0n]] as const) {
          await context.trx.insertInto('fx_exchange_accounts').values({ account_id: accountId, kind, currency, balance: balance.toString(), held: '0', updated_at: context.now }).execute();
        }
        if (minor > 0n) {
          await context.trx
            .insertInto('fx_exchange_postings')
            .values({ movement_id: `open:${currency}`, leg: 0, kind: 'FUNDING', account_id: liquidityAccountId(currency), currency, amount: minor.toString(), created_at: context.now })
            .execute();
        }
      }
      return true;
    });
  }

  reserve(reference: string, target: Money): Promise<void> {
    return this.#write(async (context) => {
      await lockReference(context, reference);
      const minor = toMinorUnits(target.amount, target.currency);
      assert(minor > 0n, `fx reserve ${reference} of ${target.amount}`);
      const hold = await context.trx.selectFrom('fx_exchange_holds').selectAll().where('reference', '=', reference).executeTakeFirst();
      if (hold !== undefined) {
        if (hold.state === 'RELEASED' && hold.target_amount === '0') throw new ConnectorError('TransferStateConflict', 'the conversion was released before it was reserved');
        if (hold.target_currency !== target.currency || hold.target_amount !== minor.toString()) throw new ConnectorError('ModifiedRequest', 'another reservation under this reference');
        if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the conversion was released');
        return;
      }
      // The hold first, the shared liquidity row last: its lock is held for one update and the commit.
      // A refusal below throws, and the transaction takes the hold back with it.
      await context.trx
        .insertInto('fx_exchange_holds')
        .values({ reference, state: 'HELD', target_currency: target.currency, target_amount: minor.toString(), source_currency: null, source_amount: null, created_at: context.now, updated_at: context.now })
        .execute();
      const liquidity = (await lockAccounts(context, [liquidityAccountId(target.currency)]))[0];
      if (liquidity === undefined) throw new ConnectorError('FxPairNotSupported', `no liquidity in ${target.currency}`);
      if (liquidity.balance - liquidity.held < minor) throw new ConnectorError('FxInsufficientLiquidity', `${target.currency} liquidity cannot cover ${target.amount}`);
      liquidity.held += minor;
      await saveAccounts(context, [liquidity]);
    });
  }

  commit(reference: string, source: Money, target: Money): Promise<void> {
    return this.#write(async (context) => {
      await lockReference(context, reference);
      const hold = await context.trx.selectFrom('fx_exchange_holds').selectAll().where('reference', '=', reference).executeTakeFirst();
      if (hold === undefined) throw new ConnectorError('FxConversionNotFound', 'nothing held under this reference');
      const targetMinor = toMinorUnits(target.amount, target.currency);
      const sourceMinor = toMinorUnits(source.amount, source.currency);
      if (hold.target_currency !== target.currency || hold.target_amount !== targetMinor.toString()) throw new ConnectorError('ModifiedRequest', 'the commit differs from the reservation');
      if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the conversion was released');
      if (hold.state === 'COMMITTED') {
        if (hold.source_currency !== source.currency || hold.source_amount !== sourceMinor.toString()) throw new ConnectorError('ModifiedRequest', 'committed with another source amount');
        return;
      }
      // Everything that does not touch the shared account rows first (the postings, the hold), then
      // the accounts locked, changed in one statement and committed: their locks last two round trips.
      const legs: Array<[string, string, bigint]> = [
        [clearingAccountId(source.currency), source.currency, -sourceMinor],
        [liquidityAccountId(source.currency), source.currency, sourceMinor],
        [liquidityAccountId(target.currency), target.currency, -targetMinor],
        [clearingAccountId(target.currency), target.currency, targetMinor],
      ];
      await context.trx
        .insertInto('fx_exchange_postings')
        .values(legs.map(([accountId, currency, amount], leg) => ({ movement_id: `commit:${reference}`, leg, kind: 'TRANSFER', account_id: accountId, currency, amount: amount.toString(), created_at: context.now })))
        .execute();
      await context.trx
        .updateTable('fx_exchange_holds')
        .set({ state: 'COMMITTED', source_currency: source.currency, source_amount: sourceMinor.toString(), updated_at: context.now })
        .where('reference', '=', reference)
        .execute();
      // Each currency's liquidity, then its clearing: the first missing account is the one named.
      const ids = [liquidityAccountId(source.currency), clearingAccountId(source.currency), liquidityAccountId(target.currency), clearingAccountId(target.currency)];
      const accounts = new Map((await lockAccounts(context, ids)).map((account) => [account.accountId, account]));
      const get = (id: string): Account => {
        const account = accounts.get(id);
        if (account === undefined) throw new ConnectorError('FxPairNotSupported', `no account ${id}`);
        return account;
      };
      const changed = ids.map(get);
      // The balances move by the postings' legs; the target's hold is paid out.
      for (const [accountId, , amount] of legs) get(accountId).balance += amount;
      get(liquidityAccountId(target.currency)).held -= targetMinor;
      await saveAccounts(context, changed);
    });
  }

  /** Releases a hold; with none, records the reference released (a late reserve is then refused). */
  release(reference: string): Promise<void> {
    return this.#write(async (context) => {
      await lockReference(context, reference);
      const hold = await context.trx.selectFrom('fx_exchange_holds').selectAll().where('reference', '=', reference).executeTakeFirst();
      if (hold === undefined) {
        await context.trx
          .insertInto('fx_exchange_holds')
          .values({ reference, state: 'RELEASED', target_currency: 'XXX', target_amount: '0', source_currency: null, source_amount: null, created_at: context.now, updated_at: context.now })
          .execute();
        return;
      }
      if (hold.state === 'RELEASED') return;
      if (hold.state === 'COMMITTED') throw new ConnectorError('TransferStateConflict', 'the conversion was committed');
      await context.trx.updateTable('fx_exchange_holds').set({ state: 'RELEASED', updated_at: context.now }).where('reference', '=', reference).execute();
      const liquidity = (await lockAccounts(context, [liquidityAccountId(hold.target_currency)]))[0];
      assert(liquidity !== undefined, `fx: no liquidity account for ${hold.target_currency}`);
      liquidity.held -= BigInt(hold.target_amount);
      await saveAccounts(context, [liquidity]);
    });
  }

  async status(reference: string): Promise<ConversionHoldStatus> {
    const hold = await this.#database.reader<ExchangeSchema>().selectFrom('fx_exchange_holds').select('state').where('reference', '=', reference).executeTakeFirst();
    switch (hold?.state) {
      case undefined:
        return 'not-found';
      case 'HELD':
        return 'held';
      case 'COMMITTED':
        return 'committed';
      default:
        return 'released';
    }
  }

  async balances(): Promise<ExchangeBalance[]> {
    const rows = await this.#database.reader<ExchangeSchema>().selectFrom('fx_exchange_accounts').selectAll().orderBy('account_id').execute();
    return rows.map((row) => ({ accountId: row.account_id, currency: row.currency, balance: signed(BigInt(row.balance), row.currency), held: formatMinorUnits(BigInt(row.held), row.currency) }));
  }

  /**
   * Audits the books: each balance equals its postings, each movement sums to zero per currency,
   * the balances of a currency sum to what was funded, and held equals the HELD holds.
   */
  async conservationCheck(): Promise<{ ok: boolean; problems: string[] }> {
    return this.#write(async (context) => {
      const problems: string[] = [];
      const accounts = await context.trx.selectFrom('fx_exchange_accounts').selectAll().execute();
      const postings = await context.trx.selectFrom('fx_exchange_postings').selectAll().execute();
      const holds = await context.trx.selectFrom('fx_exchange_holds').selectAll().where('state', '=', 'HELD').execute();
      const byAccount = new Map<string, bigint>();
      const byMovement = new Map<string, bigint>();
      const funded = new Map<string, bigint>();
      for (const posting of postings) {
        const amount = BigInt(posting.amount);
        byAccount.set(posting.account_id, (byAccount.get(posting.account_id) ?? 0n) + amount);
        if (posting.kind === 'FUNDING') funded.set(posting.currency, (funded.get(posting.currency) ?? 0n) + amount);
        else byMovement.set(`${posting.movement_id} ${posting.currency}`, (byMovement.get(`${posting.movement_id} ${posting.currency}`) ?? 0n) + amount);
      }
      const totals = new Map<string, bigint>();
      const heldBy = new Map<string, bigint>();
      for (const hold of holds) heldBy.set(liquidityAccountId(hold.target_currency), (heldBy.get(liquidityAccountId(hold.target_currency)) ?? 0n) + BigInt(hold.target_amount));
      for (const account of accounts) {
        const balance = BigInt(account.balance);
        totals.set(account.currency, (totals.get(account.currency) ?? 0n) + balance);
        if ((byAccount.get(account.account_id) ?? 0n) !== balance) problems.push(`${account.account_id}: balance ${balance} but postings ${byAccount.get(account.account_id) ?? 0n}`);
        if ((heldBy.get(account.account_id) ?? 0n) !== BigInt(account.held)) problems.push(`${account.account_id}: held ${account.held} but holds ${heldBy.get(account.account_id) ?? 0n}`);
      }
      for (const [movement, sum] of byMovement) if (sum !== 0n) problems.push(`movement ${movement} sums to ${sum}`);
      for (const [currency, total] of totals) if (total !== (funded.get(currency) ?? 0n)) problems.push(`${currency}: total ${total} but funded ${funded.get(currency) ?? 0n}`);
      return { ok: problems.length === 0, problems };
    });
  }

  #write<T>(work: (context: Context) => Promise<T>): Promise<T> {
    return this.#database.transaction<ExchangeSchema, T>((trx) => work({ trx, lockRows: this.#database.dialect === 'postgres', now: this.#clock().toISOString() }));
  }
}

function signed(minor: bigint, currency: string): string {
  return minor < 0n ? `-${formatMinorUnits(-minor, currency)}` : formatMinorUnits(minor, currency);
}

async function lockReference(context: Context, reference: string): Promise<void> {
  if (context.lockRows) await sql`select pg_advisory_xact_lock(${LOCK_SPACE}::integer, hashtext(${reference}))`.execute(context.trx);
}

async function lockAccounts(context: Context, ids: readonly string[]): Promise<Account[]> {
  const sorted = [...new Set(ids)].sort();
  let query = context.trx.selectFrom('fx_exchange_accounts').selectAll().where('account_id', 'in', sorted).orderBy('account_id');
  if (context.lockRows) query = query.forUpdate();
  const rows = await query.execute();
  const found = new Map(rows.map((row) => [row.account_id, { accountId: row.account_id, currency: row.currency, balance: BigInt(row.balance), held: BigInt(row.held) }]));
  return ids.map((id) => found.get(id)).filter((account): account is Account => account !== undefined);
}

/** Writes the accounts' figures in one statement, after checking each one's invariants. */
async function saveAccounts(context: Context, accounts: readonly Account[]): Promise<void> {
  const distinct = [...new Set(accounts)];
  for (const account of distinct) {
    assert(account.held >= 0n, `fx: ${account.accountId} would hold a negative amount`);
    if (account.accountId.startsWith('liquidity-')) assert(account.balance >= account.held, `fx: ${account.accountId} would hold more than its balance`);
  }
  const byAccount = (figure: (account: Account) => bigint) =>
    sql<string>`case account_id ${sql.join(
      distinct.map((account) => sql`when ${account.accountId} then ${figure(account).toString()}`),
      sql` `,
    )} end`;
  await context.trx
    .updateTable('fx_exchange_accounts')
    .set({ balance: byAccount((account) => account.balance), held: byAccount((account) => account.held), updated_at: context.now })
    .where(
      'account_id',
      'in',
      distinct.map((account) => account.accountId),
    )
    .execute();
}
