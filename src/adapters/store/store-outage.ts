/**
 * Whether an error says the database could not be reached or could not take the work now (as
 * opposed to a statement's own error or a bug): a refused or lost connection, a pool that could
 * not connect in time, a server shutting down or full, SQLite's file locked by another process, a
 * full disk, an I/O error. Such a request is answered 503 and logged as an outage, not as an
 * unexpected error: the work is durable up to its last commit, and the caller's retry (the switch
 * connector retries every 5xx) is answered from the stored record once the database is back.
 * The HTTP layer asks only about errors left once a request's own (a client hanging up mid-body,
 * also ECONNRESET) are sorted out.
 */
export function isStoreOutage(error: unknown): boolean {
  for (let depth = 0, current: unknown = error; depth < 4 && current instanceof Error; depth += 1, current = current.cause) {
    if (outage(current)) return true;
  }
  return false;
}

/** Errors of the network under a PostgreSQL connection (node's system error codes). */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01-57P03 (the server shutting down or
 * starting), 53xxx (insufficient resources: disk full, out of memory, too many connections).
 */
const POSTGRES_STATE = /^(08...|57P0[123]|53...)$/;
/**
 * SQLite result codes (better-sqlite3's `code`, extended codes included): the file locked by
 * another program, a full disk, an I/O error. Not LOCKED, READONLY or CANTOPEN, which say the
 * connector misuses or misconfigures its file: those stay unexpected errors, logged as such.
 */
const SQLITE_CODE = /^SQLITE_(BUSY|FULL|IOERR)/;
/**
 * What node-postgres and the connector's own commit groups say when a connection is gone (not
 * "Client was closed and is not queryable": a client used after its release is a bug).
 */
const LOST_CONNECTION = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection lost during a group commit)/;

function outage(error: Error): boolean {
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  if (code !== undefined && (NETWORK_CODES.has(code) || POSTGRES_STATE.test(code) || SQLITE_CODE.test(code))) return true;
  return LOST_CONNECTION.test(error.message);
}
