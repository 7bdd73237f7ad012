import { sql, type Kysely } from 'kysely';
import { ConnectorError, assert } from '../../../domain/errors.js';
import { formatMinorUnits, toMinorUnits, type Money } from '../../../domain/money.js';
import type { SqlDatabase } from '../../../adapters/store/sql-database.js';
import { spreadShardRows, tryShardRow } from '../../../adapters/store/shard-rows.js';
import { TemplateFamily, queryTemplate, type Slots } from '../../../adapters/store/query-template.js';
import { evenParts, shardOf, type ShardFigures } from '../../../shared/shards.js';
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
 * Each account's figures are kept in EXCHANGE_SHARDS rows of `fx_exchange_shards` whose sums are
 * its balance and held amount (src/shared/shards.ts), so that conversions under different
 * references change different rows and do not queue behind one row's lock on PostgreSQL. A
 * conversion uses the shard its reference hashes to, in every account it touches, and its hold
 * records that shard. The postings name accounts, never shards, so conservation holds for the
 * sums. A liquidity shard may not hold more than its balance; when the conversion's shard alone
 * cannot cover a reservation, the reservation is rolled back and runs again, that time locking
 * every shard of the target liquidity in shard order and spreading what it has available again
 * (spreadFor), so a reservation is refused only when the liquidity as a whole is short.
 *
 * Each operation is one transaction, idempotent on its reference. On PostgreSQL a reference's
 * operations take turns on its hold: a reservation inserts it (the primary key decides between
 * two), a commit or a release changes it from HELD (the row lock decides), and whoever comes
 * second reads what the first left. Shard rows are locked last, always in the order (account id,
 * shard): a reservation or release changes one row with one conditional UPDATE, a commit locks
 * its four rows of one shard sorted by account id, a spread every shard of one account in shard
 * order. No operation touches two references' holds, so no two operations deadlock.
 */

type Trx = Kysely<ExchangeSchema>;
interface Context {
  readonly trx: Trx;
  readonly lockRows: boolean;
  readonly now: string;
  /** The second run of a reservation whose shard was short: spread the liquidity. */
  readonly spread: boolean;
}

/** Shards of each account, numbered 0 to EXCHANGE_SHARDS - 1, created when the books are opened. */
export const EXCHANGE_SHARDS = 8;

export const liquidityAccountId = (currency: string): string => `liquidity-${currency.toLowerCase()}`;
export const clearingAccountId = (currency: string): string => `clearing-${currency.toLowerCase()}`;

/** The shard a conversion's operations use, in every account. */
export const exchangeShardOf = (reference: string): number => shardOf(reference, EXCHANGE_SHARDS);

/** "fxhd" in ASCII: the advisory lock taken while the books are opened. */
const LOCK_SPACE = 0x66786864;

/** Thrown by a reservation's first run when its shard of the liquidity cannot cover it. */
class LiquidityShardShort extends Error {
  constructor(accountId: string, shard: number) {
    super(`fx: ${accountId} shard ${shard} is short; the reservation runs again and spreads the liquidity`);
  }
}

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

  /**
   * Opens the accounts of each currency of the config that the books do not have yet, its
   * liquidity spread over its shards and recorded as a FUNDING posting; the currencies opened, in
   * the config's order (none when the books have them all). A currency the books have keeps its
   * balances, whatever the config now says: they are the books, the config only opens them. So a
   * currency added to FX_SANDBOX_FILE after the first start is opened at the next start (its
   * pairs would otherwise be quoted and reserved but never committed). One transaction: on
   * PostgreSQL two replicas starting together take turns on the advisory lock, and the second
   * finds the first's accounts.
   */
  open(config: SandboxExchangeConfig): Promise<string[]> {
    return this.#write(async (context) => {
      if (context.lockRows) await sql`select pg_advisory_xact_lock(${LOCK_SPACE}::integer, 0)`.execute(context.trx);
      const existing = new Set((await context.trx.selectFrom('fx_exchange_accounts').select('account_id').execute()).map((row) => row.account_id));
      const opened: string[] = [];
      for (const [currency, amount] of Object.entries(config.liquidity)) {
        // A currency's two accounts are opened together, so the books have both or neither.
        const has = existing.has(liquidityAccountId(currency));
        assert(has === existing.has(clearingAccountId(currency)), `fx: the books have one of ${currency}'s two accounts`);
        if (has) continue;
        const minor = toMinorUnits(amount, currency);
        for (const [accountId, kind, balance] of [[liquidityAccountId(currency), 'liquidity', minor], [clearingAccountId(currency), 'clearing', 0n]] as const) {
          await context.trx.insertInto('fx_exchange_accounts').values({ account_id: accountId, kind, currency, updated_at: context.now }).execute();
          await context.trx
            .insertInto('fx_exchange_shards')
            .values(evenParts(balance, EXCHANGE_SHARDS).map((part, shard) => ({ account_id: accountId, shard, balance: part.toString(), held: '0', updated_at: context.now })))
            .execute();
        }
        if (minor > 0n) {
          await context.trx
            .insertInto('fx_exchange_postings')
            .values({ movement_id: `open:${currency}`, leg: 0, kind: 'FUNDING', account_id: liquidityAccountId(currency), currency, amount: minor.toString(), created_at: context.now })
            .execute();
        }
        opened.push(currency);
      }
      return opened;
    });
  }

  reserve(reference: string, target: Money): Promise<void> {
    return this.#write(async (context) => {
      const minor = toMinorUnits(target.amount, target.currency);
      assert(minor > 0n, `fx reserve ${reference} of ${target.amount}`);
      // The hold first: its primary key decides between two operations on one reference (a
      // second insert waits for the first's transaction and then finds it). The liquidity shard
      // last: its lock is held for one update and the commit. A refusal below throws, and the
      // transaction takes the hold back with it.
      const shard = exchangeShardOf(reference);
      const inserted = await INSERT_HELD.first(context.trx, { reference, shard, currency: target.currency, amount: minor.toString(), now: context.now });
      if (inserted === undefined) {
        const hold = await readHold(context, reference);
        assert(hold !== undefined, `fx: the hold ${reference} conflicted but cannot be read`);
        if (hold.state === 'RELEASED' && hold.target_amount === '0') throw new ConnectorError('TransferStateConflict', 'the conversion was released before it was reserved');
        if (hold.target_currency !== target.currency || hold.target_amount !== minor.toString()) throw new ConnectorError('ModifiedRequest', 'another reservation under this reference');
        if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the conversion was released');
        return;
      }
      const liquidity = liquidityAccountId(target.currency);
      const delta = { balance: 0n, held: minor };
      if (!context.spread) {
        if (await tryShardRow(context, 'fx_exchange_shards', liquidity, shard, delta)) return;
        throw new LiquidityShardShort(liquidity, shard);
      }
      const taken = await spreadShardRows(context, 'fx_exchange_shards', liquidity, shard, delta);
      if (taken === undefined) throw new ConnectorError('FxPairNotSupported', `no liquidity in ${target.currency}`);
      if (!taken) throw new ConnectorError('FxInsufficientLiquidity', `${target.currency} liquidity cannot cover ${target.amount}`);
    });
  }

  commit(reference: string, source: Money, target: Money): Promise<void> {
    return this.#write(async (context) => {
      const targetMinor = toMinorUnits(target.amount, target.currency);
      const sourceMinor = toMinorUnits(source.amount, source.currency);
      // The hold moves to COMMITTED only from HELD with the reserved target: the update takes the
      // hold's row lock, so a commit and a release of one reference take turns. Anything else
      // is answered from the hold as it stands.
      const held = await COMMIT_HELD.first(context.trx, {
        reference,
        sourceCurrency: source.currency,
        sourceAmount: sourceMinor.toString(),
        targetCurrency: target.currency,
        targetAmount: targetMinor.toString(),
        now: context.now,
      });
      if (held === undefined) {
        const hold = await readHold(context, reference);
        if (hold === undefined) throw new ConnectorError('FxConversionNotFound', 'nothing held under this reference');
        if (hold.target_currency !== target.currency || hold.target_amount !== targetMinor.toString()) throw new ConnectorError('ModifiedRequest', 'the commit differs from the reservation');
        if (hold.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', 'the conversion was released');
        assert(hold.state === 'COMMITTED', `fx: the hold ${reference} is ${hold.state} but could not be committed`);
        if (hold.source_currency !== source.currency || hold.source_amount !== sourceMinor.toString()) throw new ConnectorError('ModifiedRequest', 'committed with another source amount');
        return;
      }
      // The postings, then the hold's shard of each account locked, changed in one statement and
      // committed.
      const legs: Array<[string, string, bigint]> = [
        [clearingAccountId(source.currency), source.currency, -sourceMinor],
        [liquidityAccountId(source.currency), source.currency, sourceMinor],
        [liquidityAccountId(target.currency), target.currency, -targetMinor],
        [clearingAccountId(target.currency), target.currency, targetMinor],
      ];
      const postings: Record<string, string | number> = { movementId: `commit:${reference}`, now: context.now };
      legs.forEach(([accountId, currency, amount], leg) => {
        postings[`leg${leg}`] = leg;
        postings[`account${leg}`] = accountId;
        postings[`currency${leg}`] = currency;
        postings[`amount${leg}`] = amount.toString();
      });
      await INSERT_COMMIT_POSTINGS.execute(context.trx, postings);
      // Each currency's liquidity, then its clearing: the first missing account is the one named.
      const ids = [liquidityAccountId(source.currency), clearingAccountId(source.currency), liquidityAccountId(target.currency), clearingAccountId(target.currency)];
      const rows = await lockShardOf(context, ids, held.shard);
      const missing = ids.find((id) => !rows.has(id));
      if (missing !== undefined) throw new ConnectorError('FxPairNotSupported', `no account ${missing}`);
      const changed = new Map<string, { balance: bigint; held: bigint }>();
      const figures = (id: string) => {
        const current = changed.get(id) ?? { ...(rows.get(id) as ShardFigures) };
        changed.set(id, current);
        return current;
      };
      // The balances move by the postings' legs; the target's hold is paid out.
      for (const [accountId, , amount] of legs) figures(accountId).balance += amount;
      figures(liquidityAccountId(target.currency)).held -= targetMinor;
      await saveShards(context, held.shard, changed);
    });
  }

  /** Releases a hold; with none, records the reference released (a late reserve is then refused). */
  release(reference: string): Promise<void> {
    return this.#write(async (context) => {
      // A reservation may be committing its hold while this runs: then the placeholder's insert
      // waits for it, finds the hold, and the release is tried once more.
      for (let attempt = 1; attempt <= 2; attempt += 1) {
        const released = await context.trx
          .updateTable('fx_exchange_holds')
          .set({ state: 'RELEASED', updated_at: context.now })
          .where('reference', '=', reference)
          .where('state', '=', 'HELD')
          .returning(['shard', 'target_currency', 'target_amount'])
          .executeTakeFirst();
        if (released !== undefined) {
          const liquidity = liquidityAccountId(released.target_currency);
          const given = await tryShardRow(context, 'fx_exchange_shards', liquidity, released.shard, { balance: 0n, held: -BigInt(released.target_amount) });
          assert(given, `fx: ${liquidity} shard ${released.shard} does not hold ${released.target_amount} for ${reference}`);
          return;
        }
        const recorded = await context.trx
          .insertInto('fx_exchange_holds')
          .values({ reference, state: 'RELEASED', shard: exchangeShardOf(reference), target_currency: 'XXX', target_amount: '0', source_currency: null, source_amount: null, created_at: context.now, updated_at: context.now })
          .onConflict((oc) => oc.column('reference').doNothing())
          .returning('reference')
          .executeTakeFirst();
        if (recorded !== undefined) return;
        const hold = await readHold(context, reference);
        assert(hold !== undefined, `fx: the hold ${reference} conflicted but cannot be read`);
        if (hold.state === 'RELEASED') return;
        if (hold.state === 'COMMITTED') throw new ConnectorError('TransferStateConflict', 'the conversion was committed');
      }
      throw new Error(`fx: the hold ${reference} stayed HELD through two releases`);
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
    const reader = this.#database.reader<ExchangeSchema>();
    const accounts = await reader.selectFrom('fx_exchange_accounts').select(['account_id', 'currency']).orderBy('account_id').execute();
    const sums = sumShards(await reader.selectFrom('fx_exchange_shards').selectAll().execute());
    return accounts.map((account) => {
      const sum = sums.get(account.account_id) ?? { balance: 0n, held: 0n };
      return { accountId: account.account_id, currency: account.currency, balance: signed(sum.balance, account.currency), held: formatMinorUnits(sum.held, account.currency) };
    });
  }

  /**
   * Audits the books: each account's balance (the sum of its shards) equals its postings, each
   * movement sums to zero per currency, the balances of a currency sum to what was funded, each
   * shard holds exactly the HELD holds recorded on it, and no liquidity shard holds more than its
   * balance.
   */
  async conservationCheck(): Promise<{ ok: boolean; problems: string[] }> {
    return this.#write(async (context) => {
      // Its four reads from one snapshot: under READ COMMITTED each would see the commits made
      // before it, and a conversion settled between two of them would look like broken books.
      if (context.lockRows) await sql`set transaction isolation level repeatable read`.execute(context.trx);
      const problems: string[] = [];
      const accounts = await context.trx.selectFrom('fx_exchange_accounts').selectAll().orderBy('account_id').execute();
      const shards = await context.trx.selectFrom('fx_exchange_shards').selectAll().orderBy('account_id').orderBy('shard').execute();
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
      const heldOn = new Map<string, bigint>();
      for (const hold of holds) {
        const key = `${liquidityAccountId(hold.target_currency)} ${hold.shard}`;
        heldOn.set(key, (heldOn.get(key) ?? 0n) + BigInt(hold.target_amount));
      }
      const kinds = new Map(accounts.map((account) => [account.account_id, account.kind]));
      for (const shard of shards) {
        const kind = kinds.get(shard.account_id);
        const balance = BigInt(shard.balance);
        const held = BigInt(shard.held);
        const key = `${shard.account_id} ${shard.shard}`;
        if (kind === undefined) problems.push(`shard ${key} belongs to no account`);
        if ((heldOn.get(key) ?? 0n) !== held) problems.push(`${shard.account_id} shard ${shard.shard}: held ${held} but holds ${heldOn.get(key) ?? 0n}`);
        heldOn.delete(key);
        if (kind === 'liquidity' && balance < held) problems.push(`${shard.account_id} shard ${shard.shard}: holds ${held} of a balance of ${balance}`);
      }
      for (const [key, held] of heldOn) problems.push(`holds of ${held} on ${key}, which is no shard`);
      const sums = sumShards(shards);
      const totals = new Map<string, bigint>();
      for (const account of accounts) {
        const balance = sums.get(account.account_id)?.balance ?? 0n;
        totals.set(account.currency, (totals.get(account.currency) ?? 0n) + balance);
        if ((byAccount.get(account.account_id) ?? 0n) !== balance) problems.push(`${account.account_id}: balance ${balance} but postings ${byAccount.get(account.account_id) ?? 0n}`);
      }
      for (const [movement, sum] of byMovement) if (sum !== 0n) problems.push(`movement ${movement} sums to ${sum}`);
      for (const [currency, total] of totals) if (total !== (funded.get(currency) ?? 0n)) problems.push(`${currency}: total ${total} but funded ${funded.get(currency) ?? 0n}`);
      return { ok: problems.length === 0, problems };
    });
  }

  /**
   * Runs an operation as one transaction. When a reservation finds its shard short
   * (LiquidityShardShort), the transaction is rolled back and the reservation runs once more,
   * spreading the liquidity: it is idempotent on its reference and nothing of the first run stayed.
   */
  async #write<T>(work: (context: Context) => Promise<T>): Promise<T> {
    const run = (spread: boolean) =>
      this.#database.transaction<ExchangeSchema, T>((trx) => work({ trx, lockRows: this.#database.dialect === 'postgres', now: this.#clock().toISOString(), spread }));
    try {
      return await run(false);
    } catch (error) {
      if (!(error instanceof LiquidityShardShort)) throw error;
      return run(true);
    }
  }
}

function signed(minor: bigint, currency: string): string {
  return minor < 0n ? `-${formatMinorUnits(-minor, currency)}` : formatMinorUnits(minor, currency);
}

function sumShards(rows: ReadonlyArray<{ account_id: string; balance: string; held: string }>): Map<string, { balance: bigint; held: bigint }> {
  const sums = new Map<string, { balance: bigint; held: bigint }>();
  for (const row of rows) {
    const sum = sums.get(row.account_id) ?? { balance: 0n, held: 0n };
    sum.balance += BigInt(row.balance);
    sum.held += BigInt(row.held);
    sums.set(row.account_id, sum);
  }
  return sums;
}

function readHold(context: Context, reference: string) {
  return context.trx.selectFrom('fx_exchange_holds').selectAll().where('reference', '=', reference).executeTakeFirst();
}

/** Liquidity shards may not hold more than their balance; no shard holds a negative amount. */
function checkShard(accountId: string, figures: ShardFigures): void {
  assert(figures.held >= 0n, `fx: ${accountId} shard ${figures.shard} would hold a negative amount`);
  if (accountId.startsWith('liquidity-')) assert(figures.balance >= figures.held, `fx: ${accountId} shard ${figures.shard} would hold more than its balance`);
}

/** One shard of each account, locked on PostgreSQL in account id order; keyed by account id. */
async function lockShardOf(context: Context, accountIds: readonly string[], shard: number): Promise<Map<string, ShardFigures>> {
  const ids = [...new Set(accountIds)].sort();
  const values: Record<string, string | number> = { shard };
  ids.forEach((id, index) => {
    values[`id${index}`] = id;
  });
  const shape = { count: ids.length, lock: context.lockRows };
  const rows = await LOCK_SHARD_OF.get(`${shape.count}/${shape.lock ? 'lock' : 'read'}`, shape).rows(context.trx, values);
  return new Map(rows.map((row) => [row.account_id, { shard, balance: BigInt(row.balance), held: BigInt(row.held) }]));
}

/** Writes one shard of several accounts in one statement, after checking each one's invariants. */
async function saveShards(context: Context, shard: number, figures: ReadonlyMap<string, { balance: bigint; held: bigint }>): Promise<void> {
  for (const [accountId, { balance, held }] of figures) checkShard(accountId, { shard, balance, held });
  const values: Record<string, string | number> = { shard, now: context.now };
  [...figures].forEach(([accountId, { balance, held }], index) => {
    values[`id${index}`] = accountId;
    values[`balance${index}`] = balance.toString();
    values[`held${index}`] = held.toString();
  });
  await SAVE_SHARDS.get(String(figures.size), figures.size).execute(context.trx, values);
}

type ExchangeDb = Kysely<ExchangeSchema>;
type Values = Record<string, string | number>;

const INSERT_HELD = queryTemplate('insert fx exchange hold', (db: ExchangeDb, p: Slots<{ reference: string; shard: number; currency: string; amount: string; now: string }>) =>
  db
    .insertInto('fx_exchange_holds')
    .values({
      reference: p.reference,
      state: sql.lit('HELD'),
      shard: p.shard,
      target_currency: p.currency,
      target_amount: p.amount,
      source_currency: sql.lit(null),
      source_amount: sql.lit(null),
      created_at: p.now,
      updated_at: p.now,
    })
    .onConflict((oc) => oc.column('reference').doNothing())
    .returning('reference'),
);

const COMMIT_HELD = queryTemplate(
  'commit fx exchange hold',
  (db: ExchangeDb, p: Slots<{ reference: string; sourceCurrency: string; sourceAmount: string; targetCurrency: string; targetAmount: string; now: string }>) =>
    db
      .updateTable('fx_exchange_holds')
      .set({ state: sql.lit('COMMITTED'), source_currency: p.sourceCurrency, source_amount: p.sourceAmount, updated_at: p.now })
      .where('reference', '=', p.reference)
      .where('state', '=', sql.lit('HELD'))
      .where('target_currency', '=', p.targetCurrency)
      .where('target_amount', '=', p.targetAmount)
      .returning('shard'),
);

/** A commit's four legs. */
const INSERT_COMMIT_POSTINGS = queryTemplate('insert fx exchange commit postings', (db: ExchangeDb, p: Slots<Values>) =>
  db.insertInto('fx_exchange_postings').values(
    Array.from({ length: 4 }, (_, leg) => ({
      movement_id: p['movementId'] as string,
      leg: p[`leg${leg}`] as number,
      kind: sql.lit('TRANSFER'),
      account_id: p[`account${leg}`] as string,
      currency: p[`currency${leg}`] as string,
      amount: p[`amount${leg}`] as string,
      created_at: p['now'] as string,
    })),
  ),
);

const LOCK_SHARD_OF = new TemplateFamily('lock fx exchange shards', (shape: { readonly count: number; readonly lock: boolean }, name) =>
  queryTemplate(name, (db: ExchangeDb, p: Slots<Values>) => {
    const ids = Array.from({ length: shape.count }, (_, index) => p[`id${index}`] as string);
    const query = db
      .selectFrom('fx_exchange_shards')
      .select(['account_id', 'balance', 'held'])
      .where('shard', '=', p['shard'] as number)
      .where('account_id', 'in', ids)
      .orderBy('account_id');
    return shape.lock ? query.forNoKeyUpdate() : query;
  }),
);

/** One shard of `count` accounts written in one statement. */
const SAVE_SHARDS = new TemplateFamily('save fx exchange shards', (count: number, name) =>
  queryTemplate(name, (db: ExchangeDb, p: Slots<Values>) => {
    const indexes = Array.from({ length: count }, (_, index) => index);
    const byAccount = (figure: 'balance' | 'held') =>
      sql<string>`case account_id ${sql.join(
        indexes.map((index) => sql`when ${p[`id${index}`]} then ${p[`${figure}${index}`]}`),
        sql` `,
      )} end`;
    return db
      .updateTable('fx_exchange_shards')
      .set({ balance: byAccount('balance'), held: byAccount('held'), updated_at: p['now'] as string })
      .where('shard', '=', p['shard'] as number)
      .where(
        'account_id',
        'in',
        indexes.map((index) => p[`id${index}`] as string),
      );
  }),
);
