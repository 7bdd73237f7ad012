import { afterEach, describe, expect, it } from 'vitest';
import { SandboxLedger, demoAccounts, sandboxMigrations, seedSandbox } from '../../src/adapters/core-banking/sandbox/index.js';
import { PostgresDatabase } from '../../src/adapters/store/postgres-database.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';

/**
 * Replicas that start together on an empty PostgreSQL database all try to open the sandbox's
 * books. Found by the two-replica test: each found no account, both inserted the float, and the
 * second stopped on the primary key ("duplicate key value violates unique constraint
 * sandbox_accounts_pkey"), so a fresh two-replica deployment lost one replica at start.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

describe('opening the sandbox books from several processes at once (PostgreSQL)', () => {
  it('opens them exactly once; every other opener finds them open', async () => {
    const testDatabase: TestDatabase = await createTestDatabase();
    cleanups.push(() => testDatabase.drop());
    // One pool per simulated replica, as separate processes would have.
    const databases = Array.from({ length: 4 }, () => new PostgresDatabase({ url: testDatabase.url, poolMax: 2 }));
    cleanups.push(async () => {
      await Promise.all(databases.map((database) => database.close()));
    });
    const [first] = databases;
    if (first === undefined) throw new Error('no database');
    await first.migrate(sandboxMigrations);
    const opened = await Promise.all(databases.map((database) => seedSandbox(new SandboxLedger(database), demoAccounts)));
    expect(opened.filter((wasFirst) => wasFirst)).toEqual([true]);
    expect(opened.filter((wasFirst) => !wasFirst)).toHaveLength(3);
    const ledger = new SandboxLedger(first);
    const check = await ledger.conservationCheck();
    expect(check.ok).toBe(true);
    expect(check.currencies).toEqual([{ currency: 'ZMW', totalBalance: '1019715.75', totalFunded: '1019715.75', totalHeld: '0', totalHolds: '0' }]);
  });
});
