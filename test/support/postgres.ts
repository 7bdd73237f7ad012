import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { redactUrl } from '../../src/adapters/store/open-database.js';

/** The server the tests create their databases on, unless TEST_DATABASE_URL names another. */
export const DEFAULT_TEST_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

const CONNECT_TIMEOUT_MS = 5_000;
const STATEMENT_TIMEOUT_MS = 30_000;

export interface TestDatabase {
  /** cc_test_ followed by 16 random hex digits. */
  readonly name: string;
  /** The server URL with this database's name as its path. */
  readonly url: string;
  /** Drops the database, ending any session still connected to it. Safe to call twice. */
  drop(): Promise<void>;
}

export function testServerUrl(): string {
  const fromEnv = process.env['TEST_DATABASE_URL']?.trim();
  return fromEnv === undefined || fromEnv === '' ? DEFAULT_TEST_SERVER_URL : fromEnv;
}

/**
 * Creates a fresh, empty database for one test file. PostgreSQL is a required part of the test
 * run: when the server cannot be reached this throws, so that a run without it fails instead
 * of passing with the PostgreSQL tests left out.
 */
export async function createTestDatabase(serverUrl: string = testServerUrl()): Promise<TestDatabase> {
  const name = `cc_test_${randomBytes(8).toString('hex')}`;
  await onServer(serverUrl, async (client) => {
    await client.query(`create database ${pg.escapeIdentifier(name)}`);
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await onServer(serverUrl, async (client) => {
        await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
      });
    },
  };
}

async function onServer(serverUrl: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({
    connectionString: serverUrl,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'core-connector-tests',
  });
  try {
    await client.connect();
  } catch (error) {
    const reason = error instanceof Error ? error.message || error.name : String(error);
    throw new Error(
      `PostgreSQL is required by these tests and is not reachable at ${redactUrl(serverUrl)} (${reason}). ` +
        'Start it, or set TEST_DATABASE_URL to a server where the user may create databases.',
      { cause: error },
    );
  }
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
