import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { prefill } from '../../bench/prefill.js';
import type { SqlDatabase } from '../../src/adapters/store/sql-database.js';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * The benchmark's --prefill writes completed lifecycles straight into the tables. What it writes
 * must be what the connector would have: the counts by table, the sandbox's books still
 * balanced, the metrics' figures by state (SQLite keeps them by triggers), and a connector that
 * goes on paying on top of it.
 */
let h: Harness | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await h?.close();
  await database?.drop();
  h = undefined;
  database = undefined;
});

const TABLES = ['quotes', 'inbound_transfers', 'audit_events', 'sandbox_holds', 'sandbox_postings'] as const;

async function counts(db: SqlDatabase): Promise<Record<string, number>> {
  const result: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await db.reader<Record<string, Record<string, unknown>>>().selectFrom(table).select((eb) => eb.fn.countAll<string | number>().as('count')).executeTakeFirstOrThrow();
    result[table] = Number(row['count']);
  }
  return result;
}

/** One payee lifecycle through the connector's API, each step's status. */
async function lifecycle(harness: Harness): Promise<number[]> {
  const payee = customerWith((customer) => customer.status === 'active');
  const quote = quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' });
  const quoted = await harness.call('POST', '/quoterequests', quote);
  const transfer = transferRequest(quote, quoted.body as Record<string, unknown>);
  const reserved = await harness.call('POST', '/transfers', transfer);
  const committed = await harness.call('PUT', `/transfers/${String(transfer['transferId'])}`, notification('COMPLETED'));
  return [quoted.status, reserved.status, committed.status];
}

describe.each([
  ['SQLite', async () => startHarness()],
  [
    'PostgreSQL',
    async () => {
      database = await createTestDatabase();
      return startHarness({ env: { DATABASE_URL: database.url } });
    },
  ],
])('the benchmark\'s prefill on %s', (name, start) => {
  it('adds each transfer\'s quote, four audit entries, captured hold and two postings, the books still balanced, the connector still paying', async () => {
    h = await start();
    const harness = h;
    expect(await lifecycle(harness)).toEqual([200, 200, 200]);
    const before = await counts(harness.app.database);
    const url = name === 'SQLite' ? join(harness.dataDir, 'connector.db') : (database as TestDatabase).url;
    const done = await prefill(name === 'SQLite' ? 'sqlite' : 'postgres', url, 25_003, harness.clock.now());
    expect(done.transfers).toBe(25_003);
    expect(await counts(harness.app.database)).toEqual({
      quotes: (before['quotes'] ?? 0) + 25_003,
      inbound_transfers: (before['inbound_transfers'] ?? 0) + 25_003,
      audit_events: (before['audit_events'] ?? 0) + 4 * 25_003,
      sandbox_holds: (before['sandbox_holds'] ?? 0) + 25_003,
      sandbox_postings: (before['sandbox_postings'] ?? 0) + 2 * 25_003,
    });
    expect(await harness.app.sandbox?.conservationCheck()).toMatchObject({ ok: true, problems: [] });
    const metrics = await fetch(`${harness.operationsUrl}/metrics`).then((answer) => answer.text());
    expect(metrics).toContain('connector_incoming_transfers{state="COMMITTED"} 25004\n');
    expect(await lifecycle(harness)).toEqual([200, 200, 200]);
    expect(await harness.app.sandbox?.conservationCheck()).toMatchObject({ ok: true, problems: [] });
  }, 120_000);
});
