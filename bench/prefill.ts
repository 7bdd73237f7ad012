import { randomBytes, randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { BenchStore } from './replicas-deployment.js';

/**
 * --prefill <n>: before the scenarios, the store is given n incoming transfers the payee side
 * completed over the 60 days before, so that the payments run against a store of a bank's size
 * rather than an empty one. Each is written straight into the tables as the connector writes a
 * completed lifecycle: its quote, the transfer COMMITTED, its four audit entries, the sandbox's
 * captured hold and the movement's two postings, with random ids as the switch's are; the float's
 * shards and the payees' balances are then moved by the same amounts, so the sandbox's books
 * still balance (conservationCheck). The payees are the sandbox's active MSISDN customers.
 *
 * Written in chunks of CHUNK transfers, each one transaction, while the connectors wait with
 * nothing to do; on SQLite the log is then checkpointed, on PostgreSQL the tables analysed, so
 * the scenarios start as on a store that has been running.
 */
const CHUNK = 10_000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Each prefilled transfer: 10 sent, 9.9 received, a fee of 0.1, in a currency of two decimals. */
const AMOUNT = { sent: '10', received: '9.9', fee: '0.1', receivedMinor: 990n } as const;

interface Payee {
  readonly accountId: string;
  readonly idValue: string;
}

interface Books {
  readonly floatAccountId: string;
  readonly currency: string;
  readonly shards: readonly number[];
  readonly payees: readonly Payee[];
}

/** One table's rows of a chunk, column by column. */
type Columns = Record<string, Array<string | number | null>>;

interface Chunk {
  readonly quotes: Columns;
  readonly inbound_transfers: Columns;
  readonly audit_events: Columns;
  readonly sandbox_holds: Columns;
  readonly sandbox_postings: Columns;
}

export interface Prefilled {
  readonly transfers: number;
  readonly seconds: number;
}

export async function prefill(store: BenchStore, databaseUrl: string, count: number, now: Date = new Date()): Promise<Prefilled> {
  if (!Number.isSafeInteger(count) || count < 1) throw new Error(`--prefill must be a positive whole number, not ${count}`);
  const started = performance.now();
  if (store === 'sqlite') await prefillSqlite(databaseUrl, count, now);
  else await prefillPostgres(databaseUrl, count, now);
  return { transfers: count, seconds: (performance.now() - started) / 1000 };
}

async function prefillSqlite(path: string, count: number, now: Date): Promise<void> {
  const db = new BetterSqlite3(path);
  try {
    db.pragma('busy_timeout = 10000');
    const books = sqliteBooks(db);
    const inserts = new Map<keyof Chunk, BetterSqlite3.Statement>();
    const insert = db.transaction((chunk: Chunk) => {
      for (const [table, columns] of Object.entries(chunk) as Array<[keyof Chunk, Columns]>) {
        const names = Object.keys(columns);
        let statement = inserts.get(table);
        if (statement === undefined) {
          statement = db.prepare(`insert into ${table} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`);
          inserts.set(table, statement);
        }
        const rows = columns[names[0] as string]?.length ?? 0;
        for (let row = 0; row < rows; row += 1) statement.run(...names.map((name) => columns[name]?.[row] ?? null));
      }
    });
    const moved = new Moved();
    for (let first = 0; first < count; first += CHUNK) insert.immediate(chunkOf(books, first, Math.min(count, first + CHUNK), count, now, moved));
    db.transaction(() => {
      for (const [accountId, minor] of moved.customers) {
        const row = db.prepare('select balance from sandbox_accounts where account_id = ?').get(accountId) as { balance: string };
        db.prepare('update sandbox_accounts set balance = ? where account_id = ?').run(String(BigInt(row.balance) + minor), accountId);
      }
      for (const [shard, minor] of moved.shards) {
        const row = db.prepare('select balance from sandbox_float_shards where account_id = ? and shard = ?').get(books.floatAccountId, shard) as { balance: string };
        db.prepare('update sandbox_float_shards set balance = ? where account_id = ? and shard = ?').run(String(BigInt(row.balance) - minor), books.floatAccountId, shard);
      }
    }).immediate();
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

function sqliteBooks(db: BetterSqlite3.Database): Books {
  const float = db.prepare("select account_id, currency from sandbox_accounts where kind = 'float' order by account_id limit 1").get() as { account_id: string; currency: string } | undefined;
  if (float === undefined) throw new Error('--prefill needs the sandbox institution (CBS_ADAPTER=sandbox): no float account');
  const shards = (db.prepare('select shard from sandbox_float_shards where account_id = ? order by shard').all(float.account_id) as Array<{ shard: number }>).map((row) => Number(row.shard));
  const payees = db
    .prepare("select c.account_id, c.id_value from sandbox_customers c join sandbox_accounts a on a.account_id = c.account_id where a.status = 'active' and c.id_type = 'MSISDN' order by c.account_id")
    .all() as Array<{ account_id: string; id_value: string }>;
  return checkedBooks({ floatAccountId: float.account_id, currency: float.currency, shards, payees: payees.map((row) => ({ accountId: row.account_id, idValue: row.id_value })) });
}

async function prefillPostgres(url: string, count: number, now: Date): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'core-connector-bench' });
  await client.connect();
  try {
    const books = await postgresBooks(client);
    const types = new Map<string, Map<string, string>>();
    for (const table of ['quotes', 'inbound_transfers', 'audit_events', 'sandbox_holds', 'sandbox_postings']) {
      const result = await client.query<{ column_name: string; data_type: string }>('select column_name, data_type from information_schema.columns where table_name = $1', [table]);
      types.set(table, new Map(result.rows.map((row) => [row.column_name, row.data_type])));
    }
    const moved = new Moved();
    for (let first = 0; first < count; first += CHUNK) {
      const chunk = chunkOf(books, first, Math.min(count, first + CHUNK), count, now, moved);
      await client.query('begin');
      for (const [table, columns] of Object.entries(chunk) as Array<[string, Columns]>) {
        // One statement per table: each column an array, turned back into rows by unnest.
        const names = Object.keys(columns);
        const typed = names.map((name, index) => `$${index + 1}::${types.get(table)?.get(name) === 'integer' ? 'integer' : 'text'}[]`);
        const casts = names.map((name) => (types.get(table)?.get(name) === 'integer' ? name : `${name}::${types.get(table)?.get(name) ?? 'text'}`));
        await client.query(`insert into ${table} (${names.join(', ')}) select ${casts.join(', ')} from unnest(${typed.join(', ')}) as t(${names.join(', ')})`, names.map((name) => columns[name]));
      }
      await client.query('commit');
    }
    await client.query('begin');
    for (const [accountId, minor] of moved.customers) {
      await client.query('update sandbox_accounts set balance = (balance::numeric + $1::numeric)::text where account_id = $2', [String(minor), accountId]);
    }
    for (const [shard, minor] of moved.shards) {
      await client.query('update sandbox_float_shards set balance = (balance::numeric - $1::numeric)::text where account_id = $2 and shard = $3', [String(minor), books.floatAccountId, shard]);
    }
    await client.query('commit');
    await client.query('vacuum analyze quotes, inbound_transfers, audit_events, sandbox_holds, sandbox_postings');
  } finally {
    await client.end();
  }
}

async function postgresBooks(client: pg.Client): Promise<Books> {
  const float = (await client.query<{ account_id: string; currency: string }>("select account_id, currency from sandbox_accounts where kind = 'float' order by account_id limit 1")).rows[0];
  if (float === undefined) throw new Error('--prefill needs the sandbox institution (CBS_ADAPTER=sandbox): no float account');
  const shards = (await client.query<{ shard: number }>('select shard from sandbox_float_shards where account_id = $1 order by shard', [float.account_id])).rows.map((row) => Number(row.shard));
  const payees = await client.query<{ account_id: string; id_value: string }>(
    "select c.account_id, c.id_value from sandbox_customers c join sandbox_accounts a on a.account_id = c.account_id where a.status = 'active' and c.id_type = 'MSISDN' order by c.account_id",
  );
  return checkedBooks({ floatAccountId: float.account_id, currency: float.currency, shards, payees: payees.rows.map((row) => ({ accountId: row.account_id, idValue: row.id_value })) });
}

function checkedBooks(books: Books): Books {
  if (books.shards.length === 0) throw new Error(`--prefill: the float ${books.floatAccountId} has no shards`);
  if (books.payees.length === 0) throw new Error('--prefill: the sandbox has no active MSISDN customer to pay');
  return books;
}

/** What the prefilled transfers moved: credited to each payee, taken from each float shard (minor units). */
class Moved {
  readonly customers = new Map<string, bigint>();
  readonly shards = new Map<number, bigint>();

  add(accountId: string, shard: number, minor: bigint): void {
    this.customers.set(accountId, (this.customers.get(accountId) ?? 0n) + minor);
    this.shards.set(shard, (this.shards.get(shard) ?? 0n) + minor);
  }
}

/** The rows of transfers [first, end) of `count`, spread evenly over the 60 days before `now`. */
function chunkOf(books: Books, first: number, end: number, count: number, now: Date, moved: Moved): Chunk {
  const chunk: Chunk = { quotes: {}, inbound_transfers: {}, audit_events: {}, sandbox_holds: {}, sandbox_postings: {} };
  const push = (columns: Columns, row: Record<string, string | number | null>): void => {
    for (const [name, value] of Object.entries(row)) (columns[name] ??= []).push(value);
  };
  const start = now.getTime() - 60 * DAY_MS;
  for (let index = first; index < end; index += 1) {
    const at = start + Math.floor((index * 60 * DAY_MS) / count);
    const iso = (offsetMs: number): string => new Date(at + offsetMs).toISOString();
    const payee = books.payees[index % books.payees.length] as Payee;
    const shard = books.shards[index % books.shards.length] as number;
    const quoteId = randomUUID();
    const transactionId = randomUUID();
    const transferId = randomUUID();
    const expiration = iso(60 * 60 * 1000);
    const response = {
      quoteId,
      transactionId,
      transferAmount: AMOUNT.sent,
      transferAmountCurrency: books.currency,
      payeeReceiveAmount: AMOUNT.received,
      payeeReceiveAmountCurrency: books.currency,
      payeeFspFeeAmount: AMOUNT.fee,
      payeeFspFeeAmountCurrency: books.currency,
      expiration,
    };
    push(chunk.quotes, {
      quote_id: quoteId, transaction_id: transactionId, request_hash: randomBytes(32).toString('hex'), amount_type: 'SEND', amount: AMOUNT.sent,
      currency: books.currency, transfer_amount: AMOUNT.sent, payee_receive_amount: AMOUNT.received, fee: AMOUNT.fee, payee_id_type: 'MSISDN',
      payee_id_value: payee.idValue, payee_id_sub_value: null, expiration, payer_keys: '[]', response: JSON.stringify(response), created_at: iso(0),
    });
    push(chunk.inbound_transfers, {
      transfer_id: transferId, quote_id: quoteId, request_hash: randomBytes(32).toString('hex'), state: 'COMMITTED', amount_type: 'SEND',
      transaction_type: 'TRANSFER', amount: AMOUNT.sent, currency: books.currency, transfer_amount: AMOUNT.sent, payee_receive_amount: AMOUNT.received,
      payer_id_type: 'MSISDN', payer_id_value: '254700000001', payee_id_type: 'MSISDN', payee_id_value: payee.idValue, payee_id_sub_value: null,
      payee_account_id: payee.accountId, completed_timestamp: iso(40), notified_state: 'COMPLETED', error_name: null, error_message: null, attempts: 0,
      next_attempt_at: null, last_error: null, needs_attention: 0, lease_until: null, created_at: iso(20), updated_at: iso(80), audit_seq: 4, prev_state: 'COMMITTING',
    });
    const steps = [
      ['created', null, 'RECEIVED'],
      ['transition', 'RECEIVED', 'RESERVED'],
      ['transition', 'RESERVED', 'COMMITTING'],
      ['transition', 'COMMITTING', 'COMMITTED'],
    ] as const;
    for (const [offset, [event, from, to]] of steps.entries()) {
      push(chunk.audit_events, {
        subject: 'incoming_transfer', subject_id: transferId, seq: offset + 1, at: iso(20 + 20 * offset), event, from_state: from, to_state: to,
        cause: 'request', operator: null, reason: null, evidence: null, attempt: 0, institution_reference: transferId, error_code: null, needs_attention: 0,
      });
    }
    const minor = String(AMOUNT.receivedMinor);
    push(chunk.sandbox_holds, {
      reference: transferId, state: 'CAPTURED', float_account_id: books.floatAccountId, payee_account_id: payee.accountId, currency: books.currency,
      amount: minor, created_at: iso(30), updated_at: iso(70), float_shard: shard,
    });
    for (const [leg, accountId, amount] of [[0, books.floatAccountId, `-${minor}`], [1, payee.accountId, minor]] as const) {
      push(chunk.sandbox_postings, { movement_id: `commit:${transferId}`, leg, kind: 'TRANSFER', account_id: accountId, currency: books.currency, amount, created_at: iso(70) });
    }
    moved.add(payee.accountId, shard, AMOUNT.receivedMinor);
  }
  return chunk;
}
