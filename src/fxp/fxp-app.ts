import { AuditTrail, auditMigrations } from '../adapters/store/audit-trail.js';
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { openDatabase } from '../adapters/store/open-database.js';
import type { SqlDatabase } from '../adapters/store/sql-database.js';
import { RecoveryLoop } from '../aggregate/recovery.js';
import type { HealthCheck } from '../http/health.js';
import { StopSteps, closeServers, drainThenRefuse, dropAllConnections } from '../shared/stop-steps.js';
import { isLoopbackHost, readTlsMaterial } from '../listen-security.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import { FxConversions } from './aggregate/fx-conversions.js';
import { FxOperatorActions } from './aggregate/fx-operator-actions.js';
import { buildFxpOperationsServer } from './http/fxp-operations-server.js';
import { FxRecovery } from './aggregate/fx-recovery.js';
import { RateSource } from './aggregate/rate-source.js';
import { demoExchange } from './adapters/sandbox-exchange/demo-exchange.js';
import { parseExchangeConfig } from './adapters/sandbox-exchange/exchange-config.js';
import { ExchangeLedger } from './adapters/sandbox-exchange/exchange-ledger.js';
import { sandboxExchangeMigrations } from './adapters/sandbox-exchange/exchange-migrations.js';
import { SandboxExchange } from './adapters/sandbox-exchange/sandbox-exchange.js';
import { RestExchange } from './adapters/rest-exchange/rest-exchange.js';
import { plainHttpWarning } from '../adapters/core-banking/shared/plain-http.js';
import { buildFxpServer } from './http/fxp-server.js';
import { createConnectorMetrics } from '../metrics/connector-metrics.js';
import { atExchangeBoundary } from './adapters/exchange-boundary.js';
import type { Exchange } from './ports/exchange.js';
import { FxStore, fxStoreMigrations } from './store/fx-store.js';

export interface FxpOverrides {
  readonly clock?: Clock;
  readonly database?: SqlDatabase;
  /** Wraps the exchange adapter, e.g. with fault injection in tests. */
  readonly wrapExchange?: (exchange: Exchange) => Exchange;
}

export interface FxpApp {
  readonly config: Config;
  readonly database: SqlDatabase;
  readonly exchange: Exchange;
  /** The sandbox exchange's books (empty unless FX_EXCHANGE_ADAPTER=sandbox). */
  readonly ledger: ExchangeLedger;
  readonly store: FxStore;
  readonly rates: RateSource;
  readonly conversions: FxConversions;
  readonly recovery: FxRecovery;
  readonly server: FastifyInstance;
  /** The operators' server (OPERATIONS_PORT): flagged conversions and their resolution. */
  readonly operationsServer: FastifyInstance;
  readonly operatorActions: FxOperatorActions;
  start(): Promise<{ url: string; operationsUrl: string }>;
  stop(): Promise<void>;
  /** What the stop under way is still waiting for. */
  stopWaitingFor(): string[];
  /** Closes every connection of the servers at once (the stop's deadline has passed). */
  dropConnections(): void;
}

/**
 * The composition root of FX provider mode (CONNECTOR_MODE=fxp): the same store, error
 * catalogue, HTTP layer, recovery loop and settings as the payee mode, with the exchange port in
 * place of the core-banking port. It serves the FXP backend API on the incoming port.
 */
export async function buildFxpApp(config: Config, logger: Logger, overrides: FxpOverrides = {}): Promise<FxpApp> {
  const clock = overrides.clock ?? systemClock;
  const database = overrides.database ?? (await openDatabase(config.store, logger));
  await database.migrate([...fxStoreMigrations, ...sandboxExchangeMigrations, ...auditMigrations]);

  const ledger = new ExchangeLedger(database, () => clock.now());
  let chosen: Exchange;
  if (config.fx.exchangeAdapter === 'rest' && config.fx.rest !== undefined) {
    const warning = plainHttpWarning('FX_REST_BASE_URL', config.fx.rest.baseUrl);
    if (warning !== undefined) logger.warn({ exchange: 'rest' }, warning);
    chosen = new RestExchange(config.fx.rest);
  } else {
    const exchangeConfig = config.fx.sandboxFile === undefined ? demoExchange : parseExchangeConfig(await readFile(config.fx.sandboxFile, 'utf8'));
    // The currencies the books did not have yet (all of them at the first start): opened with the file's liquidity.
    const opened = await ledger.open(exchangeConfig);
    logger.info({ currenciesOpened: opened, pairs: exchangeConfig.pairs.length }, opened.length === 0 ? 'sandbox exchange ready' : `sandbox exchange ready; accounts opened for ${opened.join(', ')}`);
    chosen = new SandboxExchange(ledger, exchangeConfig, () => clock.now());
  }
  const exchange: Exchange = atExchangeBoundary(overrides.wrapExchange === undefined ? chosen : overrides.wrapExchange(chosen));

  const store = new FxStore(database, () => clock.now());
  const rates = new RateSource(exchange, clock, { refreshMs: config.fx.rateRefreshMs, maxAgeMs: config.fx.rateMaxAgeMs }, logger);
  const conversions = new FxConversions({
    store,
    exchange,
    rates,
    clock,
    logger,
    settings: {
      quoteExpiryMs: config.fx.quoteExpiryMs,
      baseBackoffMs: config.recovery.baseBackoffMs,
      maxBackoffMs: config.recovery.maxBackoffMs,
      attentionAfterAttempts: config.recovery.attentionAfterAttempts,
      intentStaleAfterMs: Math.min(config.recovery.baseBackoffMs * 5, 30_000),
    },
  });
  const recovery = new FxRecovery(store, conversions, clock, logger, { batchSize: config.recovery.batchSize, leaseMs: config.recovery.leaseMs });
  const loop = new RecoveryLoop((stop) => recovery.runOnce(stop), config.recovery.intervalMs, logger);

  const health: HealthCheck = {
    checks: {
      store: () => database.health(),
      exchange: () => exchange.health(),
      rates: async () => {
        if (rates.status().stale) throw new Error('rates stale');
      },
    },
    timeoutMs: 2000,
    details: () => ({ rates: rates.status() }),
  };
  const tls = config.listen.incoming.tls === undefined ? undefined : await readTlsMaterial(config.listen.incoming.tls, 'INCOMING');
  const metrics = createConnectorMetrics(database, 'fxp', { databaseIntervalMs: config.metricsDatabaseIntervalMs });
  const server = buildFxpServer(conversions, health, {
    logger,
    metrics,
    bodyLimitBytes: config.bodyLimitBytes,
    limits: config.serverLimits,
    requestTimeoutMs: config.incomingRequestTimeoutMs,
    name: 'fxp',
    allowedHosts: config.allowedHosts,
    ...(tls === undefined ? {} : { tls }),
  });

  const operatorActions = new FxOperatorActions({ store, conversions, clock, logger });
  const operationsTls = config.operations.listen.tls === undefined ? undefined : await readTlsMaterial(config.operations.listen.tls, 'OPERATIONS');
  const operationsServer = buildFxpOperationsServer({ store, audit: new AuditTrail(database), actions: operatorActions }, health, {
    logger,
    metrics,
    bodyLimitBytes: config.bodyLimitBytes,
    limits: config.serverLimits,
    name: 'operations',
    allowedHosts: config.allowedHosts,
    operators: config.operations.operators,
    ...(operationsTls === undefined ? {} : { tls: operationsTls }),
  });

  const stopSteps = new StopSteps(logger);
  return {
    config,
    database,
    exchange,
    ledger,
    store,
    rates,
    conversions,
    recovery,
    server,
    operationsServer,
    operatorActions,
    async start() {
      if (!(await rates.refresh())) logger.error({ exchange: exchange.name }, 'no exchange rates at start-up: quotes are refused until a refresh succeeds');
      rates.start();
      const url = await server.listen({ host: config.listen.incoming.host, port: config.incomingPort });
      const operationsUrl = await operationsServer.listen({ host: config.operations.listen.host, port: config.operations.port });
      loop.start();
      if (config.operations.demoOperator) {
        logger.warn({}, 'operations server uses the demo OPERATOR_CREDENTIALS (see README); it stays on loopback until you set your own');
      }
      if (!isLoopbackHost(config.listen.incoming.host) && config.listen.incoming.tls?.caFile === undefined) {
        logger.warn({ host: config.listen.incoming.host }, 'FXP server is reachable from other machines without mutual TLS; keep it on a private link to the switch connector or set INCOMING_TLS_CA_FILE');
      }
      logger.info({ url, operationsUrl, exchange: exchange.name, store: database.dialect, rates: rates.status() }, 'FX provider connector started');
      return { url, operationsUrl };
    },
    async stop() {
      const servers = [server, operationsServer];
      await drainThenRefuse(servers, config.shutdown.drainMs, stopSteps);
      rates.stop();
      await stopSteps.step('the conversion recovery pass', () => loop.stop());
      await closeServers(servers, stopSteps);
      await stopSteps.step('closing the exchange and database connections', async () => {
        await exchange.close?.();
        await database.close();
      });
    },
    stopWaitingFor: () => stopSteps.waitingFor(),
    dropConnections: () => dropAllConnections([server, operationsServer]),
  };
}
