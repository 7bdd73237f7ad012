import { afterEach, describe, expect, it } from 'vitest';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { customerWith, startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * The payee lifecycle's database work on PostgreSQL, step by step, from the driver wrapper's own
 * counters: statements (BEGIN and COMMIT included), network round trips, and commits that reached
 * the disk. One lifecycle at a time, no statement waits for another, so each is committed alone:
 * one round trip each. Under load the writes that arrive together share a commit group (one round
 * trip and one commit for the group: src/adapters/store/postgres-statement-groups.test.ts). The benchmark reports the
 * same figures per lifecycle; this pins where they go, so that a change that adds a round trip
 * fails here.
 */

let h: Harness | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await h?.close();
  await database?.drop();
  h = undefined;
  database = undefined;
});

describe('round trips of the payee lifecycle on PostgreSQL', () => {
  it('quote 2, transfer 5, COMPLETED 3: each write one statement committed on its own', async () => {
    database = await createTestDatabase();
    h = await startHarness({ env: { DATABASE_URL: database.url } });
    const harness = h;
    const step = async (method: 'POST' | 'PUT', path: string, body: unknown) => {
      const before = harness.app.database.work();
      const answer = await harness.call(method, path, body);
      const after = harness.app.database.work();
      return [answer.status, after.statements - before.statements, after.roundTrips - before.roundTrips, after.commits - before.commits];
    };
    const payee = customerWith((customer) => customer.status === 'active');
    // The first transfer of a process also reads the float's id once; the steady state follows.
    const firstQuote = quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' });
    const first = transferRequest(firstQuote, (await harness.call('POST', '/quoterequests', firstQuote)).body as Record<string, unknown>);
    expect((await harness.call('POST', '/transfers', first)).status).toBe(200);
    expect((await harness.call('PUT', `/transfers/${String(first['transferId'])}`, notification('COMPLETED'))).status).toBe(200);

    const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' });
    // The payee looked up, the quote inserted.
    const quoted = await harness.call('POST', '/quoterequests', quoteBody);
    expect(quoted.status).toBe(200);
    expect(await step('POST', '/quoterequests', quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' }))).toEqual([200, 2, 2, 1]);
    const transfer = transferRequest(quoteBody, quoted.body as Record<string, unknown>);
    // The quote read, the payee looked up again, the audited insert, the sandbox's reservation
    // in one statement, the audited RESERVED.
    expect(await step('POST', '/transfers', transfer)).toEqual([200, 5, 5, 3]);
    // The audited COMMITTING, the sandbox's commit in one statement, the audited COMMITTED.
    expect(await step('PUT', `/transfers/${String(transfer['transferId'])}`, notification('COMPLETED'))).toEqual([200, 3, 3, 3]);
    // A repeat of the notification: its compare-and-set finds nothing to move, then a read.
    expect(await step('PUT', `/transfers/${String(transfer['transferId'])}`, notification('COMPLETED'))).toEqual([200, 2, 2, 1]);
  });
});
