import type { Kysely } from 'kysely';

/**
 * The sandbox institution's tables, seen through their own typed Kysely view. Amounts are
 * TEXT holding bigint minor units ("123456", "-500" in postings): they may exceed 64 bits, and
 * TEXT reads back identically on SQLite and PostgreSQL. Timestamps are ISO 8601 UTC strings.
 */

/**
 * `outgoing-settlement` is only read: books opened before the one account model have one (it
 * received customer debits then); customer debits and refunds now both use the float.
 */
export type AccountKind = 'customer' | 'float' | 'outgoing-settlement';

export interface AccountsTable {
  account_id: string;
  kind: string;
  currency: string;
  /** Booked balance in minor units. */
  balance: string;
  /** Part of the balance held for reservations, in minor units. */
  held: string;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface CustomersTable {
  account_id: string;
  id_type: string;
  id_value: string;
  /** '' when the identifier has no sub-value: NULL would escape the unique index on both databases. */
  id_sub_value: string;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  display_name: string | null;
  date_of_birth: string | null;
  /** JSON object with the ISO 20022 PostalAddress field names. */
  postal_address: string | null;
  country_of_residence: string | null;
  kyc_information: string | null;
}

export type HoldState = 'HELD' | 'CAPTURED' | 'RELEASED';

export interface HoldsTable {
  reference: string;
  state: string;
  /** Null only for a release tombstone (a release that found no hold). */
  float_account_id: string | null;
  payee_account_id: string | null;
  currency: string | null;
  amount: string;
  /** The float shard the amount is held on (ledger-float.ts); null for a tombstone. */
  float_shard: number | null;
  created_at: string;
  updated_at: string;
}

/**
 * A float's figures, kept in shards (ledger-float.ts): the float's balance and held amount are
 * the sums over its shards; its own row in sandbox_accounts keeps 0 and 0.
 */
export interface FloatShardsTable {
  account_id: string;
  shard: number;
  balance: string;
  held: string;
  updated_at: string;
}

export type DebitKind = 'collection' | 'refund';
export type DebitState = 'pending' | 'succeeded' | 'failed';

/** Customer debits for outgoing payments (collections) and the refunds that reverse them. */
export interface DebitsTable {
  reference: string;
  kind: string;
  state: string;
  payer_id: string;
  /** Null when the payer could not be found: the refusal is recorded all the same. */
  account_id: string | null;
  currency: string;
  amount: string;
  original_reference: string | null;
  error_name: string | null;
  error_detail: string | null;
  created_at: string;
  updated_at: string;
}

export type PostingKind = 'FUNDING' | 'TRANSFER';

/** The journal: one row per leg; the legs of a TRANSFER movement sum to zero. */
export interface PostingsTable {
  movement_id: string;
  leg: number;
  kind: string;
  account_id: string;
  currency: string;
  /** Signed minor units: negative debits the account, positive credits it. */
  amount: string;
  created_at: string;
}

export interface SandboxSchema {
  sandbox_accounts: AccountsTable;
  sandbox_customers: CustomersTable;
  sandbox_holds: HoldsTable;
  sandbox_float_shards: FloatShardsTable;
  sandbox_debits: DebitsTable;
  sandbox_postings: PostingsTable;
  sandbox_consent_withdrawals: { id_type: string; id_value: string; id_sub_value: string; withdrawn_at: string };
}

export type SandboxDb = Kysely<SandboxSchema>;
