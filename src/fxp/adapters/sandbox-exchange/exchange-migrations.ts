import type { Migration } from '../../../adapters/store/sql-database.js';

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
];

export interface ExchangeSchema {
  fx_exchange_accounts: { account_id: string; kind: string; currency: string; balance: string; held: string; updated_at: string };
  fx_exchange_holds: {
    reference: string;
    state: string;
    target_currency: string;
    target_amount: string;
    source_currency: string | null;
    source_amount: string | null;
    created_at: string;
    updated_at: string;
  };
  fx_exchange_postings: { movement_id: string; leg: number; kind: string; account_id: string; currency: string; amount: string; created_at: string };
}
