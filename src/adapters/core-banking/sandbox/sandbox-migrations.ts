import type { Migration } from '../../store/sql-database.js';
import { FLOAT_SHARDS } from './ledger-float.js';

/** The sandbox ledger's tables; applied with the connector's own migrations, same database. */
export const sandboxMigrations: readonly Migration[] = [
  {
    id: 'sandbox-001-ledger',
    async up(db) {
      await db.schema
        .createTable('sandbox_accounts')
        .addColumn('account_id', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('kind', 'varchar(32)', (c) => c.notNull())
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('balance', 'varchar(64)', (c) => c.notNull())
        .addColumn('held', 'varchar(64)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sandbox_accounts_kind').on('sandbox_accounts').columns(['kind', 'currency']).execute();
      await db.schema
        .createTable('sandbox_customers')
        .addColumn('account_id', 'varchar(128)', (c) => c.primaryKey().references('sandbox_accounts.account_id'))
        .addColumn('id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('id_sub_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('first_name', 'varchar(128)', (c) => c.notNull())
        .addColumn('middle_name', 'varchar(128)')
        .addColumn('last_name', 'varchar(128)', (c) => c.notNull())
        .addColumn('display_name', 'varchar(128)')
        .addColumn('date_of_birth', 'varchar(10)')
        .addColumn('postal_address', 'text')
        .addColumn('country_of_residence', 'varchar(2)')
        .addColumn('kyc_information', 'text')
        .execute();
      await db.schema
        .createIndex('sandbox_customers_identifier')
        .on('sandbox_customers')
        .columns(['id_type', 'id_value', 'id_sub_value'])
        .unique()
        .execute();
      await db.schema.createIndex('sandbox_customers_id_value').on('sandbox_customers').column('id_value').execute();
      await db.schema
        .createTable('sandbox_holds')
        .addColumn('reference', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('float_account_id', 'varchar(128)')
        .addColumn('payee_account_id', 'varchar(128)')
        .addColumn('currency', 'varchar(3)')
        .addColumn('amount', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sandbox_holds_account').on('sandbox_holds').columns(['float_account_id', 'state']).execute();
      await db.schema
        .createTable('sandbox_debits')
        .addColumn('reference', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('payer_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('account_id', 'varchar(128)')
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('amount', 'varchar(64)', (c) => c.notNull())
        .addColumn('original_reference', 'varchar(128)')
        .addColumn('error_name', 'varchar(64)')
        .addColumn('error_detail', 'varchar(256)')
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sandbox_debits_original').on('sandbox_debits').column('original_reference').execute();
      await db.schema
        .createTable('sandbox_postings')
        .addColumn('movement_id', 'varchar(160)', (c) => c.notNull())
        .addColumn('leg', 'integer', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('account_id', 'varchar(128)', (c) => c.notNull().references('sandbox_accounts.account_id'))
        .addColumn('currency', 'varchar(3)', (c) => c.notNull())
        .addColumn('amount', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('sandbox_postings_pk', ['movement_id', 'leg'])
        .execute();
      await db.schema.createIndex('sandbox_postings_account').on('sandbox_postings').column('account_id').execute();
    },
  },
  {
    id: 'sandbox-002-consent-withdrawals',
    async up(db) {
      // Customers who withdrew their consent to have an identifier registered with the platform.
      await db.schema
        .createTable('sandbox_consent_withdrawals')
        .addColumn('id_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('id_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('id_sub_value', 'varchar(128)', (c) => c.notNull())
        .addColumn('withdrawn_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('sandbox_consent_withdrawals_pk', ['id_type', 'id_value', 'id_sub_value'])
        .execute();
    },
  },
  {
    id: 'sandbox-003-float-shards',
    async up(db) {
      // The float's figures move into shards (ledger-float.ts), so that transfers do not all
      // change one row. Holds already open stay on shard 0, which takes the float's held amount;
      // what was available is spread evenly, the remainder on shard 0. The float's own row then
      // keeps 0 and 0. Books are only ever opened with whole minor units, so BigInt is exact.
      await db.schema
        .createTable('sandbox_float_shards')
        .addColumn('account_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('balance', 'varchar(64)', (c) => c.notNull())
        .addColumn('held', 'varchar(64)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
        .addPrimaryKeyConstraint('sandbox_float_shards_pk', ['account_id', 'shard'])
        .execute();
      await db.schema.alterTable('sandbox_holds').addColumn('float_shard', 'integer').execute();
      await db.updateTable('sandbox_holds').set({ float_shard: 0 }).where('float_account_id', 'is not', null).execute();
      const floats: Array<{ account_id: string; balance: string; held: string }> = await db
        .selectFrom('sandbox_accounts')
        .select(['account_id', 'balance', 'held'])
        .where('kind', '=', 'float')
        .execute();
      const now = new Date().toISOString();
      for (const float of floats) {
        const held = BigInt(float.held);
        const available = BigInt(float.balance) - held;
        const share = available / BigInt(FLOAT_SHARDS);
        const remainder = available - share * BigInt(FLOAT_SHARDS);
        await db
          .insertInto('sandbox_float_shards')
          .values(
            Array.from({ length: FLOAT_SHARDS }, (_, shard) => ({
              account_id: float.account_id,
              shard,
              balance: (shard === 0 ? held + share + remainder : share).toString(),
              held: (shard === 0 ? held : 0n).toString(),
              updated_at: now,
            })),
          )
          .execute();
        await db.updateTable('sandbox_accounts').set({ balance: '0', held: '0', updated_at: now }).where('account_id', '=', float.account_id).execute();
      }
    },
  },
];
