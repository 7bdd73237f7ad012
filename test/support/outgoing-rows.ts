import { sql } from 'kysely';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import type { SqlDatabase } from '../../src/adapters/store/sql-database.js';

/**
 * Outgoing payments home-NNNN for NNNN in [first, first + count), written through the store in
 * INITIATING, created a second apart from 2026-11-22T00:00:00Z (before the harness's clock), then
 * every payment of the store flagged for attention: a long list for the console, made quickly.
 */
export async function flaggedPayments(database: SqlDatabase, first: number, count: number): Promise<void> {
  const store = new SqlOutgoingStore(database);
  for (let index = first; index < first + count; index += 1) {
    const { created } = await store.insert({
      homeTransactionId: `home-${String(index).padStart(4, '0')}`,
      requestHash: 'h',
      kind: 'SEND_MONEY',
      amountType: 'SEND',
      flow: 'bank',
      payerId: '260971000002',
      payeeIdType: 'MSISDN',
      payeeId: '260971000001',
      sendAmount: '10',
      sendCurrency: 'ZMW',
      receiveCurrency: 'ZMW',
      createdAt: new Date(Date.UTC(2026, 10, 22) + index * 1000).toISOString(),
    });
    if (!created) throw new Error(`payment home-${index} was there already`);
  }
  await sql`update outgoing_payments set needs_attention = 1`.execute(database.reader());
}
