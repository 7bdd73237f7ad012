import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { IncomingPayments } from './aggregate/incoming-payments.js';
import { InboundSettlement } from './aggregate/inbound-settlement.js';
import { InboundRecovery, RecoveryLoop } from './aggregate/recovery.js';
import { connectorMigrations } from './adapters/store/connector-migrations.js';
import { SqlInboundStore } from './adapters/store/inbound-store.js';
import { AuditTrail, auditMigrations } from './adapters/store/audit-trail.js';
import { openDatabase } from './adapters/store/open-database.js';
import { BASE_URL_SETTINGS, createCoreBanking as createHttpCoreBanking } from './adapters/core-banking/registry.js';
import { plainHttpWarning } from './adapters/core-banking/shared/plain-http.js';
import { atInstitutionBoundary } from './adapters/core-banking/institution-boundary.js';
import type { SqlDatabase } from './adapters/store/sql-database.js';
import { SdkClient } from './adapters/switch/sdk-client.js';
import {
  ALL_FLOAT_SHARDS,
  FLOAT_LANES,
  FLOAT_LANE_SPACE,
  SandboxCoreBanking,
  SandboxLedger,
  demoAccounts,
  floatLaneOf,
  parseSandboxAccountsFile,
  sandboxMigrations,
  seedSandbox,
} from './adapters/core-banking/sandbox/index.js';
import type { CoreBanking } from './ports/core-banking.js';
import { systemClock, type Clock } from './ports/clock.js';
import type { Logger } from './ports/logger.js';
import type { SwitchConnector } from './ports/switch-connector.js';
import { buildIncomingServer } from './http/incoming-server.js';
import { OutgoingPayments } from './aggregate/outgoing-payments.js';
import { OutgoingRecovery } from './aggregate/outgoing-recovery.js';
import { OutgoingSettlement } from './aggregate/outgoing-settlement.js';
import { outgoingMigrations } from './adapters/store/outgoing-migrations.js';
import { SqlOutgoingStore } from './adapters/store/outgoing-store.js';
import { TRANSFER_TIMEOUT_FLOOR_MS } from './adapters/switch/sdk-client.js';
import { buildOutgoingServer } from './http/outgoing-server.js';
import { IdentifierStore, identifierMigrations } from './identifiers/identifier-store.js';
import { IdentifierRegistration } from './identifiers/registration.js';
import { IdentifierJobs, identifierJobMigrations } from './identifiers/identifier-jobs.js';
import { causeOf, runChecks, type HealthCheck } from './http/health.js';
import { StopSteps, closeServers, drainThenRefuse, dropAllConnections } from './shared/stop-steps.js';
import { isLoopbackHost, readClientTlsMaterial, readTlsMaterial } from './listen-security.js';
import { createConnectorMetrics, type ConnectorMetrics } from './metrics/connector-metrics.js';
import { OperatorActions } from './aggregate/operator-actions.js';
import { Reconciliation } from './aggregate/reconciliation.js';
import { buildOperationsServer } from './http/operations-server.js';
import { fileURLToPath } from 'node:url';
import { intentHold } from './shared/held-while.js';

/** Replaceable parts, for tests and the benchmark. */
export interface AppOverrides {
  readonly clock?: Clock;
  /** Wraps the institution adapter, e.g. with fault injection. */
  readonly wrapCoreBanking?: (coreBanking: CoreBanking) => CoreBanking;
  readonly switchConnector?: SwitchConnector;
  /** Open an already-built database instead of the configured one. */
  readonly database?: SqlDatabase;
}

export interface App {
  readonly config: Config;
  readonly database: SqlDatabase;
  readonly coreBanking: CoreBanking;
  /** Present when CBS_ADAPTER=sandbox. */
  readonly sandbox: SandboxLedger | undefined;
  readonly incoming: IncomingPayments;
  readonly recovery: InboundRecovery;
  readonly incomingServer: FastifyInstance;
  readonly outgoing: OutgoingPayments;
  readonly outgoingRecovery: OutgoingRecovery;
  readonly outgoingServer: FastifyInstance;
  readonly identifiers: IdentifierRegistration;
  readonly identifierJobs: IdentifierJobs;
  readonly metrics: ConnectorMetrics;
  readonly audit: AuditTrail;
  readonly operatorActions: OperatorActions;
  readonly reconciliation: Reconciliation;
  readonly operationsServer: FastifyInstance;
  /** Starts the servers and the recovery loops; resolves with the servers' base URLs. */
  start(): Promise<{ incomingUrl: string; outgoingUrl: string; operationsUrl: string }>;
  /**
   * The drain (SHUTDOWN_DRAIN_MS), then refuses new requests (503 2003), ends the recovery passes
   * and bulk jobs between two items, finishes the requests under way, closes the database.
   */
  stop(): Promise<void>;
  /** What the stop under way is still waiting for. */
  stopWaitingFor(): string[];
  /** Closes every connection of the servers at once (the stop's deadline has passed). */
  dropConnections(): void;
}

/** The composition root's work, apart from reading the environment and process signals. */
export async function buildApp(config: Config, logger: Logger, overrides: AppOverrides = {}): Promise<App> {
  const clock = overrides.clock ?? systemClock;
  const database = overrides.database ?? (await openDatabase(config.store, logger));
  await database.migrate([...connectorMigrations, ...outgoingMigrations, ...sandboxMigrations, ...identifierMigrations, ...identifierJobMigrations, ...auditMigrations]);

  const metrics = createConnectorMetrics(database, 'dfsp', { databaseIntervalMs: config.metricsDatabaseIntervalMs });
  const { coreBanking: institution, sandbox } = await createCoreBanking(config, database, clock, logger);
  const wrapped = overrides.wrapCoreBanking === undefined ? institution : overrides.wrapCoreBanking(institution);
  // The institution's own words stay in logs and records; callers get the catalogue text.
  const coreBanking = metrics.instrumentCoreBanking(atInstitutionBoundary(wrapped));
  // TLS files are read before anything opens: a wrong path stops the start with the setting's name.
  const incomingTls = config.listen.incoming.tls === undefined ? undefined : await readTlsMaterial(config.listen.incoming.tls, 'INCOMING');
  const outgoingTls = config.listen.outgoing.tls === undefined ? undefined : await readTlsMaterial(config.listen.outgoing.tls, 'OUTGOING');
  const operationsTls = config.operations.listen.tls === undefined ? undefined : await readTlsMaterial(config.operations.listen.tls, 'OPERATIONS');
  const sdkTls = config.sdkTls === undefined ? undefined : await readClientTlsMaterial(config.sdkTls);
  const sdkClient = new SdkClient({
    baseUrl: config.sdkBaseUrl,
    timeoutMs: config.sdkTimeoutMs,
    transferTimeoutMs: config.outgoing.transferTimeoutMs,
    ...(sdkTls === undefined ? {} : { tls: sdkTls }),
  });
  const switchConnector = metrics.instrumentSwitch(overrides.switchConnector ?? sdkClient);

  // Both recovery loops take over an intent untouched this long (its request crashed).
  const intentStaleAfterMs = Math.min(config.recovery.baseBackoffMs * 5, 30_000);

  const store = new SqlInboundStore(database, () => clock.now());
  const settlement = new InboundSettlement(store, coreBanking, clock, logger, config.recovery, intentHold(intentStaleAfterMs));
  const incoming = new IncomingPayments({
    settings: {
      supportedIdType: config.supportedIdType,
      currency: config.currency,
      sendingServiceCharge: config.sendingServiceCharge,
      expirationMs: config.expirationMs,
      lei: config.lei,
      apiType: config.apiType,
      payerPolicy: config.iso,
      partyShare: config.partyShare,
    },
    coreBanking,
    store,
    settlement,
    clock,
    logger,
  });
  const recovery = new InboundRecovery(store, incoming, settlement, switchConnector, clock, logger, {
    batchSize: config.recovery.batchSize,
    reservationQueryAfterMs: config.recovery.reservationQueryAfterMs,
    intentStaleAfterMs,
    leaseMs: config.recovery.leaseMs,
  });
  const loop = new RecoveryLoop(
    async (stop) => {
      const report = await recovery.runOnce(stop);
      metrics.recordRecovery('incoming_transfer', report);
      return report;
    },
    config.recovery.intervalMs,
    logger,
  );

  const health: HealthCheck = {
    checks: { store: () => database.health(), institution: () => coreBanking.health() },
    timeoutMs: 2000,
  };
  const incomingServer = buildIncomingServer(incoming, health, {
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    limits: config.serverLimits,
    allowedHosts: config.allowedHosts,
    requestTimeoutMs: config.incomingRequestTimeoutMs,
    metrics,
    name: 'incoming',
    ...(incomingTls === undefined ? {} : { tls: incomingTls }),
  }, config.apiType);

  const outgoingStore = new SqlOutgoingStore(database, () => clock.now());
  const outgoingSettlement = new OutgoingSettlement(outgoingStore, coreBanking, switchConnector, clock, logger, config.recovery, intentHold(intentStaleAfterMs));
  const outgoing = new OutgoingPayments({
    settings: {
      supportedIdType: config.supportedIdType,
      currency: config.currency,
      apiType: config.apiType,
      birthKeys: config.outgoing.birthKeys,
      // A retry on another replica waits for the first replica's switch call, as in one process.
      parallelRetryWaitMs: config.outgoing.transferTimeoutMs,
    },
    coreBanking,
    store: outgoingStore,
    settlement: outgoingSettlement,
    switchConnector,
    clock,
    logger,
  });
  const outgoingRecovery = new OutgoingRecovery(outgoingStore, outgoing, outgoingSettlement, coreBanking, clock, logger, {
    batchSize: config.recovery.batchSize,
    transferTimeoutMs: config.outgoing.transferTimeoutMs,
    callbackWaitMs: config.outgoing.callbackWaitMs,
    intentStaleAfterMs,
    leaseMs: config.recovery.leaseMs,
  });
  const identifierStore = new IdentifierStore(database, () => clock.now());
  // An identifier's platform call holds it for as long as the switch connector may take on it.
  const identifierLeaseMs = config.sdkTimeoutMs + 5000;
  const identifiers = new IdentifierRegistration(identifierStore, coreBanking, switchConnector, clock, logger, {
    segments: config.identifierSegments,
    baseBackoffMs: config.recovery.baseBackoffMs,
    maxBackoffMs: config.recovery.maxBackoffMs,
    batchSize: config.identifierBatchSize,
    leaseMs: identifierLeaseMs,
  });
  const identifierJobs = new IdentifierJobs(database, identifiers, identifierStore, () => clock.now(), logger, identifierLeaseMs);
  const outgoingLoop = new RecoveryLoop(
    async (stop) => {
      const report = await outgoingRecovery.runOnce(stop);
      metrics.recordRecovery('outgoing_payment', report);
      // Registrations and removals cut off by a platform outage or a crash, and bulk jobs cut off by a restart.
      metrics.recordRecovery('identifier', await identifiers.runOnce(config.recovery.leaseMs, stop));
      if (!stop.aborted) await identifierJobs.resumeUnfinished();
      return report;
    },
    config.recovery.intervalMs,
    logger,
  );
  const outgoingServer = buildOutgoingServer(outgoing, health, {
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    limits: config.serverLimits,
    allowedHosts: config.allowedHosts,
    metrics,
    name: 'outgoing',
    ...(outgoingTls === undefined ? {} : { tls: outgoingTls }),
    channelApiKey: config.outgoing.channelApiKey,
    callbackSecret: config.outgoing.callbackSecret,
    callbackSecretHeader: config.outgoing.callbackSecretHeader,
    callbackAuth: config.outgoing.callbackAuth,
    transferTimeoutMs: config.outgoing.transferTimeoutMs,
    identifiers,
    identifierJobs,
  });

  const audit = new AuditTrail(database);
  const operatorActions = new OperatorActions({
    inboundStore: store,
    outgoingStore,
    outgoing,
    outgoingSettlement,
    switchConnector,
    clock,
    logger,
    // As the recovery worker: an accept younger than the switch's limit may still be running.
    acceptRunsForMs: config.outgoing.transferTimeoutMs + 5_000,
    wakeRecovery: () => {
      loop.wake();
      outgoingLoop.wake();
    },
    prompts: sandbox,
  });
  const reconciliation = new Reconciliation(store, outgoingStore, coreBanking, clock, config.reconciliationMaxRecords);
  const operationsServer = await buildOperationsServer({ inboundStore: store, outgoingStore, audit, actions: operatorActions, reconciliation }, health, {
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    limits: config.serverLimits,
    allowedHosts: config.allowedHosts,
    metrics,
    name: 'operations',
    operators: config.operations.operators,
    consoleDir: config.operations.consoleDir ?? fileURLToPath(new URL('../console/', import.meta.url)),
    ...(operationsTls === undefined ? {} : { tls: operationsTls }),
  });

  const servers = [incomingServer, outgoingServer, operationsServer];
  const stopSteps = new StopSteps(logger);
  return {
    config,
    database,
    coreBanking,
    sandbox,
    incoming,
    recovery,
    incomingServer,
    outgoing,
    outgoingRecovery,
    outgoingServer,
    identifiers,
    identifierJobs,
    metrics,
    audit,
    operatorActions,
    reconciliation,
    operationsServer,
    async start() {
      await checkInstitutionAtStart(coreBanking, health, logger);
      const incomingUrl = await incomingServer.listen({ host: config.listen.incoming.host, port: config.incomingPort });
      const outgoingUrl = await outgoingServer.listen({ host: config.listen.outgoing.host, port: config.outgoingPort });
      const operationsUrl = await operationsServer.listen({ host: config.operations.listen.host, port: config.operations.port });
      loop.start();
      outgoingLoop.start();
      if (config.outgoing.demoCredentials) {
        logger.warn({}, 'outgoing server uses the demo OUTGOING_API_KEY or CALLBACK_SECRET (see README); both servers stay on loopback until you set your own');
      }
      if (!isLoopbackHost(config.listen.incoming.host) && config.listen.incoming.tls?.caFile === undefined) {
        logger.warn({ host: config.listen.incoming.host }, 'incoming server is reachable from other machines without mutual TLS: anyone who reaches it can ask for payee credits; keep it on a private link to the switch connector or set INCOMING_TLS_CA_FILE');
      }
      if (config.outgoing.transferTimeoutMs < TRANSFER_TIMEOUT_FLOOR_MS) {
        logger.warn({ transferTimeoutMs: config.outgoing.transferTimeoutMs }, 'SDK_TRANSFER_TIMEOUT_MS is below 95 s: the switch connector may still be working when we give up');
      }
      if (config.operations.demoOperator) {
        logger.warn({}, 'operations server uses the demo OPERATOR_CREDENTIALS (see README); it stays on loopback until you set your own');
      }
      logger.info({ incomingUrl, outgoingUrl, operationsUrl, adapter: coreBanking.name, outgoingFlow: coreBanking.capabilities.outgoingFlow, apiType: config.apiType, store: database.dialect }, 'connector started');
      return { incomingUrl, outgoingUrl, operationsUrl };
    },
    async stop() {
      // New requests refused first; the recovery passes and bulk jobs end between two items (the
      // items a pass claimed and did not work are given back); then the handlers still running (also those whose
      // client hung up) finish their writes before anything they use is closed.
      await drainThenRefuse(servers, config.shutdown.drainMs, stopSteps);
      await Promise.all([
        stopSteps.step('the incoming recovery pass', () => loop.stop()),
        stopSteps.step('the outgoing and identifier recovery pass', () => outgoingLoop.stop()),
        stopSteps.step('bulk identifier jobs', () => identifierJobs.stop()),
      ]);
      await closeServers(servers, stopSteps);
      await stopSteps.step('outgoing payments under way', () => outgoing.idle());
      await stopSteps.step('closing the switch, institution and database connections', async () => {
        await sdkClient.close();
        await coreBanking.close?.();
        await database.close();
      });
    },
    stopWaitingFor: () => stopSteps.waitingFor(),
    dropConnections: () => dropAllConnections(servers),
  };
}

async function createCoreBanking(
  config: Config,
  database: SqlDatabase,
  clock: Clock,
  logger: Logger,
): Promise<{ coreBanking: CoreBanking; sandbox: SandboxLedger | undefined }> {
  if (config.coreBanking.adapter !== 'sandbox') {
    const warning = plainHttpWarning(BASE_URL_SETTINGS[config.coreBanking.adapter], config.coreBanking.settings.baseUrl);
    if (warning !== undefined) logger.warn({ adapter: config.coreBanking.adapter }, warning);
    return { coreBanking: createHttpCoreBanking(config.coreBanking, { clock }), sandbox: undefined };
  }
  // On PostgreSQL each replica takes from and credits to float shards of its own (ledger-float.ts).
  const floatLane = database.dialect === 'postgres' ? floatLaneOf(await database.claimSlot(FLOAT_LANE_SPACE, FLOAT_LANES)) : ALL_FLOAT_SHARDS;
  const ledger = new SandboxLedger(database, () => clock.now(), { floatLane });
  const accounts =
    config.sandboxAccountsFile === undefined
      ? demoAccounts
      : parseSandboxAccountsFile(await readAccountsFile(config.sandboxAccountsFile));
  const seeded = await seedSandbox(ledger, accounts);
  logger.info({ seeded, floatShards: { first: floatLane.first, count: floatLane.size } }, 'sandbox institution ready');
  return { coreBanking: new SandboxCoreBanking(ledger, { outgoingFlow: config.outgoing.sandboxFlow }), sandbox: ledger };
}

/** The sandbox's accounts file, read at every start (its books are opened from it only on the first). */
async function readAccountsFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`SANDBOX_ACCOUNTS_FILE: cannot read "${path}" (${error instanceof Error ? error.message : String(error)})`, { cause: error });
  }
}

/**
 * Before listening: the adapter's own check of its settings (a misconfigured institution stops
 * the start with the adapter's message: no payment could succeed), then one health check whose
 * result, with its cause, goes to the start-up log. An institution that is down only warns: it
 * may come back, and /health keeps saying why until it does.
 */
async function checkInstitutionAtStart(coreBanking: CoreBanking, health: HealthCheck, logger: Logger): Promise<void> {
  if (coreBanking.verifySetup !== undefined) {
    try {
      await coreBanking.verifySetup();
    } catch (error) {
      const cause = causeOf(error);
      if (cause === 'misconfigured' || cause === 'credentials-refused') {
        throw new Error(`institution ${coreBanking.name} ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      logger.warn({ adapter: coreBanking.name, cause }, 'institution settings could not be checked at start-up');
    }
  }
  const checks = await runChecks(health);
  const institution = checks['institution'];
  if (institution === 'ok') logger.info({ adapter: coreBanking.name, checks }, 'institution answers');
  else logger.error({ adapter: coreBanking.name, cause: institution, checks }, `institution is not healthy at start-up: ${institution ?? 'failed'}`);
}
