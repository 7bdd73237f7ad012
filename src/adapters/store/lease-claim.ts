import type { Kysely } from 'kysely';
import type { AnySchema, SqlDatabase } from './sql-database.js';

/** The columns every table worked by a recovery worker has. */
interface LeasedRow {
  state: string;
  next_attempt_at: string | null;
  updated_at: string;
  lease_until: string | null;
}

export interface LeaseClaim {
  readonly states: readonly string[];
  readonly now: string;
  /** Rows without a scheduled attempt are due when last updated before this. */
  readonly staleBefore: string;
  readonly leaseUntil: string;
  readonly limit: number;
}

/**
 * Claims up to `limit` due rows of `table` for one worker, inside the caller's transaction:
 * due means the scheduled attempt has come (or, unscheduled, the row has been still since
 * `staleBefore`) and no unexpired lease is held. On PostgreSQL, rows another replica is
 * claiming at the same moment are skipped (FOR UPDATE SKIP LOCKED), so no two workers take the
 * same row; on SQLite the write transaction is already exclusive. Returns the claimed keys,
 * oldest first. Both stores go through this one query so that their leases behave alike.
 */
export async function claimDueKeys(
  trx: Kysely<AnySchema>,
  dialect: 'sqlite' | 'postgres',
  table: string,
  keyColumn: string,
  claim: LeaseClaim,
): Promise<string[]> {
  const db = trx as unknown as Kysely<Record<string, LeasedRow & Record<string, string>>>;
  let candidates = db
    .selectFrom(table)
    .select(keyColumn)
    .where('state', 'in', [...claim.states])
    .where((eb) =>
      eb.or([
        eb('next_attempt_at', '<=', claim.now),
        eb.and([eb('next_attempt_at', 'is', null), eb('updated_at', '<=', claim.staleBefore)]),
      ]),
    )
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', claim.now)]))
    .orderBy('updated_at')
    .limit(claim.limit);
  if (dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  const keys = (await candidates.execute()).map((row) => String(row[keyColumn]));
  if (keys.length === 0) return [];
  await db.updateTable(table).set({ lease_until: claim.leaseUntil }).where(keyColumn, 'in', keys).execute();
  return keys;
}

/**
 * Keeps the row `key` of `table`, while it is still in `state`, from the recovery workers until
 * `until`: its lease is moved there unless it already reaches further (a worker's own claim, say).
 * Not audited (a lease is not a change of the record, as a claim is not). Answers whether it moved.
 */
export async function holdRow(database: SqlDatabase, table: string, keyColumn: string, key: string, state: string, until: string): Promise<boolean> {
  return database.autocommit<Record<string, LeasedRow & Record<string, string>>, boolean>(async (db) => {
    const result = await db
      .updateTable(table)
      .set({ lease_until: until })
      .where(keyColumn, '=', key)
      .where('state', '=', state)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', until)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  });
}

/**
 * Gives back the claims of `keys` a worker made with `leaseUntil` and will not work (a stop ended
 * its pass): without it they would wait out the lease (RECOVERY_LEASE_MS, two minutes or more)
 * before the next start or another replica could take them. A row whose lease has changed since
 * (another holder's) is left as it is.
 */
export async function releaseClaims(database: SqlDatabase, table: string, keyColumn: string, keys: readonly string[], leaseUntil: string): Promise<void> {
  if (keys.length === 0) return;
  await database.autocommit<Record<string, LeasedRow & Record<string, string | null>>, void>(async (db) => {
    await db.updateTable(table).set({ lease_until: null }).where(keyColumn, 'in', [...keys]).where('lease_until', '=', leaseUntil).execute();
  });
}
