import { describe, expect, it } from 'vitest';
import { isStoreOutage } from './store-outage.js';

const coded = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('isStoreOutage', () => {
  it('takes a database that cannot be reached or cannot take the work now for an outage', () => {
    for (const error of [
      coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      coded('read ECONNRESET', 'ECONNRESET'),
      coded('terminating connection due to administrator command', '57P01'),
      coded('the database system is starting up', '57P03'),
      coded('sorry, too many clients already', '53300'),
      coded('could not extend file: No space left on device', '53100'),
      coded('connection failure', '08006'),
      coded('database is locked', 'SQLITE_BUSY'),
      coded('database or disk is full', 'SQLITE_FULL'),
      coded('disk I/O error', 'SQLITE_IOERR_WRITE'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('connection lost during a group commit; whether it was applied is unknown: read ECONNRESET'),
      new Error('a step failed', { cause: coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED') }),
    ]) {
      expect([error.message, isStoreOutage(error)]).toEqual([error.message, true]);
    }
  });

  it('leaves a statement\'s own error, a bug, and anything that is not an Error to the unexpected errors', () => {
    for (const error of [
      coded('duplicate key value violates unique constraint "quotes_pkey"', '23505'),
      coded('canceling statement due to lock timeout', '55P03'),
      coded('UNIQUE constraint failed: quotes.quote_id', 'SQLITE_CONSTRAINT_PRIMARYKEY'),
      coded('attempt to write a readonly database', 'SQLITE_READONLY'),
      coded('database table is locked', 'SQLITE_LOCKED'),
      new Error('Client was closed and is not queryable'),
      new TypeError("Cannot read properties of undefined (reading 'state')"),
      new Error('a step failed', { cause: new Error('still nothing to do with the database') }),
      'ECONNREFUSED',
      { code: 'ECONNREFUSED', message: 'not an Error' },
    ]) {
      expect([String(error instanceof Error ? error.message : JSON.stringify(error)), isStoreOutage(error)]).toEqual([String(error instanceof Error ? error.message : JSON.stringify(error)), false]);
    }
  });
});
