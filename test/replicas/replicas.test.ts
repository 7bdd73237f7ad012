import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { SandboxLedger, demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import { shardOf } from '../../src/adapters/core-banking/sandbox/ledger-float.js';
import type { SandboxSchema } from '../../src/adapters/core-banking/sandbox/sandbox-schema.js';
import { formatMinorUnits, toMinorUnits } from '../../src/domain/money.js';
import { seededRandom } from '../support/seeded-random.js';
import { PostgresDatabase } from '../../src/adapters/store/postgres-database.js';
import { startFakeSwitch, type FakeSwitch } from '../support/fake-switch.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { buildConnector, type ConnectorBuild } from '../crash/support/connector-build.js';
import { ConnectorChild, freePort, type LogLine } from '../crash/support/connector-child.js';
import { CRASH_PAYEES } from '../crash/support/crash-run.js';
import { checkInvariants, unfinishedTransfers } from '../crash/support/ledger-invariants.js';
import { SwitchDriver, sleep, type Answer, type FlowRecord, type HubDecision } from '../crash/support/switch-driver.js';
import { notification } from '../support/backend-bodies.js';

/**
 * Two connector processes (replicas) on one PostgreSQL database, as behind a load balancer:
 * the switch's duplicates land on either replica, and the recovery worker runs on both.
 */

const SEED = 20_261_123;

let build: ConnectorBuild | undefined;
let workDir = '';
beforeAll(async () => {
  build = await buildConnector();
  workDir = mkdtempSync(join(tmpdir(), 'cc-replicas-'));
}, 120_000);
afterAll(() => {
  build?.remove();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Deployment {
  readonly database: TestDatabase;
  readonly reader: PostgresDatabase;
  readonly fakeSwitch: FakeSwitch;
  readonly ports: readonly number[];
}

/** A fresh database and fake switch, cleaned up after the test. */
async function deployment(): Promise<Deployment> {
  const database = await createTestDatabase();
  const fakeSwitch = await startFakeSwitch();
  const reader = new PostgresDatabase({ url: database.url, poolMax: 2 });
  cleanups.push(async () => {
    await reader.close();
    await fakeSwitch.close();
    await database.drop();
  });
  return { database, reader, fakeSwitch, ports: [await freePort(), await freePort()] };
}

/** Starts one connector process per port, all at once, on the deployment's database. */
const outgoingUrls = new Map<ConnectorChild, string>();
const CHANNEL_KEY = 'replica-test-channel-key-0123';
const CALLBACK_SECRET = 'replica-test-callback-secret-0123';

async function startReplicas(d: Deployment, env: Record<string, string>, onLog?: (replica: number, line: LogLine) => void): Promise<ConnectorChild[]> {
  const outgoing = [await freePort(), await freePort()];
  const replicas = await Promise.all(
    d.ports.map((port, index) =>
      ConnectorChild.start({
        // Fault injection (CBS_FAULT_*) is test code: only the test entry point has it.
        mainPath: (env['CBS_FAULT_RATE'] === undefined ? build?.mainPath : build?.testMainPath) ?? '',
        cwd: workDir,
        incomingPort: port,
        env: {
          DATABASE_URL: d.database.url,
          DATABASE_POOL_MAX: '5',
          SDK_BASE_URL: d.fakeSwitch.url,
          SDK_TIMEOUT_MS: '2000',
          OUTGOING_PORT: String(outgoing[index]),
          OPERATIONS_PORT: '0',
          OUTGOING_API_KEY: CHANNEL_KEY,
          CALLBACK_SECRET,
          LOG_LEVEL: 'warn',
          ...env,
        },
        ...(onLog === undefined ? {} : { onLog: (line: LogLine) => onLog(index, line) }),
      }),
    ),
  );
  replicas.forEach((replica, index) => outgoingUrls.set(replica, `http://127.0.0.1:${outgoing[index]}`));
  cleanups.push(async () => {
    await Promise.all(replicas.map((replica) => replica.kill()));
  });
  return replicas;
}

function driverFor(d: Deployment, replicas: readonly ConnectorChild[]): SwitchDriver {
  return new SwitchDriver({
    random: seededRandom(SEED),
    fakeSwitch: d.fakeSwitch,
    targets: () => replicas.map((replica) => replica.url),
    payees: CRASH_PAYEES,
    currency: demoAccounts.currency,
    completedShare: 1,
    lostNotificationShare: 0,
    duplicateShare: 0,
    requestTimeoutMs: 10_000,
  });
}

/** Sends `copies` identical requests at once, alternating between the replicas; all answers. */
async function spread(driver: SwitchDriver, replicas: readonly ConnectorChild[], copies: number, method: 'POST' | 'PUT', path: string, body: unknown): Promise<Answer[]> {
  const answers = await Promise.all(
    Array.from({ length: copies }, (_, copy) => driver.send(method, path, body, replicas[copy % replicas.length]?.url)),
  );
  return answers.map((answer) => {
    if (answer === undefined) throw new Error(`${method} ${path}: a replica did not answer`);
    return answer;
  });
}

/** How many distinct answers a set of parallel duplicates got (1 when they all agree). */
function distinct(answers: readonly Answer[]): number {
  return answers.filter((answer, index) => answers.findIndex((other) => isDeepStrictEqual(other, answer)) === index).length;
}

describe('two replicas on one PostgreSQL database', () => {
  it('start together on an empty database: migrations applied once, books opened once', async () => {
    const d = await deployment();
    const replicas = await startReplicas(d, {});
    const applied = await d.reader
      .reader<{ schema_migrations: { id: string } }>()
      .selectFrom('schema_migrations')
      .select('id')
      .orderBy('id')
      .execute();
    // Both replicas migrated the same empty database at once and both are up: the advisory lock
    // made them take turns (without it, the second fails on "relation already exists").
    // Every migration of the connector (connector-migrations.ts, outgoing-migrations.ts,
    // sandbox-migrations.ts, the identifier registry's and its jobs', the audit trail's) is recorded exactly once.
    expect(applied.map((row) => row.id)).toEqual([
      'audit-001-events',
      'audit-002-subject-at',
      'connector-001-inbound',
      'connector-002-audit-columns',
      'connector-003-audit-seq-from-trail',
      'connector-004-created-at',
      'connector-005-attention',
      'connector-006-state-counts',
      'connector-007-state-created',
      'connector-008-quote-held-once',
      'identifiers-001-registry',
      'identifiers-002-jobs',
      'identifiers-003-audit-columns',
      'identifiers-004-audit-seq-from-trail',
      'identifiers-005-state-counts',
      'identifiers-006-registry-job-state',
      'identifiers-007-job-lines-pending',
      'identifiers-008-job-runs-line-attempts',
      'outgoing-001-payments',
      'outgoing-002-audit-columns',
      'outgoing-003-refund-reference',
      'outgoing-004-audit-seq-from-trail',
      'outgoing-005-refund-reference-from-transfer',
      'outgoing-006-created-at',
      'outgoing-007-state-counts',
      'outgoing-008-state-created',
      'outgoing-009-refund-reference-index',
      'sandbox-001-ledger',
      'sandbox-002-consent-withdrawals',
      'sandbox-003-float-shards',
    ]);
    const report = await checkInvariants(d.reader, [], demoAccounts);
    expect(report.problems).toEqual([]);
    expect(report.conservation.ok).toBe(true);
    await Promise.all(replicas.map((replica) => replica.stop()));
  }, 60_000);

  it('each replica reserves on float shards of its own lane; a hold is committed on its shard by either replica', async () => {
    const d = await deployment();
    const lanes = new Map<number, unknown>();
    const replicas = await startReplicas(d, { RECOVERY_INTERVAL_MS: '3600000', LOG_LEVEL: 'info' }, (replica, line) => {
      if (line.msg === 'sandbox institution ready') lanes.set(replica, line['floatShards']);
    });
    // Lanes of two shards, claimed in turn: which replica got which depends on who asked first.
    const claimed = [lanes.get(0), lanes.get(1)] as Array<{ first: number; count: number } | undefined>;
    expect(claimed.map((lane) => lane?.first).sort()).toEqual([0, 2]);
    expect(claimed.map((lane) => lane?.count)).toEqual([2, 2]);
    const driver = driverFor(d, replicas);
    const onShard = new Map<string, number>();
    for (let index = 0; index < 8; index += 1) {
      // Reserved on one replica, committed on the other.
      const [reserving, committing] = index % 2 === 0 ? [replicas[0]!, replicas[1]!] : [replicas[1]!, replicas[0]!];
      const flow = driver.plan();
      flow.quoteAnswer = await driver.send('POST', '/quoterequests', flow.quoteBody, reserving.url);
      expect(flow.quoteAnswer?.status).toBe(200);
      const transfer = driver.prepareTransfer(flow);
      expect((await driver.send('POST', '/transfers', transfer, reserving.url))?.status).toBe(200);
      const hold = await d.reader
        .reader<SandboxSchema>()
        .selectFrom('sandbox_holds')
        .select(['float_shard'])
        .where('reference', '=', flow.transferId)
        .executeTakeFirstOrThrow();
      const lane = claimed[index % 2]!;
      expect(hold.float_shard).toBe(shardOf(flow.transferId, { first: lane.first, size: lane.count }));
      onShard.set(flow.transferId, hold.float_shard ?? -1);
      flow.decision = 'COMPLETED';
      flow.notificationBody = notification('COMPLETED');
      flow.notificationAnswer = await driver.send('PUT', `/transfers/${flow.transferId}`, flow.notificationBody, committing.url);
      expect(flow.notificationAnswer).toEqual({ status: 200, body: {} });
    }
    await Promise.all(replicas.map((replica) => replica.stop()));
    const report = await checkInvariants(d.reader, driver.flows, demoAccounts);
    expect(report.problems).toEqual([]);
    expect(report.states).toEqual({ COMMITTED: 8 });
    expect(report.conservation.ok).toBe(true);
    // Each shard gave exactly what was committed from it: its share of the demo float (1,000,000
    // in eight equal parts) less the captured holds recorded on it.
    const shards = await d.reader.reader<SandboxSchema>().selectFrom('sandbox_float_shards').select(['shard', 'balance', 'held']).orderBy('shard').execute();
    const captured = await d.reader.reader<SandboxSchema>().selectFrom('sandbox_holds').select(['float_shard', 'amount', 'state', 'reference']).execute();
    expect(captured.map((hold) => [hold.reference, hold.state, hold.float_shard]).sort()).toEqual(
      [...onShard].map(([reference, shard]) => [reference, 'CAPTURED', shard]).sort(),
    );
    const taken = new Map<number, bigint>();
    for (const hold of captured) taken.set(hold.float_shard ?? -1, (taken.get(hold.float_shard ?? -1) ?? 0n) + BigInt(hold.amount));
    expect(shards.map((shard) => [shard.shard, shard.balance, shard.held])).toEqual(
      Array.from({ length: 8 }, (_, shard) => [shard, String(12_500_000n - (taken.get(shard) ?? 0n)), '0']),
    );
    expect(report.ledgerCredits).toBe(report.expectedCredits);
  }, 60_000);

  it('parallel duplicates spread over both replicas end with one reservation and one credit or release each', async () => {
    const d = await deployment();
    const replicas = await startReplicas(d, { RECOVERY_INTERVAL_MS: '3600000' });
    const driver = driverFor(d, replicas);
    const disagreements: string[] = [];
    const payment = async (index: number): Promise<void> => {
      const flow = driver.plan();
      const quotes = await spread(driver, replicas, 4, 'POST', '/quoterequests', flow.quoteBody);
      if (distinct(quotes) !== 1 || quotes[0]?.status !== 200) disagreements.push(`quote ${flow.quoteId}: ${JSON.stringify(quotes)}`);
      flow.quoteAnswer = quotes[0];
      const transfer = driver.prepareTransfer(flow);
      const reservations = await spread(driver, replicas, 4, 'POST', '/transfers', transfer);
      if (distinct(reservations) !== 1 || reservations[0]?.status !== 200) disagreements.push(`transfer ${flow.transferId}: ${JSON.stringify(reservations)}`);
      flow.transferAnswer = reservations[0];
      const decision: HubDecision = index % 3 === 2 ? 'ABORTED' : 'COMPLETED';
      flow.decision = decision;
      flow.notificationBody = notification(decision);
      const notifications = await spread(driver, replicas, 6, 'PUT', `/transfers/${flow.transferId}`, flow.notificationBody);
      const wanted: Answer =
        decision === 'COMPLETED' ? { status: 200, body: {} } : { status: 422, body: { statusCode: '5104', message: 'Transfer not completed: switch reported ABORTED' } };
      if (!notifications.every((answer) => isDeepStrictEqual(answer, wanted))) disagreements.push(`notify ${flow.transferId}: ${JSON.stringify(notifications)}`);
      flow.notificationAnswer = notifications[0];
    };
    const payments = 60;
    for (let start = 0; start < payments; start += 12) {
      await Promise.all(Array.from({ length: Math.min(12, payments - start) }, (_, offset) => payment(start + offset)));
    }
    await Promise.all(replicas.map((replica) => replica.stop()));

    expect(disagreements).toEqual([]);
    const report = await checkInvariants(d.reader, driver.flows, demoAccounts);
    expect(report.problems).toEqual([]);
    expect(report.states).toEqual({ COMMITTED: 40, ABORTED: 20 });
    expect(report.ledgerCredits).toBe(report.expectedCredits);
    expect(report.conservation.ok).toBe(true);
    const holds = await d.reader
      .reader<{ sandbox_holds: { reference: string; state: string } }>()
      .selectFrom('sandbox_holds')
      .select(['state'])
      .execute();
    expect(countBy(holds.map((hold) => hold.state))).toEqual({ CAPTURED: 40, RELEASED: 20 });
  }, 120_000);

  it('recovery runs on both replicas after an institution outage, and no item is worked by two', async () => {
    const d = await deployment();
    // Phase 1: every credit fails (an outage of the institution's commit), so each COMPLETED
    // notification leaves its transfer COMMITTING; recovery is kept out of the way.
    const outage = await startReplicas(d, {
      CBS_FAULT_RATE: '1',
      CBS_FAULT_OPERATIONS: 'commit',
      CBS_FAULT_KINDS: 'unavailable',
      RECOVERY_INTERVAL_MS: '3600000',
      RECOVERY_BASE_BACKOFF_MS: '10',
    });
    const driver = driverFor(d, outage);
    const payments = 200;
    const flows: FlowRecord[] = [];
    for (let start = 0; start < payments; start += 20) {
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const flow = driver.plan();
          flows.push(flow);
          flow.quoteAnswer = await driver.send('POST', '/quoterequests', flow.quoteBody);
          flow.transferAnswer = await driver.send('POST', '/transfers', driver.prepareTransfer(flow));
          flow.decision = 'COMPLETED';
          flow.notificationBody = notification('COMPLETED');
          flow.notificationAnswer = await driver.send('PUT', `/transfers/${flow.transferId}`, flow.notificationBody);
        }),
      );
    }
    expect(countBy(flows.map((flow) => `${flow.quoteAnswer?.status} ${flow.transferAnswer?.status} ${flow.notificationAnswer?.status}`))).toEqual({
      '200 200 503': payments,
    });
    expect(await unfinishedTransfers(d.reader)).toBe(payments);
    await Promise.all(outage.map((replica) => replica.stop()));

    // Phase 2: the institution is back; both replicas recover, small batches, often.
    const credited = new Map<string, number[]>();
    const failures: string[] = [];
    const replicas = await startReplicas(
      d,
      { LOG_LEVEL: 'info', RECOVERY_INTERVAL_MS: '20', RECOVERY_BATCH_SIZE: '5', RECOVERY_BASE_BACKOFF_MS: '10' },
      (replica, line) => {
        if (line.msg === 'payee credited' && typeof line['transferId'] === 'string') {
          credited.set(line['transferId'], [...(credited.get(line['transferId']) ?? []), replica]);
        }
        if (line.msg === 'recovery attempt failed' || line.msg === 'recovery pass failed') failures.push(JSON.stringify(line));
      },
    );
    const deadline = Date.now() + 30_000;
    while ((await unfinishedTransfers(d.reader)) > 0 && Date.now() < deadline) await sleep(50);
    expect(await unfinishedTransfers(d.reader)).toBe(0);
    await Promise.all(replicas.map((replica) => replica.stop()));

    expect(failures).toEqual([]);
    // Each transfer was credited by exactly one replica, once; both replicas took part.
    expect(credited.size).toBe(payments);
    expect([...credited.values()].filter((by) => by.length !== 1)).toEqual([]);
    const perReplica = countBy([...credited.values()].map((by) => String(by[0])));
    expect((perReplica['0'] ?? 0) + (perReplica['1'] ?? 0)).toBe(payments);
    expect(perReplica['0'] ?? 0).toBeGreaterThan(0);
    expect(perReplica['1'] ?? 0).toBeGreaterThan(0);
    const report = await checkInvariants(d.reader, flows, demoAccounts);
    expect(report.problems).toEqual([]);
    expect(report.states).toEqual({ COMMITTED: payments });
    expect(report.ledgerCredits).toBe(report.expectedCredits);
    expect(report.conservation.ok).toBe(true);
  }, 120_000);
});

describe('two replicas on one PostgreSQL database, outgoing payments (mobile-operator flow)', () => {
  it('parallel duplicates spread over both replicas: one switch transfer, one debit, one accept, one refund each', async () => {
    const d = await deployment();
    const replicas = await startReplicas(d, {
      SANDBOX_OUTGOING_FLOW: 'mobile-operator',
      CALLBACK_WAIT_MS: '3600000',
      RECOVERY_INTERVAL_MS: '100',
      RECOVERY_BASE_BACKOFF_MS: '50',
    });
    const urls = replicas.map((replica) => outgoingUrls.get(replica) ?? '');
    const ledger = new SandboxLedger(d.reader);
    const payers = [
      { payerId: '260971000001', accountId: 'zm-acc-0001', name: 'Mwansa Banda' },
      { payerId: '260971000002', accountId: 'zm-acc-0002', name: 'Natasha Mulenga' },
    ];
    const disagreements: string[] = [];
    const payments: Array<{ home: string; transferId: string; payerAccount: string; debit: string; refund: boolean }> = [];
    const payment = async (index: number): Promise<void> => {
      const payer = payers[index % payers.length];
      if (payer === undefined) throw new Error('no payer');
      const home = `home-replica-${index}`;
      const refund = index % 3 === 2;
      // The switch fails the accept for every third payment: the customer must be refunded, once.
      if (refund) d.fakeSwitch.script(home, { accept: { status: 500 } });
      const body = {
        homeTransactionId: home,
        payeeId: '265991234567',
        payeeIdType: 'MSISDN',
        sendAmount: `${1 + (index % 17)}.${(index * 7) % 10}5`,
        sendCurrency: 'ZMW',
        receiveCurrency: 'ZMW',
        transactionType: 'TRANSFER',
        payer: { name: payer.name, payerId: payer.payerId },
      };
      const channel = { 'x-api-key': CHANNEL_KEY };
      const terms = await everywhere(urls, 4, 'POST', '/send-money', body, channel);
      if (distinct(terms) !== 1 || terms[0]?.status !== 200) disagreements.push(`initiate ${home}: ${JSON.stringify(terms)}`);
      const transferId = stringField(terms[0]?.body, 'transferId');
      const debit = stringField(field(terms[0]?.body, 'debitAmount'), 'amount');
      const accepts = await everywhere(urls, 4, 'PUT', `/send-money/${transferId}`, { acceptQuote: true }, channel);
      if (distinct(accepts) !== 1 || accepts[0]?.status !== 202) disagreements.push(`accept ${home}: ${JSON.stringify(accepts)}`);
      // The customer approves the prompt on the phone; then the provider calls back, repeatedly.
      await ledger.settleCollection(transferId, true);
      const callbacks = await everywhere(urls, 4, 'PUT', '/callback', { transaction: { id: transferId, status_code: 'TS' } }, { 'x-callback-secret': CALLBACK_SECRET });
      if (!callbacks.every((answer) => isDeepStrictEqual(answer, { status: 200, body: {} }))) disagreements.push(`callback ${home}: ${JSON.stringify(callbacks)}`);
      payments.push({ home, transferId, payerAccount: payer.accountId, debit, refund });
    };
    const count = 30;
    for (let start = 0; start < count; start += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, offset) => payment(start + offset)));
    }
    expect(disagreements).toEqual([]);

    const finalStates = async (): Promise<string[]> =>
      Promise.all(payments.map(async (p) => stringField((await call(urls[0] ?? '', 'GET', `/send-money/${p.transferId}`, undefined, { 'x-api-key': CHANNEL_KEY })).body, 'state')));
    const deadline = Date.now() + 20_000;
    let states = await finalStates();
    while (states.some((state) => state !== 'COMPLETED' && state !== 'REFUNDED') && Date.now() < deadline) {
      await sleep(100);
      states = await finalStates();
    }
    await Promise.all(replicas.map((replica) => replica.stop()));
    expect(countBy(states)).toEqual({ COMPLETED: 20, REFUNDED: 10 });
    payments.forEach((p, index) => expect(`${p.home} ${states[index]}`).toBe(`${p.home} ${p.refund ? 'REFUNDED' : 'COMPLETED'}`));

    // The switch saw one transfer and one accept per payment, whichever replica got what.
    const switchCalls = countBy(d.fakeSwitch.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.method === 'POST' ? stringField(r.body, 'homeTransactionId') : r.path}`));
    for (const p of payments) {
      expect(switchCalls[`POST ${p.home}`]).toBe(1);
      expect(switchCalls[`PUT /transfers/${p.transferId}`]).toBe(1);
    }
    // The ledger: one collection per payment, one refund per failed one, nothing else.
    const db = d.reader.reader<SandboxSchema>();
    const debits = await db.selectFrom('sandbox_debits').select(['kind', 'state', 'original_reference', 'reference', 'amount']).execute();
    expect(countBy(debits.map((row) => `${row.kind} ${row.state}`))).toEqual({ 'collection succeeded': 30, 'refund succeeded': 10 });
    for (const p of payments) {
      const minor = toMinorUnits(p.debit, 'ZMW').toString();
      expect(debits.filter((row) => row.kind === 'collection' && row.reference === p.transferId).map((row) => row.amount)).toEqual([minor]);
      expect(debits.filter((row) => row.kind === 'refund' && row.original_reference === p.transferId).map((row) => row.amount)).toEqual(p.refund ? [minor] : []);
    }
    const movements = countBy((await db.selectFrom('sandbox_postings').select(['movement_id', 'kind']).where('kind', '=', 'TRANSFER').execute()).map((row) => row.movement_id.split(':')[0] ?? ''));
    expect(movements).toEqual({ collect: 60, refund: 20 });
    // Balances: each payer paid exactly the completed payments; the float received them (one account model).
    const paid = new Map<string, bigint>();
    for (const p of payments) if (!p.refund) paid.set(p.payerAccount, (paid.get(p.payerAccount) ?? 0n) + toMinorUnits(p.debit, 'ZMW'));
    const balances = new Map((await ledger.balances()).map((account) => [account.accountId, account.balance]));
    for (const payer of payers) {
      const opening = demoAccounts.customers.find((customer) => customer.accountId === payer.accountId)?.balance ?? '0';
      expect(balances.get(payer.accountId)).toBe(formatMinorUnits(toMinorUnits(opening, 'ZMW') - (paid.get(payer.accountId) ?? 0n), 'ZMW'));
    }
    const settled = [...paid.values()].reduce((sum, minor) => sum + minor, 0n);
    expect(balances.get(demoAccounts.float.accountId)).toBe(formatMinorUnits(toMinorUnits(demoAccounts.float.balance, 'ZMW') + settled, 'ZMW'));
    expect((await ledger.conservationCheck()).ok).toBe(true);
  }, 120_000);
});

/** Sends `copies` identical requests at once, alternating over `urls`; every one must be answered. */
async function everywhere(urls: readonly string[], copies: number, method: 'POST' | 'PUT', path: string, body: unknown, headers: Record<string, string>): Promise<Answer[]> {
  return Promise.all(Array.from({ length: copies }, (_, copy) => call(urls[copy % urls.length] ?? '', method, path, body, headers)));
}

async function call(url: string, method: 'GET' | 'POST' | 'PUT', path: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
  const response = await request(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text === '' ? undefined : JSON.parse(text) };
}

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && name in body ? Object.fromEntries(Object.entries(body))[name] : undefined;
}

function stringField(body: unknown, name: string): string {
  const value = field(body, name);
  if (typeof value !== 'string') throw new Error(`no string ${name} in ${JSON.stringify(body)}`);
  return value;
}

function countBy(items: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}
