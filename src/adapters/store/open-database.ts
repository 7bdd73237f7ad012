import type { StoreConfig } from '../../config.js';
import type { Logger } from '../../ports/logger.js';
import { PostgresDatabase } from './postgres-database.js';
import type { SqlDatabase } from './sql-database.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SqliteDatabase, holdFileLock } from './sqlite-database.js';

const REDACTED = '***';
/** Query parameters that pg reads as credentials, or that name key material. */
const SECRET_PARAMETER = /pass|secret|token|key/i;

/**
 * Opens the configured database. A PostgreSQL database is checked before it is returned, so
 * that an unreachable server or a wrong password stops the start-up with a clear message.
 */
export async function openDatabase(config: StoreConfig, logger?: Logger): Promise<SqlDatabase> {
  switch (config.kind) {
    case 'sqlite': {
      // One connector process per file: a second one (a second start, an old replica still
      // stopping) is refused here, before anything is read or migrated.
      if (config.location === ':memory:') return new SqliteDatabase(config.location);
      mkdirSync(dirname(config.location), { recursive: true });
      const release = holdFileLock(config.location);
      let database: SqliteDatabase;
      try {
        database = new SqliteDatabase(config.location, { onClose: release });
      } catch (error) {
        release();
        throw error;
      }
      logger?.info({ store: 'sqlite', path: config.location }, 'database opened');
      return database;
    }
    case 'postgres':
      return openPostgres(config, logger);
  }
}

async function openPostgres(config: StoreConfig, logger: Logger | undefined): Promise<SqlDatabase> {
  const where = redactUrl(config.location);
  const preparedStatements = config.preparedStatements !== false;
  const statementGroups = config.statementGroups !== false;
  const database = new PostgresDatabase({ url: config.location, poolMax: config.poolMax, preparedStatements, statementGroups, logger });
  try {
    await database.health();
  } catch (error) {
    await database.close();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`PostgreSQL at ${where} is not usable: ${reason}`, { cause: error });
  }
  logger?.info(
    { store: 'postgres', database: where, poolMax: config.poolMax, preparedStatements, statementGroups },
    'database opened',
  );
  return database;
}

/** The URL with its password and any secret-looking query parameter replaced, for logs and errors. */
export function redactUrl(text: string): string {
  if (!URL.canParse(text)) return '<unparseable URL>';
  const url = new URL(text);
  if (url.password !== '') url.password = REDACTED;
  for (const key of [...url.searchParams.keys()]) {
    if (SECRET_PARAMETER.test(key)) url.searchParams.set(key, REDACTED);
  }
  return url.toString();
}
