import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { startConnector, type ConnectorProcess } from './connector-process.js';
import { startFakeSwitchServer } from './fake-switch-server.js';
import { BENCH_CALLBACK_SECRET, BENCH_CHANNEL_API_KEY, sendMoneyRoundTrip } from './send-money-scenario.js';

/**
 * npm run bench: starts the connector on its embedded defaults (SQLite, sandbox institution,
 * every commit durable) and drives each scenario at 50 connections for 10 s.
 * Options: --duration <s>, --connections <n>, --only <scenario name>.
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
    to: { idType: 'MSISDN', idValue: PAYEE },
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
                payee: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: PAYEE } },
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

interface Result {
  readonly scenario: string;
  readonly perSecond: number;
  readonly unit: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
}

async function drive(connector: ConnectorProcess, scenario: Scenario, durationS: number, connections: number): Promise<Result> {
  const url = scenario.server === 'outgoing' ? `http://127.0.0.1:${OUTGOING_PORT}` : connector.incomingUrl;
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    requests: scenario.requests(url),
  });
  return {
    scenario: scenario.name,
    // Only successful answers count: a run with errors must not look fast.
    perSecond: Math.round(result['2xx'] / scenario.requestsPerUnit / durationS),
    unit: `${scenario.unit}/s`,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
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
  const dir = mkdtempSync(join(tmpdir(), 'cc-bench-'));
  const accountsFile = join(dir, 'accounts.json');
  writeFileSync(accountsFile, JSON.stringify(benchAccounts()));
  // The switch connector's outbound API, faked in this process (no request log: it would grow for the whole run).
  const fakeSwitch = await startFakeSwitchServer({ record: false });
  const connector = await startConnector(
    {
      DATABASE_URL: join(dir, 'bench.db'),
      SANDBOX_ACCOUNTS_FILE: accountsFile,
      X_CURRENCY: CURRENCY,
      OUTGOING_PORT: String(OUTGOING_PORT),
      SDK_BASE_URL: fakeSwitch.url,
      OUTGOING_API_KEY: BENCH_CHANNEL_API_KEY,
      CALLBACK_SECRET: BENCH_CALLBACK_SECRET,
    },
    13003,
  );
  const results: Result[] = [];
  try {
    for (const scenario of scenarios) {
      if (only !== '' && !scenario.name.includes(only)) continue;
      results.push(await drive(connector, scenario, durationS, connections));
    }
    console.log(`\nCore connector benchmark: ${connections} connections, ${durationS} s per scenario, SQLite (WAL, synchronous=FULL)`);
    console.table(results);
    console.log(`peak RSS of the connector: ${connector.peakRssMiB()} MiB`);
  } finally {
    await connector.stop();
    await fakeSwitch.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A float large enough for every transfer of the run. */
function benchAccounts(): unknown {
  return {
    currency: CURRENCY,
    float: { accountId: 'float-zmw', balance: '1000000000' },
    customers: [
      { accountId: 'acc-bench-1', idType: 'MSISDN', idValue: PAYEE, firstName: 'Bench', lastName: 'Payee', status: 'active', balance: '0' },
    ],
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
