import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { IncomingPayments } from './aggregate/incoming-payments.js';
import { InboundSettlement } from './aggregate/inbound-settlement.js';
import { InboundRecovery, RecoveryLoop } from './aggregate/recovery.js';
import { connectorMigrations } from './adapters/store/connector-migrations.js';
import { SqlInboundStore } from './adapters/store/inbound-store.js';
import { openDatabase } from './adapters/store/open-database.js';
import { createCoreBanking as createHttpCoreBanking } from './adapters/core-banking/registry.js';
import { withFaults } from './adapters/core-banking/fault-settings.js';
import type { SqlDatabase } from './adapters/store/sql-database.js';
import { SdkClient } from './adapters/switch/sdk-client.js';
import {
  SandboxCoreBanking,
  SandboxLedger,
  demoAccounts,
  parseSandboxAccountsFile,
  sandboxMigrations,
  seedSandbox,
} from './adapters/core-banking/sandbox/index.js';
import type { CoreBanking } from './ports/core-banking.js';
import { systemClock, type Clock } from './ports/clock.js';
import type { Logger } from './ports/logger.js';
import type { SwitchConnector } from './ports/switch-connector.js';
import { buildIncomingServer } from './http/incoming-server.js';
import type { HealthCheck } from './http/health.js';

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
  /** Starts the servers and the recovery loop; resolves with the servers' base URLs. */
  start(): Promise<{ incomingUrl: string }>;
  /** Stops accepting requests, finishes what is under way, closes the database. */
  stop(): Promise<void>;
}

/** The composition root's work, apart from reading the environment and process signals. */
export async function buildApp(config: Config, logger: Logger, overrides: AppOverrides = {}): Promise<App> {
  const clock = overrides.clock ?? systemClock;
  const database = overrides.database ?? (await openDatabase(config.store, logger));
  await database.migrate([...connectorMigrations, ...sandboxMigrations]);

  const { coreBanking: institution, sandbox } = await createCoreBanking(config, database, clock, logger);
  // Test-only fault injection (CBS_FAULT_RATE), off unless configured; loud when on.
  if (config.faults !== undefined) logger.warn({ faults: config.faults }, 'institution fault injection is ON (testing only)');
  const baseCoreBanking = config.faults === undefined ? institution : withFaults(institution, config.faults);
  const coreBanking = overrides.wrapCoreBanking === undefined ? baseCoreBanking : overrides.wrapCoreBanking(baseCoreBanking);
  const sdkClient = new SdkClient({ baseUrl: config.sdkBaseUrl, timeoutMs: config.sdkTimeoutMs });
  const switchConnector = overrides.switchConnector ?? sdkClient;

  const store = new SqlInboundStore(database, () => clock.now());
  const settlement = new InboundSettlement(store, coreBanking, clock, logger, config.recovery);
  const incoming = new IncomingPayments({
    settings: {
      supportedIdType: config.supportedIdType,
      currency: config.currency,
      sendingServiceCharge: config.sendingServiceCharge,
      expirationMs: config.expirationMs,
      lei: config.lei,
      apiType: config.apiType,
      payerPolicy: config.iso,
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
    intentStaleAfterMs: Math.min(config.recovery.baseBackoffMs * 5, 30_000),
    leaseMs: config.recovery.leaseMs,
  });
  const loop = new RecoveryLoop(() => recovery.runOnce(), config.recovery.intervalMs, logger);

  const health: HealthCheck = {
    checks: { store: () => database.health(), institution: () => coreBanking.health() },
    timeoutMs: 2000,
  };
  const incomingServer = buildIncomingServer(incoming, health, { logger, bodyLimitBytes: config.bodyLimitBytes, name: 'incoming' });

  return {
    config,
    database,
    coreBanking,
    sandbox,
    incoming,
    recovery,
    incomingServer,
    async start() {
      const incomingUrl = await incomingServer.listen({ host: config.host, port: config.incomingPort });
      loop.start();
      logger.info({ incomingUrl, adapter: coreBanking.name, apiType: config.apiType, store: database.dialect }, 'connector started');
      return { incomingUrl };
    },
    async stop() {
      await loop.stop();
      await incomingServer.close();
      await sdkClient.close();
      await coreBanking.close?.();
      await database.close();
    },
  };
}

async function createCoreBanking(
  config: Config,
  database: SqlDatabase,
  clock: Clock,
  logger: Logger,
): Promise<{ coreBanking: CoreBanking; sandbox: SandboxLedger | undefined }> {
  if (config.coreBanking.adapter !== 'sandbox') {
    return { coreBanking: createHttpCoreBanking(config.coreBanking, { clock }), sandbox: undefined };
  }
  const ledger = new SandboxLedger(database, () => clock.now());
  const accounts =
    config.sandboxAccountsFile === undefined
      ? demoAccounts
      : parseSandboxAccountsFile(await readFile(config.sandboxAccountsFile, 'utf8'));
  const seeded = await seedSandbox(ledger, accounts);
  logger.info({ seeded }, 'sandbox institution ready');
  return { coreBanking: new SandboxCoreBanking(ledger, { outgoingFlow: 'bank' }), sandbox: ledger };
}
