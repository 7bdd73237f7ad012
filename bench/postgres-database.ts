import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A fresh PostgreSQL database for one benchmark run, on the server at BENCH_DATABASE_URL
 * (default: the local server as the tests use it), dropped at the end of the run.
 */
export const DEFAULT_BENCH_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

export async function createBenchDatabase(serverUrl: string = process.env['BENCH_DATABASE_URL']?.trim() || DEFAULT_BENCH_SERVER_URL): Promise<BenchDatabase> {
  const name = `cc_bench_${randomBytes(6).toString('hex')}`;
  await onServer(serverUrl, `create database ${pg.escapeIdentifier(name)}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => onServer(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`),
  };
}

async function onServer(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5000, statement_timeout: 30_000, application_name: 'core-connector-bench' });
  try {
    await client.connect();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the PostgreSQL benchmark needs a server at BENCH_DATABASE_URL (default ${DEFAULT_BENCH_SERVER_URL}): ${reason}`, { cause: error });
  }
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
