import type { Migration } from '../../../adapters/store/sql-database.js';
import { evenParts } from '../../../shared/shards.js';

/** Shards per account when the books were sharded (fx-exchange-002); the ledger's EXCHANGE_SHARDS. */
const SHARDS = 8;

/** The sandbox exchange's books: applied with the FX store's migrations, same database. */
export const sandboxExchangeMigrations: readonly Migration[] = [
  {
    id: 'fx-exchange-001-ledger',
    async up(db) {
      await db.schema
        .createTable('fx_exchange_accounts')
        .addColumn('account_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('balance', 'varchar(64)', (c) => c.notNull())
        .addColumn('held', 'varchar(64)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('fx_exchange_holds')
        .addColumn('reference', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('target_currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('target_amount', 'varchar(64)', (c) => c.notNull())
        .addColumn('source_currency', 'varchar(3)')
        .addColumn('source_amount', 'varchar(64)')
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('fx_exchange_postings')
        .addColumn('movement_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('leg', 'integer', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('account_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('amount', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('fx_exchange_postings_pk', ['movement_id', 'leg'])
        .execute();
    },
  },
  {
    id: 'fx-exchange-002-shards',
    async up(db) {
      // Each account's figures move into shards (exchange-ledger.ts), so that conversions do not
      // all change one row per currency. Holds already open stay on shard 0, which takes the
      // account's held amount; a liquidity account's available amount is spread evenly, the
      // remainder on shard 0; a clearing account's balance (which may be below zero) stays whole
      // on shard 0. The accounts keep only what never changes. Amounts are whole minor units.
      await db.schema
        .createTable('fx_exchange_shards')
        .addColumn('account_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('balance', 'varchar(64)', (c) => c.notNull())
        .addColumn('held', 'varchar(64)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('fx_exchange_shards_pk', ['account_id', 'shard'])
        .execute();
      await db.schema.alterTable('fx_exchange_holds').addColumn('shard', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      const accounts: Array<{ account_id: string; kind: string; balance: string; held: string }> = await db
        .selectFrom('fx_exchange_accounts')
        .select(['account_id', 'kind', 'balance', 'held'])
        .execute();
      const now = new Date().toISOString();
      for (const account of accounts) {
        const held = BigInt(account.held);
        const available = BigInt(account.balance) - held;
        const parts = account.kind === 'liquidity' ? evenParts(available, SHARDS) : Array.from({ length: SHARDS }, (_, shard) => (shard === 0 ? available : 0n));
        await db
          .insertInto('fx_exchange_shards')
          .values(parts.map((part, shard) => ({ account_id: account.account_id, shard, balance: (shard === 0 ? held + part : part).toString(), held: (shard === 0 ? held : 0n).toString(), updated_at: now })))
          .execute();
      }
      await db.schema.alterTable('fx_exchange_accounts').dropColumn('balance').execute();
      await db.schema.alterTable('fx_exchange_accounts').dropColumn('held').execute();
    },
  },
];

export interface ExchangeSchema {
  /** What never changes about an account; its figures are the sums of its shards. */
  fx_exchange_accounts: { account_id: string; kind: string; currency: string; updated_at: string };
  fx_exchange_shards: { account_id: string; shard: number; balance: string; held: string; updated_at: string };
  fx_exchange_holds: {
    reference: string;
    state: string;
    /** The shard of every account the conversion uses (0 for holds older than the shards). */
    shard: number;
    target_currency: string;
    target_amount: string;
    source_currency: string | null;
    source_amount: string | null;
    created_at: string;
    updated_at: string;
  };
  fx_exchange_postings: { movement_id: string; leg: number; kind: string; account_id: string; currency: string; amount: string; created_at: string };
}
