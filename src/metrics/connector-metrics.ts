import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SqlDatabase } from '../adapters/store/sql-database.js';
import { FX_CONVERSIONS, FX_QUOTES, IDENTIFIERS, INCOMING_TRANSFERS, OUTGOING_PAYMENTS, stateCounts, type CountedTable } from '../adapters/store/state-counts.js';
import { isConnectorError } from '../domain/errors.js';
import type { CoreBanking } from '../ports/core-banking.js';
import { interceptCoreBanking } from '../adapters/core-banking/intercept.js';
import type { SwitchConnector } from '../ports/switch-connector.js';

/**
 * Prometheus metrics of the connector (GET /metrics on each server). Names and labels follow
 * Prometheus conventions (snake case, base units, `_total` counters); labels carry routes,
 * operations, outcomes and states only: never an id, an amount or a person's data.
 */

export interface ConnectorMetrics {
  readonly registry: Registry;
  /** Counts and times every request of a server (route template, never the raw URL). */
  instrumentServer(server: FastifyInstance, name: string): void;
  /** Wraps the institution adapter: calls by operation and outcome, and their latency. */
  instrumentCoreBanking(coreBanking: CoreBanking): CoreBanking;
  /** Wraps the switch connector client: calls by operation and outcome, and their latency. */
  instrumentSwitch(switchConnector: SwitchConnector): SwitchConnector;
  /** Counts a recovery pass's work, by kind of item. */
  recordRecovery(kind: string, report: { readonly claimed: number; readonly finished?: number; readonly failed?: number }): void;
  /** Serves GET /metrics on a server. */
  serve(server: FastifyInstance): void;
}

/** The outcome of an institution call, as a label. */
export function callOutcome(error: unknown): 'ok' | 'decline' | 'unavailable' | 'timeout' | 'error' {
  if (error === undefined) return 'ok';
  if (isConnectorError(error)) {
    if (error.category === 'timeout') return 'timeout';
    if (error.category === 'unavailable') return 'unavailable';
    if (error.category === 'internal') return 'error';
    return 'decline';
  }
  return 'error';
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * How long the figures read from the database (the gauges by state and of flagged items) serve
 * scrapes by default: on PostgreSQL each reading counts the tables, so scrapes, however many and
 * on whichever server, must not count them more often than this.
 */
export const DEFAULT_DATABASE_INTERVAL_MS = 5000;

export interface ConnectorMetricsOptions {
  /** The figures read from the database are read at most once in this many milliseconds (METRICS_DATABASE_INTERVAL_MS). */
  readonly databaseIntervalMs?: number;
}

export function createConnectorMetrics(database: SqlDatabase, mode: 'dfsp' | 'fxp' = 'dfsp', options: ConnectorMetricsOptions = {}): ConnectorMetrics {
  const intervalMs = options.databaseIntervalMs ?? DEFAULT_DATABASE_INTERVAL_MS;
  const registry = new Registry();
  const requests = new Counter({ name: 'connector_http_requests_total', help: 'HTTP requests answered, by server, route, method and status', labelNames: ['server', 'route', 'method', 'status'], registers: [registry] });
  const requestSeconds = new Histogram({ name: 'connector_http_request_duration_seconds', help: 'Time to answer a request, by server and route', labelNames: ['server', 'route'], buckets: LATENCY_BUCKETS, registers: [registry] });
  const institutionCalls = new Counter({ name: 'connector_institution_calls_total', help: 'Calls to the institution, by operation and outcome (ok, decline, unavailable, timeout, error)', labelNames: ['operation', 'outcome'], registers: [registry] });
  const institutionSeconds = new Histogram({ name: 'connector_institution_call_duration_seconds', help: 'Time of calls to the institution, by operation', labelNames: ['operation'], buckets: LATENCY_BUCKETS, registers: [registry] });

  const switchCalls = new Counter({ name: 'connector_switch_calls_total', help: 'Calls to the switch connector, by operation and outcome (answered, failed, unknown, error)', labelNames: ['operation', 'outcome'], registers: [registry] });
  const switchSeconds = new Histogram({ name: 'connector_switch_call_duration_seconds', help: 'Time of calls to the switch connector, by operation', labelNames: ['operation'], buckets: [...LATENCY_BUCKETS, 60, 120], registers: [registry] });
  registerDatabaseWork(registry, database);
  const recoveryItems = new Counter({ name: 'connector_recovery_items_total', help: 'Items the recovery worker took up, by kind and result (claimed, finished, failed)', labelNames: ['kind', 'result'], registers: [registry] });

  if (mode === 'fxp') {
    const figures = sharedReading(async () => ({ conversions: await stateCounts(database, FX_CONVERSIONS), quotes: await stateCounts(database, FX_QUOTES) }), intervalMs);
    stateGauge(registry, 'connector_fx_conversions', 'FX conversions (fxTransfers) by state', async () => (await figures()).conversions);
    new Gauge({
      name: 'connector_fx_quotes',
      help: 'FX quotes given',
      registers: [registry],
      async collect() {
        const [given] = (await figures()).quotes;
        this.set(given?.count ?? 0);
      },
    });
  } else registerPaymentGauges(registry, database, intervalMs);

  return {
    registry,
    instrumentServer(server, name) {
      server.addHook('onResponse', (request, reply, done) => {
        const route = request.routeOptions.url ?? 'unmatched';
        if (route === '/metrics') return done();
        requests.inc({ server: name, route, method: request.method, status: String(reply.statusCode) });
        requestSeconds.observe({ server: name, route }, reply.elapsedTime / 1000);
        done();
      });
    },
    instrumentCoreBanking(coreBanking) {
      return interceptCoreBanking(coreBanking, async (operation, call) => {
        const end = institutionSeconds.startTimer({ operation });
        try {
          const result = await call();
          institutionCalls.inc({ operation, outcome: 'ok' });
          return result;
        } catch (error) {
          institutionCalls.inc({ operation, outcome: callOutcome(error) });
          throw error;
        } finally {
          end();
        }
      });
    },
    instrumentSwitch(switchConnector) {
      const timed = async <T>(operation: string, call: () => Promise<T>, outcomeOf: (result: T) => string): Promise<T> => {
        const end = switchSeconds.startTimer({ operation });
        try {
          const result = await call();
          switchCalls.inc({ operation, outcome: outcomeOf(result) });
          return result;
        } catch (error) {
          switchCalls.inc({ operation, outcome: 'error' });
          throw error;
        } finally {
          end();
        }
      };
      const outcome = (answer: { readonly outcome: string }): string => answer.outcome;
      const register = switchConnector.registerIdentifiers?.bind(switchConnector);
      const deregister = switchConnector.deregisterIdentifier?.bind(switchConnector);
      return {
        getTransfer: (transferId) => timed('getTransfer', () => switchConnector.getTransfer(transferId), () => 'answered'),
        initiateTransfer: (transfer) => timed('initiateTransfer', () => switchConnector.initiateTransfer(transfer), outcome),
        continueTransfer: (transferId, continuation) => timed('continueTransfer', () => switchConnector.continueTransfer(transferId, continuation), outcome),
        ...(register === undefined ? {} : { registerIdentifiers: (items) => timed('registerIdentifiers', () => register(items), outcome) }),
        ...(deregister === undefined ? {} : { deregisterIdentifier: (item) => timed('deregisterIdentifier', () => deregister(item), outcome) }),
      };
    },
    recordRecovery(kind, report) {
      if (report.claimed > 0) recoveryItems.inc({ kind, result: 'claimed' }, report.claimed);
      if ((report.finished ?? 0) > 0) recoveryItems.inc({ kind, result: 'finished' }, report.finished);
      if ((report.failed ?? 0) > 0) recoveryItems.inc({ kind, result: 'failed' }, report.failed);
    },
    serve(server) {
      server.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
    },
  };
}

/**
 * The database work of this process (SqlDatabase.work, counted by the driver wrapper):
 * statements, round trips, transactions asked for, and commits.
 */
function registerDatabaseWork(registry: Registry, database: SqlDatabase): void {
  const names = [
    ['statements', 'connector_db_statements_total', 'Statements sent to the database'],
    ['roundTrips', 'connector_db_round_trips_total', 'Round trips to the database (PostgreSQL: a commit or read group is one; SQLite: one per statement)'],
    ['transactions', 'connector_db_transactions_total', 'Transactions asked of the database'],
    ['commits', 'connector_db_commits_total', 'Commits that reached the disk (SQLite: one per group of transactions; PostgreSQL: one per commit group, statement committed alone, or explicit transaction)'],
  ] as const;
  for (const [field, name, help] of names) {
    let counted = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const now = database.work()[field];
        if (now > counted) this.inc(now - counted);
        counted = now;
      },
    });
  }
}

/**
 * A reading shared by whoever asks while it is under way (concurrent scrapes, and the gauges of
 * one scrape), then kept for `intervalMs` after it ends: however many scrape, the database is
 * read at most once per interval. A failed reading is not kept; the next scrape reads again.
 */
function sharedReading<T>(read: () => Promise<T>, intervalMs: number): () => Promise<T> {
  let current: { readonly reading: Promise<T>; endedAtMs: number | undefined } | undefined;
  return () => {
    if (current !== undefined && (current.endedAtMs === undefined || performance.now() - current.endedAtMs < intervalMs)) return current.reading;
    const entry: { readonly reading: Promise<T>; endedAtMs: number | undefined } = { reading: read(), endedAtMs: undefined };
    current = entry;
    entry.reading.then(
      () => {
        entry.endedAtMs = performance.now();
      },
      () => {
        if (current === entry) current = undefined;
      },
    );
    return entry.reading;
  };
}

/** A gauge of a table's records by state (states with no records left out). */
function stateGauge(registry: Registry, name: string, help: string, read: () => Promise<ReadonlyArray<{ state: string; count: number }>>): void {
  new Gauge({
    name,
    help,
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const row of rows) this.set({ state: row.state }, row.count);
    },
  });
}

/**
 * The payee and payer sides' gauges, read from the store (the truth across replicas) at most
 * once per `intervalMs`. The figures by state come from `stateCounts` (kept by triggers on
 * SQLite, counted on PostgreSQL); the flagged items are counted through their attention indexes.
 */
function registerPaymentGauges(registry: Registry, database: SqlDatabase, intervalMs: number): void {
  const figures = sharedReading(async () => {
    const identifiers = await stateCounts(database, IDENTIFIERS);
    const incoming = await stateCounts(database, INCOMING_TRANSFERS);
    const outgoing = await stateCounts(database, OUTGOING_PAYMENTS);
    const reader = database.reader<{ inbound_transfers: { needs_attention: number }; outgoing_payments: { needs_attention: number } }>();
    const inbound = await reader.selectFrom('inbound_transfers').select((eb) => eb.fn.countAll<string | number>().as('count')).where('needs_attention', '=', 1).executeTakeFirst();
    const flagged = await reader.selectFrom('outgoing_payments').select((eb) => eb.fn.countAll<string | number>().as('count')).where('needs_attention', '=', 1).executeTakeFirst();
    return { identifiers, incoming, outgoing, attention: { incoming: Number(inbound?.count ?? 0), outgoing: Number(flagged?.count ?? 0) } };
  }, intervalMs);
  stateGauge(registry, 'connector_identifiers', 'Customer identifiers in the registry, by registration state', async () => (await figures()).identifiers);
  stateGauge(registry, 'connector_incoming_transfers', 'Incoming transfers by state', async () => (await figures()).incoming);
  stateGauge(registry, 'connector_outgoing_payments', 'Outgoing payments by state', async () => (await figures()).outgoing);
  new Gauge({
    name: 'connector_items_needing_attention',
    help: 'Items flagged for an operator, by kind',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const { attention } = await figures();
      this.set({ kind: 'incoming_transfer' }, attention.incoming);
      this.set({ kind: 'outgoing_payment' }, attention.outgoing);
    },
  });
}
