import { join } from 'node:path';
import { startConnector, type ConnectorProcess } from './connector-process.js';
import { createBenchDatabase, type BenchDatabase } from './postgres-database.js';

/**
 * What the benchmark runs against: one or two connector processes (replicas) on one database,
 * SQLite or PostgreSQL, each on its own pair of ports, as several replicas behind a balancer.
 * Two replicas need PostgreSQL: SQLite serves one process (see docs/deployment.md).
 */
export type BenchStore = 'sqlite' | 'postgres';

export interface DeploymentOptions {
  readonly store: BenchStore;
  readonly replicas: number;
  /** Scratch directory of the run (the SQLite file goes there). */
  readonly dir: string;
  /** Settings every replica gets. */
  readonly env: Readonly<Record<string, string>>;
  readonly firstIncomingPort: number;
  readonly firstOutgoingPort: number;
}

export interface Deployment {
  readonly store: BenchStore;
  readonly connectors: readonly ConnectorProcess[];
  readonly incomingUrls: readonly string[];
  readonly outgoingUrls: readonly string[];
  /** Where the database is, for the printout. */
  readonly describe: string;
  /** The replicas' DATABASE_URL (the SQLite file's path, or the PostgreSQL database's URL). */
  readonly databaseUrl: string;
  stop(): Promise<void>;
}

/** Reads --store and --replicas and refuses what the connector does not support. */
export function deploymentShape(store: string, replicas: string): { store: BenchStore; replicas: number } {
  if (store !== 'sqlite' && store !== 'postgres') throw new Error(`--store must be sqlite or postgres, not "${store}"`);
  if (replicas !== '1' && replicas !== '2') throw new Error(`--replicas must be 1 or 2, not "${replicas}"`);
  if (store === 'sqlite' && replicas === '2') {
    throw new Error('--replicas 2 needs --store postgres: a SQLite file serves one connector process');
  }
  return { store, replicas: Number(replicas) };
}

export async function startDeployment(options: DeploymentOptions): Promise<Deployment> {
  let database: BenchDatabase | undefined;
  let databaseUrl = join(options.dir, 'bench.db');
  if (options.store === 'postgres') {
    database = await createBenchDatabase();
    databaseUrl = database.url;
  }
  const ports = Array.from({ length: options.replicas }, (_, index) => ({
    incoming: options.firstIncomingPort + 10 * index,
    outgoing: options.firstOutgoingPort + 10 * index,
  }));
  // Started together, as a deployment rolls out: migrations and the sandbox's books take turns.
  const started = await Promise.allSettled(
    ports.map((port) => startConnector({ ...options.env, DATABASE_URL: databaseUrl, OUTGOING_PORT: String(port.outgoing), OPERATIONS_PORT: '0' }, port.incoming)),
  );
  const connectors = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const failed = started.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(connectors.map((connector) => connector.stop()));
    await database?.drop();
    throw failed.reason;
  }
  return {
    store: options.store,
    connectors,
    incomingUrls: connectors.map((connector) => connector.incomingUrl),
    outgoingUrls: ports.map((port) => `http://127.0.0.1:${port.outgoing}`),
    databaseUrl,
    describe:
      options.store === 'sqlite'
        ? 'SQLite (WAL, log synced before each answer)'
        : `PostgreSQL (one database, DATABASE_POOL_MAX ${options.env['DATABASE_POOL_MAX'] ?? '10'} per replica)`,
    async stop() {
      await Promise.all(connectors.map((connector) => connector.stop()));
      await database?.drop();
    },
  };
}
