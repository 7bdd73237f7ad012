import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMinorUnits, toMinorUnits } from '../../src/domain/money.js';
import { ManualClock } from '../support/harness.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';

/**
 * Two FX provider replicas on one PostgreSQL database, behind a balancer that sends each of the
 * switch connector's retries to either: every duplicate quote, fxTransfer and notification
 * lands on both at once. Each conversion is held, committed or released exactly once.
 */

let database: TestDatabase;
let replicas: FxpHarness[] = [];
beforeAll(async () => {
  database = await createTestDatabase();
  const clock = new ManualClock();
  // Started together, as a deployment rolls out: migrations and the exchange's books take turns.
  replicas = await Promise.all([1, 2].map(() => startFxpHarness({ clock, env: { DATABASE_URL: database.url } })));
}, 60_000);
afterAll(async () => {
  for (const replica of replicas) await replica.close();
  await database.drop();
});

/** Sends `copies` identical requests at once, alternating over the replicas. */
async function everywhere(copies: number, method: 'POST' | 'PUT', path: string, body: unknown): Promise<Array<{ status: number; body: unknown }>> {
  return Promise.all(Array.from({ length: copies }, (_, index) => (replicas[index % replicas.length] as FxpHarness).call(method, path, body)));
}

describe('FX provider mode, two replicas on PostgreSQL', () => {
  it('30 conversions with every call duplicated across replicas: 20 committed and 10 released, each once', async () => {
    let committedSource = 0n;
    let committedTarget = 0n;
    const problems: string[] = [];
    const conversion = async (index: number): Promise<void> => {
      const amount = String(10 + index);
      const quote = fxQuoteBody({ amountType: index % 2 === 0 ? 'SEND' : 'RECEIVE', source: 'ZMW', target: 'MWK', amount: index % 2 === 0 ? amount : `${amount}00` });
      const quotes = await everywhere(4, 'POST', '/fxQuotes', quote);
      if (new Set(quotes.map((answer) => JSON.stringify(answer))).size !== 1 || quotes[0]?.status !== 200) problems.push(`quote ${index}: ${JSON.stringify(quotes)}`);
      const transfer = fxTransferBody(quotes[0]?.body as Record<string, unknown>);
      const id = String(transfer['commitRequestId']);
      const transfers = await everywhere(4, 'POST', '/fxTransfers', transfer);
      if (!transfers.every((answer) => answer.status === 200 && (answer.body as { conversionState: string }).conversionState === 'RESERVED')) problems.push(`transfer ${index}: ${JSON.stringify(transfers)}`);
      const commit = index % 3 !== 2;
      const notifications = await everywhere(6, 'PUT', `/fxTransfers/${id}`, { conversionState: commit ? 'COMMITTED' : 'ABORTED' });
      if (!notifications.every((answer) => answer.status === 200)) problems.push(`notify ${index}: ${JSON.stringify(notifications)}`);
      if (commit) {
        const terms = (quotes[0]?.body as { conversionTerms: { sourceAmount: { amount: string }; targetAmount: { amount: string } } }).conversionTerms;
        committedSource += toMinorUnits(terms.sourceAmount.amount, 'ZMW');
        committedTarget += toMinorUnits(terms.targetAmount.amount, 'MWK');
      }
    };
    for (let start = 0; start < 30; start += 10) await Promise.all(Array.from({ length: 10 }, (_, offset) => conversion(start + offset)));
    expect(problems).toEqual([]);

    const [first] = replicas;
    if (first === undefined) throw new Error('no replica');
    const states = await first.app.database.reader<{ fx_conversions: { state: string } }>().selectFrom('fx_conversions').select('state').execute();
    const counts: Record<string, number> = {};
    for (const row of states) counts[row.state] = (counts[row.state] ?? 0) + 1;
    expect(counts).toEqual({ COMMITTED: 20, ABORTED: 10 });
    const postings = await first.app.database.reader<{ fx_exchange_postings: { movement_id: string } }>().selectFrom('fx_exchange_postings').select('movement_id').execute();
    expect(postings.filter((row) => row.movement_id.startsWith('commit:')).length).toBe(20 * 4);
    const balances = Object.fromEntries((await first.app.ledger.balances()).map((row) => [row.accountId, `${row.balance}/${row.held}`]));
    expect(balances['liquidity-zmw']).toBe(`${formatMinorUnits(toMinorUnits('1000000', 'ZMW') + committedSource, 'ZMW')}/0`);
    expect(balances['liquidity-mwk']).toBe(`${formatMinorUnits(toMinorUnits('50000000', 'MWK') - committedTarget, 'MWK')}/0`);
    expect(await first.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  }, 120_000);

  it('a conversion costs one statement to quote, eight to reserve and eight to commit, each step one commit at the database', async () => {
    const [first] = replicas;
    if (first === undefined) throw new Error('no replica');
    const { database: db } = first.app;
    const step = async (method: 'POST' | 'PUT', path: string, body: unknown) => {
      const before = db.work();
      const answer = await first.call(method, path, body);
      const after = db.work();
      return { status: answer.status, body: answer.body, statements: after.statements - before.statements, commits: after.commits - before.commits };
    };
    const quoted = await step('POST', '/fxQuotes', fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' }));
    expect([quoted.status, quoted.statements, quoted.commits]).toEqual([200, 1, 1]);
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    // Two reads (the conversion, its quote), the audited insert, the exchange's reservation
    // (BEGIN, hold, liquidity shard, COMMIT) and the audited RESERVED.
    const reserved = await step('POST', '/fxTransfers', transfer);
    expect([reserved.status, reserved.statements, reserved.commits]).toEqual([200, 8, 3]);
    // The audited COMMITTING, the exchange's commit (BEGIN, hold, postings, shards locked and
    // written, COMMIT) and the audited COMMITTED.
    const committed = await step('PUT', `/fxTransfers/${String(transfer['commitRequestId'])}`, { conversionState: 'COMMITTED' });
    expect([committed.status, committed.statements, committed.commits]).toEqual([200, 8, 3]);
    // A repeat of the commit reads the conversion after its compare-and-set finds nothing to move.
    const repeat = await step('PUT', `/fxTransfers/${String(transfer['commitRequestId'])}`, { conversionState: 'COMMITTED' });
    expect([repeat.status, repeat.statements, repeat.commits]).toEqual([200, 2, 1]);
  });
});
