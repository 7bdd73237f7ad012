import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../ports/logger.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { connectorMigrations } from './connector-migrations.js';
import { openDatabase, redactUrl } from './open-database.js';
import { PostgresDatabase } from './postgres-database.js';
import { SqliteDatabase, SqliteFileInUse } from './sqlite-database.js';

interface Logged {
  readonly level: string;
  readonly bindings: object;
  readonly message: string;
}

function recordingLogger(): { logger: Logger; lines: Logged[] } {
  const lines: Logged[] = [];
  const record =
    (level: string) =>
    (bindings: object, message: string): void => {
      lines.push({ level, bindings, message });
    };
  return {
    lines,
    logger: { fatal: record('fatal'), error: record('error'), warn: record('warn'), info: record('info'), debug: record('debug') },
  };
}

describe('openDatabase', () => {
  let postgres: TestDatabase | undefined;
  let directory = '';

  beforeAll(async () => {
    postgres = await createTestDatabase();
    directory = mkdtempSync(join(tmpdir(), 'cc-open-database-'));
  });

  afterAll(async () => {
    await postgres?.drop();
    if (directory !== '') rmSync(directory, { recursive: true, force: true });
  });

  it('opens a SQLite file for the sqlite kind', async () => {
    const path = join(directory, 'nested', 'connector.db');
    const { logger, lines } = recordingLogger();
    const database = await openDatabase({ kind: 'sqlite', location: path, poolMax: 10 }, logger);
    try {
      expect(database).toBeInstanceOf(SqliteDatabase);
      expect(database.dialect).toBe('sqlite');
      await database.migrate(connectorMigrations);
      expect(existsSync(path)).toBe(true);
      expect(lines).toStrictEqual([{ level: 'info', bindings: { store: 'sqlite', path }, message: 'database opened' }]);
    } finally {
      await database.close();
    }
  });

  it('keeps a SQLite file for one connector: a second opener is refused until the first closes (another process: test/e2e/adapters-startup.test.ts)', async () => {
    const path = join(directory, 'held', 'connector.db');
    const inUse = `the SQLite file ${path} is in use by another connector process (it holds ${path}.lock): one process per SQLite file; stop the other, or run several replicas on PostgreSQL`;
    const first = await openDatabase({ kind: 'sqlite', location: path, poolMax: 1 });
    await expect(openDatabase({ kind: 'sqlite', location: path, poolMax: 1 })).rejects.toThrow(new SqliteFileInUse(inUse));
    // The same file through a symbolic link is the same file.
    const linked = join(directory, 'linked.db');
    symlinkSync(path, linked);
    await expect(openDatabase({ kind: 'sqlite', location: linked, poolMax: 1 })).rejects.toThrow(
      new SqliteFileInUse(`the SQLite file ${linked} is in use by another connector process (it holds ${path}.lock): one process per SQLite file; stop the other, or run several replicas on PostgreSQL`),
    );
    await first.close();
    const second = await openDatabase({ kind: 'sqlite', location: path, poolMax: 1 });
    await second.migrate(connectorMigrations);
    await second.close();

  });

  it('opens a checked PostgreSQL pool for the postgres kind, logging the URL without its password', async () => {
    if (postgres === undefined) throw new Error('the test database was not created');
    const url = new URL(postgres.url);
    url.password = 'open-sesame';
    const { logger, lines } = recordingLogger();
    const database = await openDatabase({ kind: 'postgres', location: url.toString(), poolMax: 3 }, logger);
    try {
      expect(database).toBeInstanceOf(PostgresDatabase);
      expect(database.dialect).toBe('postgres');
      await database.migrate(connectorMigrations);
      await expect(database.health()).resolves.toBeUndefined();
      url.password = '***';
      expect(lines).toStrictEqual([
        { level: 'info', bindings: { store: 'postgres', database: url.toString(), poolMax: 3, preparedStatements: true, statementGroups: true }, message: 'database opened' },
      ]);
    } finally {
      await database.close();
    }
  });

  it('stops with a clear message, without the password, when PostgreSQL refuses the database', async () => {
    if (postgres === undefined) throw new Error('the test database was not created');
    const url = new URL(postgres.url);
    url.password = 'open-sesame';
    url.pathname = '/cc_missing_database';
    const { logger, lines } = recordingLogger();
    const opening = openDatabase({ kind: 'postgres', location: url.toString(), poolMax: 3 }, logger);
    url.password = '***';
    await expect(opening).rejects.toThrow(
      `PostgreSQL at ${url.toString()} is not usable: database "cc_missing_database" does not exist`,
    );
    expect(lines).toStrictEqual([]);
  });

  it('stops with a clear message, without the password, when PostgreSQL cannot be reached', async () => {
    const opening = openDatabase({ kind: 'postgres', location: 'postgres://cc:open-sesame@127.0.0.1:1/cc', poolMax: 3 });
    await expect(opening).rejects.toThrow(/^PostgreSQL at postgres:\/\/cc:\*\*\*@127\.0\.0\.1:1\/cc is not usable: .+/);
    await expect(opening).rejects.not.toThrow(/open-sesame/);
  });
});

describe('redactUrl', () => {
  it('hides the password', () => {
    expect(redactUrl('postgres://cc:s3cr%40t@db.example:5432/cc')).toBe('postgres://cc:***@db.example:5432/cc');
  });

  it('hides secret query parameters and keeps the others', () => {
    expect(redactUrl('postgresql://db.example/cc?sslmode=require&password=x&sslpassword=y&sslkey=/k.pem')).toBe(
      'postgresql://db.example/cc?sslmode=require&password=***&sslpassword=***&sslkey=***',
    );
  });

  it('leaves a URL without secrets as it is', () => {
    expect(redactUrl('postgres://postgres@127.0.0.1:5432/postgres')).toBe('postgres://postgres@127.0.0.1:5432/postgres');
  });

  it('shows nothing of a URL it cannot parse', () => {
    expect(redactUrl('postgres://cc:secret@[bad')).toBe('<unparseable URL>');
  });
});
