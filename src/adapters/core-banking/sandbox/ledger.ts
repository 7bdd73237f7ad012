import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { formatMinorUnits, toMinorUnits, type Money } from '../../../domain/money.js';
import type { SqlDatabase } from '../../store/sql-database.js';
import { findCustomer, insertCustomer, listCustomers } from './customer-records.js';
import { collectDebit, debitState, refundDebit, settledDebitState, settlePendingCollection, type DebitOutcome } from './debit-operations.js';
import { commitHold, commitHoldAtOnce, holdState, releaseHold, reserveHold, reserveHoldAtOnce, type AtOnceReserve } from './hold-operations.js';
import { positiveMinor } from './ledger-amounts.js';
import { checkConservation, readBalances, type AccountBalance, type ConservationReport } from './ledger-audit.js';
import { fundAccount, lockAccounts, type Account, type BookContext } from './ledger-book.js';
import { ALL_FLOAT_SHARDS, ShardShort, fundFloat, openShards, type FloatLane } from './ledger-float.js';
import type { SandboxAccounts, SandboxCustomer } from './sandbox-accounts.js';
import type { AccountKind, SandboxDb, SandboxSchema } from './sandbox-schema.js';

/** Key of the advisory lock taken while opening the books: "ccsandbx" read as a 64-bit integer. */
const OPEN_BOOKS_LOCK_KEY = '7161694694750315128';

export interface SandboxMovement {
  readonly reference: string;
  readonly direction: 'customer-credit' | 'customer-debit';
  readonly currency: string;
  /** Decimal string. */
  readonly amount: string;
  readonly bookedAt: string;
  readonly institutionId: string;
}

export type SandboxTransactionStatus = 'succeeded' | 'failed' | 'pending' | 'not-found';

export interface SandboxLedgerOptions {
  /**
   * The float shards this process takes from and credits to (ledger-float.ts): all of them by
   * default; on PostgreSQL the connector gives each replica a lane of its own (app.ts).
   */
  readonly floatLane?: FloatLane | undefined;
}

/**
 * The sandbox institution's books: a double-entry ledger in the connector's own SQL database.
 * Every operation is one transaction that reads, computes in bigint minor units and writes
 * back, and is idempotent on its reference: repeating it answers the same and moves nothing.
 */
export class SandboxLedger {
  readonly #database: SqlDatabase;
  readonly #clock: () => Date;
  readonly #floatLane: FloatLane;

  constructor(database: SqlDatabase, clock: () => Date = () => new Date(), options: SandboxLedgerOptions = {}) {
    this.#database = database;
    this.#clock = clock;
    this.#floatLane = options.floatLane ?? ALL_FLOAT_SHARDS;
  }

  /** The float shards this process uses (for the start-up log and tests). */
  get floatLane(): FloatLane {
    return this.#floatLane;
  }

  /**
   * Holds `amount` of the float of its currency for a payee. On PostgreSQL one statement
   * (reserveHoldAtOnce), finished in a transaction when its shard is short or another
   * transaction's hold under the reference was committed after the statement began.
   */
  async reserve(reference: string, amount: Money, payeeAccountId: string): Promise<void> {
    const request = { reference, amount, payeeAccountId };
    if (this.#database.dialect === 'postgres') {
      let outcome: AtOnceReserve;
      try {
        outcome = await this.#database.autocommit<SandboxSchema, AtOnceReserve>((db) => reserveHoldAtOnce(this.#context(db), request));
      } catch (error) {
        if (!(error instanceof ShardShort)) throw error;
        return this.#write((context) => reserveHold(context, request), { spreadFloat: true });
      }
      if (outcome === 'reserved') return;
      return this.#write((context) => reserveHold(context, request));
    }
    return this.#write((context) => reserveHold(context, request));
  }

  /** Moves the amount held under `reference` from the float to the payee (on PostgreSQL in one statement). */
  commit(reference: string, amount: Money, payeeAccountId: string): Promise<void> {
    const request = { reference, amount, payeeAccountId };
    if (this.#database.dialect === 'postgres') return this.#database.autocommit<SandboxSchema, void>((db) => commitHoldAtOnce(this.#context(db), request));
    return this.#write((context) => commitHold(context, request));
  }

  /** Gives the amount held under `reference` back to the float. */
  release(reference: string): Promise<void> {
    return this.#write((context) => releaseHold(context, reference));
  }

  /**
   * Debits a customer into the float. With `pending` the debit waits for
   * the customer's answer (settleCollection). A refusal is recorded, then thrown.
   */
  async collect(reference: string, payerId: string, amount: Money, options: { readonly pending?: boolean } = {}): Promise<DebitOutcome> {
    const outcome = await this.#write((context) => collectDebit(context, { reference, payerId, amount, pending: options.pending ?? false }));
    return answer(outcome);
  }

  /**
   * Simulates the customer approving (true) or declining (false) a pending collection on the
   * phone. Answers the outcome: approval fails when the funds are short by then. A prompt
   * unanswered for PROMPT_EXPIRY_MS (5 minutes) has failed: answering it then conflicts.
   */
  settleCollection(reference: string, succeeded: boolean): Promise<DebitOutcome> {
    return this.#write((context) => settlePendingCollection(context, reference, succeeded));
  }

  /**
   * An operator's answer to a pending payment prompt, for the customer (the operations server's
   * POST /operations/sandbox/collections/{reference}): as settleCollection, but only the first
   * answer is taken. TransferNotFound for no collection; TransferStateConflict once it was
   * answered or expired.
   */
  answerPrompt(reference: string, approved: boolean): Promise<DebitOutcome> {
    return this.#write((context) => settlePendingCollection(context, reference, approved, { firstAnswerOnly: true }));
  }

  /** Pays a customer back from the float, at most what `originalReference` debited. */
  refund(reference: string, originalReference: string, amount: Money, payerId: string): Promise<void> {
    return this.#write((context) => refundDebit(context, { reference, originalReference, amount, payerId }));
  }

  /** Where a collection, refund or reservation stands, from stored state. */
  async transactionStatus(reference: string): Promise<SandboxTransactionStatus> {
    // A read: it need not queue behind writes, and a reference's row answers on its own.
    const context: BookContext = { ...this.#context(this.#database.quickReader<SandboxSchema>()), lockRows: false };
    const debit = await debitState(context, reference);
    // A prompt still pending may have expired: the write decides it under the reference's turn.
    if (debit === 'pending') return (await this.#write((writing) => settledDebitState(writing, reference))) ?? 'not-found';
    if (debit !== undefined) return debit;
    const hold = await holdState(context, reference);
    switch (hold) {
      case undefined:
        return 'not-found';
      case 'HELD':
        return 'pending';
      case 'CAPTURED':
        return 'succeeded';
      case 'RELEASED':
        return 'failed';
    }
  }

  /**
   * Credits an account with money from outside the books (a FUNDING posting): the only
   * operation that changes the total. Idempotent on `reference` when one is given.
   */
  async fund(accountId: string, amount: Money, reference: string = randomUUID()): Promise<void> {
    const minor = positiveMinor(amount);
    await this.#write(async (context) => {
      const account = await this.#accountIn(context, accountId, amount.currency);
      const movementId = `fund:${reference}`;
      const done = await context.trx.selectFrom('sandbox_postings').select(['account_id', 'amount']).where('movement_id', '=', movementId).executeTakeFirst();
      if (done === undefined) return account.kind === 'float' ? fundFloat(context, movementId, account, minor) : fundAccount(context, movementId, account, minor);
      if (done.account_id !== accountId || done.amount !== minor.toString()) throw new ConnectorError('ModifiedRequest', 'another funding under this reference');
    });
  }

  /** An operator's change of an account's status (a closure, a bar, a block, a reopening). */
  async setAccountStatus(accountId: string, status: Account['status']): Promise<void> {
    await this.#write(async (context) => {
      const account = (await lockAccounts(context, [accountId])).get(accountId);
      if (account === undefined) throw new ConnectorError('ValidationFailed', `no sandbox account ${accountId}`);
      await context.trx.updateTable('sandbox_accounts').set({ status, updated_at: context.now }).where('account_id', '=', accountId).execute();
    });
  }

  /** Records that the customer behind `id` no longer consents to its registration (idempotent). */
  async withdrawConsent(id: PartyId): Promise<void> {
    await this.#write(async (context) => {
      await context.trx
        .insertInto('sandbox_consent_withdrawals')
        .values({ id_type: id.idType, id_value: id.idValue, id_sub_value: id.idSubValue ?? '', withdrawn_at: context.now })
        .onConflict((oc) => oc.doNothing())
        .execute();
    });
  }

  /** Whether the customer behind `id` consents to its registration with the platform (yes unless withdrawn). */
  async consents(id: PartyId): Promise<boolean> {
    const row = await this.#database
      .quickReader<SandboxSchema>()
      .selectFrom('sandbox_consent_withdrawals')
      .select('id_type')
      .where('id_type', '=', id.idType)
      .where('id_value', '=', id.idValue)
      .where('id_sub_value', '=', id.idSubValue ?? '')
      .executeTakeFirst();
    return row === undefined;
  }

  async listCustomers(): Promise<SandboxCustomer[]> {
    return listCustomers(this.#database.reader<SandboxSchema>());
  }

  async findCustomer(id: PartyId): Promise<SandboxCustomer | undefined> {
    return findCustomer(this.#database.quickReader<SandboxSchema>(), id);
  }

  /** Every account, in account-id order; one statement, so one consistent state. */
  async balances(): Promise<AccountBalance[]> {
    return readBalances(this.#database.reader<SandboxSchema>());
  }

  /** Audits the books inside one transaction, so that every figure comes from the same state. */
  async conservationCheck(): Promise<ConservationReport> {
    return this.#write(async (context) => {
      // Its reads from one snapshot: under READ COMMITTED each would see the commits made before
      // it, and a transfer settled between two of them would look like broken books.
      if (context.lockRows) await sql`set transaction isolation level repeatable read`.execute(context.trx);
      return checkConservation(context.trx);
    });
  }

  /**
   * Opens the float and the customers, each funded with its
   * opening balance, in one transaction; does nothing (and answers false) when any account
   * exists already, so a restart never funds the books twice.
   */
  openBooks(accounts: SandboxAccounts): Promise<boolean> {
    return this.#write(async (context) => {
      // Replicas starting together on an empty PostgreSQL database would each find no account
      // and open the books twice, and all but one would stop on the primary key: take turns.
      // The lock ends with the transaction; the next opener then sees the books open.
      if (context.lockRows) await sql`select pg_advisory_xact_lock(${OPEN_BOOKS_LOCK_KEY}::bigint)`.execute(context.trx);
      const existing = await context.trx.selectFrom('sandbox_accounts').select('account_id').limit(1).executeTakeFirst();
      if (existing !== undefined) return false;
      const { currency } = accounts;
      await this.#open(context, accounts.float.accountId, 'float', currency, 'active', accounts.float.balance);
      for (const customer of accounts.customers) {
        await this.#open(context, customer.accountId, 'customer', currency, customer.status, customer.balance);
        await insertCustomer(context.trx, customer);
      }
      return true;
    });
  }

  /**
   * What the sandbox booked for customers in a period, under the references it was given: each
   * captured hold is a payee credit, each succeeded collection a customer debit and each
   * succeeded refund a customer credit. Reserved and released holds moved no customer's money.
   */
  async movements(from: string, to: string): Promise<SandboxMovement[]> {
    const db = this.#database.listReader<SandboxSchema>();
    const holds = await db
      .selectFrom('sandbox_holds')
      .select(['reference', 'currency', 'amount', 'updated_at'])
      .where('state', '=', 'CAPTURED')
      .where('updated_at', '>=', from)
      .where('updated_at', '<', to)
      .execute();
    const debits = await db
      .selectFrom('sandbox_debits')
      .select(['reference', 'kind', 'currency', 'amount', 'updated_at'])
      .where('state', '=', 'succeeded')
      .where('updated_at', '>=', from)
      .where('updated_at', '<', to)
      .execute();
    // Both tables keep amounts in minor units.
    return [
      ...holds
        .filter((hold): hold is typeof hold & { currency: string } => hold.currency !== null)
        .map((hold) => ({
          reference: hold.reference,
          direction: 'customer-credit' as const,
          currency: hold.currency,
          amount: formatMinorUnits(BigInt(hold.amount), hold.currency),
          bookedAt: hold.updated_at,
          institutionId: `hold:${hold.reference}`,
        })),
      ...debits.map((debit) => ({
        reference: debit.reference,
        direction: debit.kind === 'refund' ? ('customer-credit' as const) : ('customer-debit' as const),
        currency: debit.currency,
        amount: formatMinorUnits(BigInt(debit.amount), debit.currency),
        bookedAt: debit.updated_at,
        institutionId: `${debit.kind}:${debit.reference}`,
      })),
    ];
  }

  /** A real query on the ledger's tables. */
  async health(): Promise<void> {
    await this.#database.reader<SandboxSchema>().selectFrom('sandbox_accounts').select('account_id').limit(1).execute();
  }

  async #open(context: BookContext, accountId: string, kind: AccountKind, currency: string, status: Account['status'], balance: string): Promise<void> {
    await context.trx
      .insertInto('sandbox_accounts')
      .values({ account_id: accountId, kind, currency, balance: '0', held: '0', status, created_at: context.now, updated_at: context.now })
      .execute();
    const minor = toMinorUnits(balance, currency);
    const account: Account = { accountId, kind, currency, status, balance: 0n, held: 0n };
    if (kind === 'float') await openShards(context, accountId);
    if (minor > 0n) await (kind === 'float' ? fundFloat(context, `open:${accountId}`, account, minor) : fundAccount(context, `open:${accountId}`, account, minor));
  }

  async #accountIn(context: BookContext, accountId: string, currency: string): Promise<Account> {
    const account = (await lockAccounts(context, [accountId])).get(accountId);
    if (account === undefined) throw new ConnectorError('ValidationFailed', `no sandbox account ${accountId}`);
    if (account.currency !== currency) throw new ConnectorError('UnsupportedCurrency', `account ${accountId} is in ${account.currency}`);
    return account;
  }

  /**
   * Runs an operation as one transaction. When it finds its float shard short (ShardShort), the
   * transaction is rolled back and the operation runs once more, spreading the float
   * (ledger-float.ts): it is idempotent on its reference and nothing of the first run stayed.
   * With `spreadFloat` the first run spreads already.
   */
  async #write<T>(work: (context: BookContext) => Promise<T>, options: { readonly spreadFloat?: boolean } = {}): Promise<T> {
    try {
      return await this.#database.transaction<SandboxSchema, T>((trx) => work({ ...this.#context(trx), spreadFloat: options.spreadFloat === true }));
    } catch (error) {
      if (!(error instanceof ShardShort)) throw error;
      return this.#database.transaction<SandboxSchema, T>((trx) => work({ ...this.#context(trx), spreadFloat: true }));
    }
  }

  #context(trx: SandboxDb): BookContext {
    return { trx, lockRows: this.#database.dialect === 'postgres', now: this.#clock().toISOString(), books: this.#database, floatLane: this.#floatLane };
  }

}

/** Turns a recorded refusal into the error it stands for; other outcomes are answered as they are. */
function answer(outcome: DebitOutcome): DebitOutcome {
  if (outcome.refusal !== undefined) throw new ConnectorError(outcome.refusal.errorName, outcome.refusal.detail);
  return outcome;
}
