import { sql, type Selectable } from 'kysely';
import { ConnectorError, ERROR_CATALOGUE, assert, type ErrorName } from '../../../domain/errors.js';
import type { Money } from '../../../domain/money.js';
import { lockAccounts, minorOf, recordTransfer, saveAccount, type Account, type AccountRef, type BookContext } from './ledger-book.js';
import { changeShard, floatOf, shardOf, takeFromFloat } from './ledger-float.js';
import { positiveMinor } from './ledger-amounts.js';
import { debitRefusal, lockPayer, type Refusal } from './payer-lookup.js';
import type { DebitKind, DebitState, DebitsTable } from './sandbox-schema.js';

/**
 * Customer debits for outgoing payments: a collection moves money from the payer's account to
 * the float, a refund moves it back from the float (one account model: the float is where the
 * institution's Mojaloop money is, both ways). Both are recorded under their reference,
 * refusals included, so a retry gets the first answer and the status query reads stored state.
 *
 * Locking on PostgreSQL, as for holds (hold-operations.ts): operations on one reference take
 * turns on an advisory lock named by the reference (a refund also takes its original's, so two
 * refunds of one debit cannot both pass the "at most the original" check); then the customer's
 * account is locked, then one shard of the float (ledger-float.ts), just before the money moves.
 * Every ledger transaction locks at most one customer account and then the float's shards.
 */

export interface CollectOrder {
  readonly reference: string;
  readonly payerId: string;
  readonly amount: Money;
  /** True in the mobile-operator flow: the customer approves on the phone before money moves. */
  readonly pending: boolean;
}

export interface RefundOrder {
  readonly reference: string;
  readonly originalReference: string;
  readonly amount: Money;
  readonly payerId: string;
}

export interface DebitOutcome {
  readonly state: DebitState;
  readonly refusal?: Refusal;
}

interface Debit {
  readonly reference: string;
  readonly kind: DebitKind;
  readonly state: DebitState;
  readonly payerId: string;
  readonly accountId: string | null;
  readonly currency: string;
  readonly minor: bigint;
  readonly originalReference: string | null;
  readonly refusal: Refusal | undefined;
  readonly createdAt: string;
}

/**
 * How long a payment prompt waits for the customer's answer: 5 minutes, as the REST reference
 * institution's collections (docs/reference-core-banking-api.yaml). A pending collection older
 * than that, by the ledger's clock, is failed the first time an operation on its reference sees
 * it (a repeated collect, the customer's answer, a status query), under the reference's turn:
 * an answer and the expiry take turns, and whichever comes first decides.
 */
export const PROMPT_EXPIRY_MS = 5 * 60 * 1000;

const PROMPT_EXPIRED: Refusal = { errorName: 'PayerRejected', detail: 'the customer did not answer the payment prompt within 5 minutes' };

function promptExpired(debit: Debit, now: string): boolean {
  return debit.kind === 'collection' && debit.state === 'pending' && Date.parse(now) - Date.parse(debit.createdAt) >= PROMPT_EXPIRY_MS;
}

/** The debit as it stands once an expired prompt is failed (in the caller's transaction, under the reference's turn). */
async function expireDue(context: BookContext, debit: Debit): Promise<Debit> {
  if (!promptExpired(debit, context.now)) return debit;
  await finishCollection(context, debit, PROMPT_EXPIRED);
  return { ...debit, state: 'failed', refusal: PROMPT_EXPIRED };
}

export async function collectDebit(context: BookContext, order: CollectOrder): Promise<DebitOutcome> {
  const minor = positiveMinor(order.amount);
  await lockDebitReferences(context, [order.reference]);
  // Refused early, before anything is recorded, in a currency the books have no float in.
  const float = await floatOf(context, order.amount.currency);
  const existing = await findDebit(context, order.reference);
  if (existing !== undefined) {
    const same = existing.kind === 'collection' && existing.payerId === order.payerId && sameAmount(existing, order.amount, minor);
    if (!same) throw new ConnectorError('ModifiedRequest', 'another debit was made under this reference');
    return outcomeOf(await expireDue(context, existing));
  }
  const lookup = await lockPayer(context, order.payerId);
  const payer = 'payer' in lookup ? lookup.payer : undefined;
  // A prompt checks the account, not the funds: the customer may top up before approving.
  const refusal = 'refusal' in lookup ? lookup.refusal : debitRefusal(lookup.payer, order.amount.currency, order.pending ? 0n : minor);
  const state: DebitState = refusal !== undefined ? 'failed' : order.pending ? 'pending' : 'succeeded';
  const identity = { kind: 'collection' as const, reference: order.reference, payerId: order.payerId, accountId: payer?.accountId ?? null };
  await insertDebit(context, identity, order.amount.currency, minor, state, refusal, null);
  if (state === 'succeeded' && payer !== undefined) await payIntoFloat(context, order.reference, payer, float, minor);
  return refusal === undefined ? { state } : { state, refusal };
}

/** The customer's answer to a payment prompt; a pending collection moves money only when approved. */
export async function settlePendingCollection(
  context: BookContext,
  reference: string,
  approved: boolean,
  options: { readonly firstAnswerOnly?: boolean } = {},
): Promise<DebitOutcome> {
  await lockDebitReferences(context, [reference]);
  const found = await findDebit(context, reference);
  if (found === undefined || found.kind !== 'collection') throw new ConnectorError('TransferNotFound', 'no collection under this reference');
  const debit = await expireDue(context, found);
  if (debit.state !== 'pending' && options.firstAnswerOnly === true) {
    throw new ConnectorError('TransferStateConflict', `the collection already ${debit.state}${debit.refusal?.detail === PROMPT_EXPIRED.detail ? ' (the prompt expired)' : ''}`);
  }
  if (debit.state !== 'pending') {
    if ((debit.state === 'succeeded') !== approved) throw new ConnectorError('TransferStateConflict', `the collection already ${debit.state}`);
    return outcomeOf(debit);
  }
  if (!approved) return finishCollection(context, debit, { errorName: 'PayerRejected', detail: 'the customer declined the payment prompt' });
  assert(debit.accountId !== null, `sandbox: pending collection ${reference} has no account`);
  const payer = (await lockAccounts(context, [debit.accountId])).get(debit.accountId);
  assert(payer !== undefined, `sandbox: payer account of ${reference} vanished`);
  const refusal = debitRefusal(payer, debit.currency, debit.minor);
  if (refusal !== undefined) return finishCollection(context, debit, refusal);
  await payIntoFloat(context, reference, payer, await floatOf(context, debit.currency), debit.minor);
  return finishCollection(context, debit, undefined);
}

export async function refundDebit(context: BookContext, order: RefundOrder): Promise<void> {
  const minor = positiveMinor(order.amount);
  await lockDebitReferences(context, [order.reference, order.originalReference]);
  const float = await floatOf(context, order.amount.currency);
  const existing = await findDebit(context, order.reference);
  if (existing !== undefined) {
    const same =
      existing.kind === 'refund' &&
      existing.originalReference === order.originalReference &&
      existing.payerId === order.payerId &&
      sameAmount(existing, order.amount, minor);
    if (!same) throw new ConnectorError('ModifiedRequest', 'another debit or refund was made under this reference');
    return;
  }
  const original = await findDebit(context, order.originalReference);
  if (original === undefined || original.kind !== 'collection') throw new ConnectorError('TransferNotFound', 'no debit under the original reference');
  if (original.state !== 'succeeded') throw new ConnectorError('TransferStateConflict', `the original debit is ${original.state}: nothing to refund`);
  assert(original.accountId !== null, `sandbox: collection ${original.reference} has no account`);
  const lookup = await lockPayer(context, order.payerId);
  if (!('payer' in lookup) || lookup.payer.accountId !== original.accountId) {
    throw new ConnectorError('ModifiedRequest', 'the payer differs from the original debit');
  }
  if (original.currency !== order.amount.currency) throw new ConnectorError('ModifiedRequest', 'the currency differs from the original debit');
  const refunded = await refundedSoFar(context, original.reference);
  if (refunded + minor > original.minor) throw new ConnectorError('ModifiedRequest', 'refunds would exceed the original debit');
  const identity = { kind: 'refund' as const, reference: order.reference, payerId: order.payerId, accountId: original.accountId };
  await insertDebit(context, identity, order.amount.currency, minor, 'succeeded', undefined, original.reference);
  // Thrown inside the transaction: the refund recorded above is rolled back, and a retry tries again.
  if (!(await takeFromFloat(context, float.accountId, shardOf(order.reference, context.floatLane), { balance: -minor, held: 0n }))) {
    throw new ConnectorError('PayeeInsufficientLiquidity', 'the float cannot pay this refund now');
  }
  // The customer's own money goes back whatever the account's status now is.
  await recordTransfer(context, `refund:${order.reference}`, float, lookup.payer, minor);
  lookup.payer.balance += minor;
  await saveAccount(context, lookup.payer);
}

export async function debitState(context: BookContext, reference: string): Promise<DebitState | undefined> {
  return (await findDebit(context, reference))?.state;
}

/**
 * Where a debit stands, for the status query, once a pending collection it finds is past its
 * prompt's expiry: then failed, in this transaction under the reference's turn. Undefined for none.
 */
export async function settledDebitState(context: BookContext, reference: string): Promise<DebitState | undefined> {
  await lockDebitReferences(context, [reference]);
  const debit = await findDebit(context, reference);
  return debit === undefined ? undefined : (await expireDue(context, debit)).state;
}

/**
 * Moves a collected amount from the payer (locked by the caller) into the float: the postings,
 * the payer's balance, then the shard of the reference, the float's row being changed last.
 */
async function payIntoFloat(context: BookContext, reference: string, payer: Account, float: AccountRef, minor: bigint): Promise<void> {
  await recordTransfer(context, `collect:${reference}`, payer, float, minor);
  payer.balance -= minor;
  await saveAccount(context, payer);
  await changeShard(context, float.accountId, shardOf(reference, context.floatLane), { balance: minor, held: 0n });
}

/**
 * Operations on the same debit references take turns (PostgreSQL): transaction-level advisory
 * locks in the debits' own key space, taken in one sorted order so that two refunds naming each
 * other's references cannot deadlock. SQLite's write transaction is already exclusive.
 */
async function lockDebitReferences(context: BookContext, references: readonly string[]): Promise<void> {
  if (!context.lockRows) return;
  for (const reference of [...new Set(references)].sort()) {
    await sql`select pg_advisory_xact_lock(${DEBIT_LOCK_SPACE}::integer, hashtext(${reference}))`.execute(context.trx);
  }
}

/** "debt" in ASCII, as a 32-bit key space for lockDebitReferences (holds use "hold"). */
const DEBIT_LOCK_SPACE = 0x64656274;

async function finishCollection(context: BookContext, debit: Debit, refusal: Refusal | undefined): Promise<DebitOutcome> {
  const state: DebitState = refusal === undefined ? 'succeeded' : 'failed';
  await context.trx
    .updateTable('sandbox_debits')
    .set({ state, error_name: refusal?.errorName ?? null, error_detail: refusal?.detail ?? null, updated_at: context.now })
    .where('reference', '=', debit.reference)
    .execute();
  return refusal === undefined ? { state } : { state, refusal };
}

async function refundedSoFar(context: BookContext, originalReference: string): Promise<bigint> {
  const rows = await context.trx
    .selectFrom('sandbox_debits')
    .select('amount')
    .where('original_reference', '=', originalReference)
    .where('kind', '=', 'refund')
    .where('state', '=', 'succeeded')
    .execute();
  return rows.reduce((sum, row) => sum + minorOf(row.amount), 0n);
}

function sameAmount(debit: Debit, amount: Money, minor: bigint): boolean {
  return debit.currency === amount.currency && debit.minor === minor;
}

function outcomeOf(debit: Debit): DebitOutcome {
  return debit.refusal === undefined ? { state: debit.state } : { state: debit.state, refusal: debit.refusal };
}

interface DebitIdentity {
  readonly kind: DebitKind;
  readonly reference: string;
  readonly payerId: string;
  readonly accountId: string | null;
}

async function insertDebit(
  context: BookContext,
  identity: DebitIdentity,
  currency: string,
  minor: bigint,
  state: DebitState,
  refusal: Refusal | undefined,
  originalReference: string | null,
): Promise<void> {
  await context.trx
    .insertInto('sandbox_debits')
    .values({
      reference: identity.reference,
      kind: identity.kind,
      state,
      payer_id: identity.payerId,
      account_id: identity.accountId,
      currency,
      amount: minor.toString(),
      original_reference: originalReference,
      error_name: refusal?.errorName ?? null,
      error_detail: refusal?.detail ?? null,
      created_at: context.now,
      updated_at: context.now,
    })
    .execute();
}

async function findDebit(context: BookContext, reference: string): Promise<Debit | undefined> {
  const row = await context.trx.selectFrom('sandbox_debits').selectAll().where('reference', '=', reference).executeTakeFirst();
  return row === undefined ? undefined : debitFromRow(row);
}

const KINDS: readonly DebitKind[] = ['collection', 'refund'];
const STATES: readonly DebitState[] = ['pending', 'succeeded', 'failed'];

function debitFromRow(row: Selectable<DebitsTable>): Debit {
  const kind = KINDS.find((candidate) => candidate === row.kind);
  const state = STATES.find((candidate) => candidate === row.state);
  assert(kind !== undefined && state !== undefined, `sandbox: stored debit ${row.reference} is ${row.kind}/${row.state}`);
  return {
    reference: row.reference,
    kind,
    state,
    payerId: row.payer_id,
    accountId: row.account_id,
    currency: row.currency,
    minor: minorOf(row.amount),
    originalReference: row.original_reference,
    refusal: row.error_name === null ? undefined : { errorName: errorNameOf(row.error_name), detail: row.error_detail ?? '' },
    createdAt: row.created_at,
  };
}

function errorNameOf(text: string): ErrorName {
  const name = Object.keys(ERROR_CATALOGUE).find((candidate): candidate is ErrorName => candidate === text);
  assert(name !== undefined, `sandbox: stored error name "${text}"`);
  return name;
}
