import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { deploymentShape, startDeployment, type Deployment } from './replicas-deployment.js';
import { startFakeSwitchServer } from './fake-switch-server.js';
import { prefill } from './prefill.js';
import { BENCH_CALLBACK_SECRET, BENCH_CHANNEL_API_KEY, sendMoneyRoundTrip } from './send-money-scenario.js';

/**
 * npm run bench: starts the connector on its embedded defaults (SQLite, sandbox institution,
 * every commit durable) and drives each scenario at 50 connections for 10 s.
 * Options: --duration <s>, --connections <n>, --only <scenario name>,
 * --store sqlite|postgres (PostgreSQL: a fresh database on BENCH_DATABASE_URL, default the local
 * server), --replicas 1|2 (two connector processes on one PostgreSQL database, the connections
 * split between them: one autocannon per replica, run in parallel, results added up),
 * --prefill <n> (the store given n completed incoming transfers before the scenarios: prefill.ts).
 */
interface Scenario {
  readonly name: string;
  /** How many HTTP requests make one unit (e.g. a full transfer is 3). */
  readonly requestsPerUnit: number;
  readonly unit: string;
  /** The server driven (default: incoming). */
  readonly server?: 'outgoing';
  requests(url: string): autocannon.Request[];
}

const OUTGOING_PORT = 13004;

const PAYEE = '260971000001';
/** Incoming payments go to many customers: the quotes and transfers spread over these payees. */
const PAYEES = Array.from({ length: 50 }, (_, index) => (index === 0 ? PAYEE : `2609720000${String(index).padStart(2, '0')}`));
let nextPayee = 0;

function anyPayee(): string {
  nextPayee = (nextPayee + 1) % PAYEES.length;
  return PAYEES[nextPayee] ?? PAYEE;
}
const CURRENCY = 'ZMW';

const scenarios: Scenario[] = [
  {
    name: 'GET /parties',
    requestsPerUnit: 1,
    unit: 'lookups',
    requests: () => [{ method: 'GET', path: `/parties/MSISDN/${PAYEE}` }],
  },
  {
    name: 'POST /quoterequests',
    requestsPerUnit: 1,
    unit: 'quotes',
    requests: () => [{ method: 'POST', path: '/quoterequests', headers: json, setupRequest: (req) => ({ ...req, body: JSON.stringify(quoteBody()) }) }],
  },
  {
    name: 'payee lifecycle (quote, transfer, COMPLETED)',
    requestsPerUnit: 3,
    unit: 'transfers',
    requests: () => lifecycleRequests(),
  },
  {
    name: 'send-money round trip (initiate and accept) against the fake switch',
    requestsPerUnit: 2,
    unit: 'payments',
    server: 'outgoing',
    requests: () => sendMoneyRoundTrip(PAYEE),
  },
];

const json = { 'content-type': 'application/json' };

function quoteBody(): Record<string, unknown> {
  return {
    quoteId: randomUUID(),
    transactionId: randomUUID(),
    to: { idType: 'MSISDN', idValue: anyPayee() },
    from: { idType: 'MSISDN', idValue: '254700000001' },
    amountType: 'SEND',
    amount: '10',
    currency: CURRENCY,
    transactionType: 'TRANSFER',
    initiator: 'PAYER',
    initiatorType: 'CONSUMER',
  };
}

/** autocannon's per-connection context, which this file fills itself. */
function bag(context: object): Record<string, unknown> {
  return context as Record<string, unknown>;
}

/** One connection loops: quote, then a transfer built from the quote answer, then the commit. */
function lifecycleRequests(): autocannon.Request[] {
  return [
    {
      method: 'POST',
      path: '/quoterequests',
      headers: json,
      setupRequest: (req, context) => {
        const body = quoteBody();
        bag(context)['quoteBody'] = body;
        return { ...req, body: JSON.stringify(body) };
      },
      onResponse: (status, body, context) => {
        if (status === 200) bag(context)['quoteAnswer'] = JSON.parse(body) as unknown;
      },
    },
    {
      method: 'POST',
      path: '/transfers',
      headers: json,
      setupRequest: (req, context) => {
        const quote = bag(context)['quoteBody'] as Record<string, unknown>;
        const answer = bag(context)['quoteAnswer'] as Record<string, unknown> | undefined;
        if (answer === undefined) return undefined as unknown as autocannon.Request;
        const transferId = randomUUID();
        bag(context)['transferId'] = transferId;
        return {
          ...req,
          body: JSON.stringify({
            transferId,
            quote: answer,
            from: quote['from'],
            to: quote['to'],
            amountType: 'SEND',
            currency: CURRENCY,
            amount: quote['amount'],
            transactionType: 'TRANSFER',
            ilpPacket: {
              data: {
                quoteId: answer['quoteId'],
                transactionId: answer['transactionId'],
                payee: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: (quote['to'] as { idValue: string }).idValue } },
                payer: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '254700000001' } },
                amount: { amount: answer['transferAmount'], currency: CURRENCY },
                transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
              },
            },
          }),
        };
      },
    },
    {
      method: 'PUT',
      headers: json,
      setupRequest: (req, context) => ({
        ...req,
        path: `/transfers/${String(bag(context)['transferId'])}`,
        body: JSON.stringify({ currentState: 'COMPLETED', direction: 'INBOUND' }),
      }),
    },
  ];
}

/** FX provider mode: one connection loops fxQuote, then its fxTransfer, then the commit. */
const fxScenario: Scenario = {
  name: 'FX conversion (fxQuote, fxTransfer, COMMITTED), CONNECTOR_MODE=fxp',
  requestsPerUnit: 3,
  unit: 'conversions',
  requests: () => [
    {
      method: 'POST',
      path: '/fxQuotes',
      headers: json,
      setupRequest: (req, context) => {
        const conversionId = randomUUID();
        bag(context)['conversionId'] = conversionId;
        const body = {
          conversionRequestId: randomUUID(),
          conversionTerms: {
            conversionId,
            determiningTransferId: randomUUID(),
            initiatingFsp: 'payerfsp',
            counterPartyFsp: 'fxp',
            amountType: 'SEND',
            sourceAmount: { currency: 'ZMW', amount: '100' },
            targetAmount: { currency: 'MWK' },
            expiration: new Date(Date.now() + 300_000).toISOString(),
          },
        };
        return { ...req, body: JSON.stringify(body) };
      },
      onResponse: (status, body, context) => {
        if (status === 200) bag(context)['fxAnswer'] = JSON.parse(body) as unknown;
      },
    },
    {
      method: 'POST',
      path: '/fxTransfers',
      headers: json,
      setupRequest: (req, context) => {
        const answer = bag(context)['fxAnswer'] as { conversionTerms: Record<string, unknown> } | undefined;
        if (answer === undefined) return undefined as unknown as autocannon.Request;
        const terms = answer.conversionTerms;
        return {
          ...req,
          body: JSON.stringify({
            commitRequestId: terms['conversionId'],
            determiningTransferId: terms['determiningTransferId'],
            initiatingFsp: terms['initiatingFsp'],
            counterPartyFsp: terms['counterPartyFsp'],
            sourceAmount: terms['sourceAmount'],
            targetAmount: terms['targetAmount'],
          }),
        };
      },
    },
    {
      method: 'PUT',
      headers: json,
      setupRequest: (req, context) => ({
        ...req,
        path: `/fxTransfers/${String(bag(context)['conversionId'])}`,
        body: JSON.stringify({ conversionState: 'COMMITTED', completedTimestamp: new Date().toISOString() }),
      }),
    },
  ],
};

/** The FX provider's exchange for the benchmark: liquidity no run can exhaust. */
function benchExchange(): unknown {
  return {
    liquidity: { ZMW: '1000000000000', MWK: '1000000000000000' },
    pairs: [{ source: 'ZMW', target: 'MWK', mid: '65', spreadPercent: '0.5', charge: { currency: 'MWK', fixed: '10', percent: '0.5' }, limits: { min: '1', max: '100000' } }],
  };
}

interface Result {
  readonly scenario: string;
  readonly perSecond: number;
  readonly unit: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
  /** Database work per unit, from the connectors' own driver counters (connector_db_*_total). */
  readonly dbStatements: number;
  readonly dbRoundTrips: number;
  readonly dbTransactions: number;
  readonly dbCommits: number;
  /**
   * Connector CPU per unit, in milliseconds: every replica's user and system time (all threads)
   * over the run, divided by the units done. Unlike the rate, it barely moves with the machine's
   * other load; it moves with the machine's speed, so compare it within one run.
   */
  readonly cpuMs: number;
}

type WorkCounts = { statements: number; round_trips: number; transactions: number; commits: number };

/** The database counters of every replica, added up, read from its /metrics. */
async function databaseWork(urls: readonly string[]): Promise<WorkCounts> {
  const total: WorkCounts = { statements: 0, round_trips: 0, transactions: 0, commits: 0 };
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const field of ['statements', 'round_trips', 'transactions', 'commits'] as const) {
      const line = text.split('\n').find((candidate) => candidate.startsWith(`connector_db_${field}_total `));
      total[field] += line === undefined ? 0 : Number(line.split(' ')[1]);
    }
  }
  return total;
}

function connectorCpuMs(deployment: Deployment): number {
  return deployment.connectors.reduce((total, connector) => total + connector.cpuMs(), 0);
}

async function drive(deployment: Deployment, scenario: Scenario, durationS: number, connections: number): Promise<Result> {
  const urls = scenario.server === 'outgoing' ? deployment.outgoingUrls : deployment.incomingUrls;
  // One autocannon per replica, in parallel, each with its share of the connections.
  const share = Math.max(1, Math.floor(connections / urls.length));
  const workBefore = await databaseWork(deployment.incomingUrls);
  const cpuBefore = connectorCpuMs(deployment);
  const results = await Promise.all(urls.map((url) => autocannon({ url, connections: share, duration: durationS, requests: scenario.requests(url) })));
  const cpuAfter = connectorCpuMs(deployment);
  const workAfter = await databaseWork(deployment.incomingUrls);
  const sum = (pick: (result: autocannon.Result) => number): number => results.reduce((total, result) => total + pick(result), 0);
  const worst = (pick: (result: autocannon.Result) => number): number => Math.max(...results.map(pick));
  const units = sum((result) => result['2xx']) / scenario.requestsPerUnit;
  const perUnit = (field: keyof WorkCounts): number => (units === 0 ? 0 : Math.round(((workAfter[field] - workBefore[field]) / units) * 10) / 10);
  return {
    scenario: scenario.name,
    // Only successful answers count: a run with errors must not look fast.
    perSecond: Math.round(sum((result) => result['2xx']) / scenario.requestsPerUnit / durationS),
    unit: `${scenario.unit}/s`,
    // With two replicas, the slower replica's latency: the balancer's clients see both.
    p50Ms: worst((result) => result.latency.p50),
    p99Ms: worst((result) => result.latency.p99),
    non2xx: sum((result) => result.non2xx),
    errors: sum((result) => result.errors),
    dbStatements: perUnit('statements'),
    dbRoundTrips: perUnit('round_trips'),
    dbTransactions: perUnit('transactions'),
    dbCommits: perUnit('commits'),
    cpuMs: units === 0 ? 0 : Math.round(((cpuAfter - cpuBefore) / units) * 100) / 100,
  };
}

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] ?? fallback) : fallback;
}

async function main(): Promise<void> {
  const durationS = Number(option('duration', '10'));
  const connections = Number(option('connections', '50'));
  const only = option('only', '');
  const shape = deploymentShape(option('store', 'sqlite'), option('replicas', '1'));
  const dir = mkdtempSync(join(tmpdir(), 'cc-bench-'));
  const accountsFile = join(dir, 'accounts.json');
  writeFileSync(accountsFile, JSON.stringify(benchAccounts()));
  // The switch connector's outbound API, faked in this process (no request log: it would grow for the whole run).
  const fakeSwitch = await startFakeSwitchServer({ record: false });
  const deployment = await startDeployment({
    ...shape,
    dir,
    env: {
      SANDBOX_ACCOUNTS_FILE: accountsFile,
      X_CURRENCY: CURRENCY,
      SDK_BASE_URL: fakeSwitch.url,
      OUTGOING_API_KEY: BENCH_CHANNEL_API_KEY,
      CALLBACK_SECRET: BENCH_CALLBACK_SECRET,
    },
    firstIncomingPort: 13003,
    firstOutgoingPort: OUTGOING_PORT,
  });
  let stopped = false;
  const stopDeployment = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await deployment.stop();
  };
  const results: Result[] = [];
  const prefillCount = Number(option('prefill', '0'));
  try {
    let prefilled = '';
    if (prefillCount !== 0) {
      const done = await prefill(deployment.store, deployment.databaseUrl, prefillCount);
      prefilled = `, the store prefilled with ${done.transfers} completed transfers (${done.seconds.toFixed(0)} s)`;
    }
    for (const scenario of scenarios) {
      if (only !== '' && !scenario.name.includes(only)) continue;
      results.push(await drive(deployment, scenario, durationS, connections));
    }
    const replicas = deployment.connectors.length;
    const dfspRss = deployment.connectors.map((connector) => `${connector.peakRssMiB()} MiB`).join(', ');
    await stopDeployment();
    let fxRss = '';
    if (only === '' || fxScenario.name.includes(only)) {
      // FX provider mode is another deployment of the same product, on its own database.
      const exchangeFile = join(dir, 'exchange.json');
      writeFileSync(exchangeFile, JSON.stringify(benchExchange()));
      const fxDir = mkdtempSync(join(dir, 'fxp-'));
      const fx = await startDeployment({ ...shape, dir: fxDir, env: { CONNECTOR_MODE: 'fxp', FX_SANDBOX_FILE: exchangeFile }, firstIncomingPort: 13203, firstOutgoingPort: 13204 });
      try {
        results.push(await drive(fx, fxScenario, durationS, connections));
        fxRss = fx.connectors.map((connector) => `${connector.peakRssMiB()} MiB`).join(', ');
      } finally {
        await fx.stop();
      }
    }
    console.log(`\nCore connector benchmark: ${connections} connections, ${durationS} s per scenario, ${deployment.describe}, ${replicas} replica${replicas === 1 ? '' : 's'}${prefilled}`);
    console.table(results);
    console.log(`peak RSS per connector: ${dfspRss}${fxRss === '' ? '' : `; FX provider mode: ${fxRss}`}`);
  } finally {
    await stopDeployment();
    await fakeSwitch.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A float large enough for every transfer of the run. */
function benchAccounts(): unknown {
  return {
    currency: CURRENCY,
    float: { accountId: 'float-zmw', balance: '1000000000' },
    customers: PAYEES.map((idValue, index) => ({
      accountId: `acc-bench-${index + 1}`,
      idType: 'MSISDN',
      idValue,
      firstName: 'Bench',
      lastName: `Payee ${index + 1}`,
      status: 'active',
      balance: '0',
    })),
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
