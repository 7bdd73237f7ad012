import { createHash } from 'node:crypto';
import { ConnectorError, isConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import type { Money } from '../../../domain/money.js';
import type { Clock } from '../../../ports/clock.js';
import type {
  CollectResult,
  CommitRequest,
  CoreBanking,
  CoreBankingCapabilities,
  InstitutionMovement,
  InstitutionTransactionStatus,
  Period,
  PartyDetails,
  RefundRequest,
  ReserveRequest,
} from '../../../ports/core-banking.js';
import { InstitutionHealthError } from '../../../ports/core-banking.js';
import { JsonNumber, stringifyDecimalJson } from '../shared/decimal-json.js';
import { InstitutionHttp, parse2xx, readWire, type InstitutionAnswer, type InstitutionRequest } from '../shared/institution-http.js';
import { amountForWire } from '../shared/wire-reader.js';
import type { FineractOptions } from './fineract-options.js';
import {
  SAVINGS_ACTIVE_STATUS,
  chooseSavingsAccount,
  declineFor,
  fundsCover,
  holdCommand,
  moneyCommand,
  readClientPage,
  readHoldTransaction,
  readTransactionPage,
  readBatchAnswers,
  readCommandResult,
  readError,
  readFloatAccount,
  readPaymentTypes,
  readSavingsAccount,
  readSavingsSummaries,
  toPartyDetails,
  tenantDayFormat,
  transactionDate,
  type FineractRole,
} from './fineract-transform.js';
import { FINERACT_TRANSACTION_TYPE, type FineractClient, type FineractHold, type FineractSavingsAccount, type FineractSavingsSummary } from './fineract-wire.js';
import { KeyedSerializer } from '../../../shared/keyed-serializer.js';

export interface FineractDeps {
  readonly clock: Clock;
}

/**
 * Adapter for Apache Fineract (bank flow). Parties are clients found by their external id, which
 * the institution sets to the identifier it registered with the platform (e.g. the MSISDN); the
 * payee account is the client's savings account. The prefunded float is one savings account.
 *
 * Money and idempotency. Every write carries an `Idempotency-Key` derived from our reference and
 * the step (Fineract 1.9 and later store each command with its result under action + entity +
 * key, and answer a repeat from that store with `x-served-from-cache: true`). So any attempt,
 * after a timeout, a 5xx, a crash or on another replica, repeats the whole operation step by step
 * and each step is booked at most once. The steps, in order:
 * - reserve: hold on the float (step `hold`);
 * - commit: hold (a repeat, which answers the hold's transaction id), then one batch in one
 *   Fineract transaction: deposit to the payee, release the hold, withdraw from the float
 *   (#together);
 * - release: hold (a repeat; if no hold was ever placed this places it, so the two cancel out),
 *   then release it;
 * - refund: one batch: deposit to the payer, withdraw from the float.
 * A repeat that finds the first attempt still running is refused by Fineract (425, or 409 as its
 * document says): the outcome is unknown and the caller tries again later; nothing is booked.
 * Inside a batch a twin cannot see the running attempt: one of them loses on the key's unique
 * record (403 data integrity) and is rolled back whole, an outage retried later (#together).
 * Fineract stores a failure under the key too, so a step has a sequence of keys and a replayed
 * failure, which booked nothing, moves the step to its next key (see #command).
 * No operation reads a statement: the float's history grows without bound. Where a state is
 * needed, the hold is read by its transaction id (Fineract reports `releaseTransactionId` 0 while
 * it is unreleased), and who released a released hold is told by the release keys (#releasedBy):
 * a commit refuses a hold an abort released, a release refuses a hold its commit released.
 * Operations on one reference take turns in this process; across replicas the keys keep each
 * step single.
 */
export class FineractCoreBanking implements CoreBanking {
  /** Operations on one reference take turns in this process, so they do not meet Fineract's 425 among themselves. */
  readonly #turns = new KeyedSerializer();
  readonly name = 'fineract';
  readonly capabilities: CoreBankingCapabilities = { outgoingFlow: 'bank', nativeHolds: true };
  readonly #http: InstitutionHttp;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #options: FineractOptions;
  readonly #clock: Clock;
  readonly #tenantDay: Intl.DateTimeFormat;

  constructor(options: FineractOptions, deps: FineractDeps) {
    this.#options = options;
    this.#clock = deps.clock;
    this.#tenantDay = tenantDayFormat(options.timeZone);
    this.#http = new InstitutionHttp({
      institution: 'fineract',
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutMs,
      connectTimeoutMs: options.connectTimeoutMs,
      maxResponseBytes: options.maxResponseBytes,
    });
    this.#headers = {
      authorization: `Basic ${Buffer.from(`${options.username}:${options.password}`, 'utf8').toString('base64')}`,
      'fineract-platform-tenantid': options.tenant,
    };
  }

  async lookupParty(id: PartyId): Promise<PartyDetails> {
    const found = await this.#findSavings(id.idValue, id.idSubValue, 'lookupParty', 'payee');
    return readWire(this.#http, 'lookupParty', () => toPartyDetails(id, found.client, found.account));
  }

  reserve(request: ReserveRequest): Promise<void> {
    return this.#turns.run(request.reference, async () => {
      await this.#float('reserve: read float', request.amount.currency);
      await this.#hold('reserve', request.reference, amountForWire(request.amount));
    });
  }

  commit(request: CommitRequest): Promise<void> {
    return this.#turns.run(request.reference, () => this.#commit(request));
  }

  release(reference: string, amount: Money): Promise<void> {
    return this.#turns.run(reference, () => this.#release(reference, amount));
  }

  async #commit(request: CommitRequest): Promise<void> {
    const amount = amountForWire(request.amount);
    const payee = await this.#account(request.payeeAccountId, 'commit: read payee', 'payee');
    checkCurrency(payee, request.amount.currency, 'payee');
    // A repeat of the reservation's hold: Fineract answers its transaction id from the store.
    const holdId = await this.#hold('commit', request.reference, amount);
    const hold = await this.#holdTransaction('commit: read hold', holdId);
    if (hold.amount !== amount) throw new ConnectorError('ModifiedRequest', `fineract: hold ${holdId} under reference ${request.reference} is for another amount`);
    if (!hold.released) {
      await this.#commitTogether(request.reference, payee.id, holdId, amount);
      return;
    }
    // Released already: by an abort, after which nothing may be paid, or by this commit. Its
    // batch booked the deposit and the withdrawal with the release (both replayed below); an
    // attempt from before 2026-11-27 released step by step and may have stopped before either.
    if (!(await this.#releasedBy('commit', request.reference, holdId, COMMIT_RELEASE))) {
      throw new ConnectorError('TransferStateConflict', `fineract: reservation ${request.reference} was released by an abort`);
    }
    await this.#moneyCommand('commit: deposit', payee.id, 'deposit', amount, request.reference, 'payee');
    await this.#moneyCommand('commit: withdraw float', this.#options.floatAccountId, 'withdrawal', amount, request.reference, 'float');
  }

  /**
   * The payee's deposit, the release of the hold and the float's withdrawal as one Fineract
   * transaction (see #together). Booked one by one, another hold could take the released amount
   * before the withdrawal, leaving the payee credited and the float not debited.
   */
  async #commitTogether(reference: string, payeeId: string, holdId: string, amount: string): Promise<void> {
    const money = this.#moneyBody(amount, reference);
    const float = this.#options.floatAccountId;
    await this.#together('commit: deposit, release and withdraw as one transaction', reference, [
      { name: 'deposit', role: 'payee', savingsId: payeeId, suffix: '?command=deposit', body: money, step: 'deposit-payee' },
      { name: 'release hold', role: 'float', savingsId: float, suffix: `/${encodeURIComponent(holdId)}?command=releaseAmount`, body: {}, step: COMMIT_RELEASE },
      { name: 'withdraw float', role: 'float', savingsId: float, suffix: '?command=withdrawal', body: money, step: 'withdraw-float' },
    ]);
  }

  /**
   * Savings transaction commands as one Fineract transaction: POST
   * /batches?enclosingTransaction=true (BatchApiResource; each command a savings transaction
   * command, CommandStrategyProvider). In an enclosing transaction Fineract stores each command
   * under its Idempotency-Key in that transaction (SynchronousCommandProcessingService: the
   * command source is saved in it, a failure is not stored), so either every command is booked
   * under its key or none is. A repeat replays them from the store, whether a batch or a
   * step-by-step attempt (before 2026-11-27) booked them; a key such an attempt spent on a failure
   * (replayed, x-served-from-cache) moves that step to its next key, as #command does.
   */
  async #together(operation: string, reference: string, steps: readonly BatchStep[]): Promise<void> {
    const attempts = steps.map(() => 0);
    for (;;) {
      const batch = steps.map((step, index) => ({
        requestId: new JsonNumber(String(index + 1)),
        relativeUrl: `savingsaccounts/${step.savingsId}/transactions${step.suffix}`,
        method: 'POST',
        headers: [{ name: IDEMPOTENCY_HEADER, value: idempotencyKey(reference, step.step, attempts[index]) }],
        body: stringifyDecimalJson(step.body),
      }));
      const answer = await this.#http.send({ operation, method: 'POST', path: '/batches?enclosingTransaction=true', json: batch, headers: this.#headers });
      // (A 5xx or no answer is thrown by #http: the outcome is unknown, and the next attempt replays what was booked.)
      if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, 'float');
      const answers = parse2xx(this.#http, answer, readBatchAnswers);
      const failed = answers.find((item) => item.statusCode !== 200);
      if (failed === undefined && answers.length === steps.length) {
        readWire(this.#http, operation, () => steps.forEach((step, index) => readCommandResult(answers.find((item) => item.requestId === String(index + 1))?.body, step.savingsId)));
        return;
      }
      if (failed === undefined) throw new ConnectorError('InstitutionUnavailable', `fineract ${operation}: ${answers.length} answers to ${steps.length} commands; outcome unknown`);
      // Whichever command failed, the enclosing transaction was rolled back: nothing was booked.
      const index = Number(failed.requestId) - 1;
      const step = steps[index];
      const what = `${operation} (${step?.name ?? `request ${failed.requestId}`})`;
      if (failed.statusCode === 425 || (failed.statusCode === 409 && isInProgress(failed.body))) {
        throw new ConnectorError('InstitutionTimeout', `fineract ${what}: an earlier attempt is still running at Fineract (HTTP ${failed.statusCode}); outcome unknown`);
      }
      // A twin batch under the same keys (our earlier attempt, still running when this one was
      // sent) committed first: this one broke the key's unique record and was rolled back.
      if (readError(failed.body).codes.some((code) => code.includes('data.integrity'))) {
        throw new ConnectorError('InstitutionUnavailable', `fineract ${what}: HTTP ${failed.statusCode} data integrity (an attempt under the same keys booked first, or is booking); rolled back, retried later`);
      }
      const attempt = attempts[index];
      if (failed.servedFromCache && step !== undefined && attempt !== undefined && attempt + 1 < KEYS_PER_STEP) {
        // Only a key Fineract stored as failed may be passed over. The answer to a failed commit
        // of the whole transaction carries the last command's headers (buildErrorResponses), the
        // replay mark of a booked key included: asked alone under the same key, which cannot
        // book (the key is stored), Fineract says which.
        if (!(await this.#storedAsFailed(`${what}: asked alone`, step, reference, attempt))) {
          throw new ConnectorError('InstitutionUnavailable', `fineract ${what}: HTTP ${failed.statusCode}, the transaction rolled back at its commit; retried later`);
        }
        attempts[index] = attempt + 1;
        continue;
      }
      // The float short (a hold placed since the refund read it): ours to fund, not a party's decline.
      if (step?.role === 'float' && readError(failed.body).codes.some((code) => code.includes('insufficient'))) {
        throw new ConnectorError('InstitutionUnavailable', `fineract ${what}: the float cannot fund it now (HTTP ${failed.statusCode}); rolled back, retried later`);
      }
      const spent = failed.servedFromCache ? ` (replayed under each of the step's ${KEYS_PER_STEP} keys)` : '';
      if (failed.statusCode >= 500) throw new ConnectorError('InstitutionUnavailable', `fineract ${what}${spent}: HTTP ${failed.statusCode}, rolled back`);
      throw declineFor(`${what}${spent}`, failed.statusCode, failed.body, step?.role ?? 'float');
    }
  }

  async #release(reference: string, amount: Money): Promise<void> {
    let holdId: string;
    try {
      holdId = await this.#hold('release', reference, amountForWire(amount));
    } catch (error) {
      // The hold was refused (a short float, say): nothing is held, nothing to release.
      if (isConnectorError(error) && error.category === 'rejected') return;
      throw error;
    }
    const hold = await this.#holdTransaction('release: read hold', holdId);
    if (hold.released) {
      if (await this.#releasedBy('release', reference, holdId, ABORT_RELEASE)) return;
      throw new ConnectorError('TransferStateConflict', `fineract: reservation ${reference} was released by its commit`);
    }
    await this.#releaseHold('release: release hold', reference, holdId, ABORT_RELEASE);
  }

  async collect(): Promise<CollectResult> {
    throw new ConnectorError('NotSupported', 'fineract works in the bank flow: the channel debits the customer, there is no payment prompt');
  }

  refund(request: RefundRequest): Promise<void> {
    return this.#turns.run(request.reference, () => this.#refund(request));
  }

  async #refund(request: RefundRequest): Promise<void> {
    const amount = amountForWire(request.amount);
    const found = await this.#findSavings(request.payerId, undefined, 'refund: find payer', 'payer');
    const payer = await this.#account(found.account.id, 'refund: read payer', 'payer');
    checkCurrency(payer, request.amount.currency, 'payer');
    // Checked first, so that a short float does not leave the deposit waiting for its withdrawal.
    if (!(await this.#floatCovers('refund: read float', amount, request.amount.currency))) {
      throw new ConnectorError('InstitutionUnavailable', `fineract: the float cannot fund refund ${request.reference} now`);
    }
    // The deposit and the withdrawal as one transaction: a hold placed after the check above
    // refuses both, never the withdrawal alone.
    const money = this.#moneyBody(amount, request.reference);
    await this.#together('refund: deposit and withdraw as one transaction', request.reference, [
      { name: 'deposit', role: 'payer', savingsId: payer.id, suffix: '?command=deposit', body: money, step: 'deposit-payer' },
      { name: 'withdraw float', role: 'float', savingsId: this.#options.floatAccountId, suffix: '?command=withdrawal', body: money, step: 'withdraw-float' },
    ]);
  }

  /**
   * Not offered: Fineract cannot find a transaction by our reference. Its global search
   * (GET /search) covers clients, groups, loans, savings and share accounts by number or
   * external id (SearchConstants, SearchReadPlatformServiceImpl), not transactions, and the
   * savings transaction search filters by date, amount and type only
   * (SavingsAccountTransactionsApiResource.searchTransactions). The bank flow never asks: only a
   * payment prompt (the mobile-operator flow) is settled by the institution's status.
   */
  async transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    throw new ConnectorError('NotSupported', `fineract cannot look transaction ${reference} up by our reference (the bank flow never asks)`);
  }

  /**
   * Start-up check of the settings against Fineract itself: the payment type must be one
   * Fineract lists, and the float account must exist and be active. A wrong setting would
   * otherwise start fine and fail every payment after the hub committed it.
   */
  async verifySetup(): Promise<void> {
    const types = await this.#send({ operation: 'verifySetup', method: 'GET', path: '/paymenttypes' });
    if (types.status === 401) throw new InstitutionHealthError('credentials-refused', 'fineract refused FINERACT_USERNAME/FINERACT_PASSWORD (HTTP 401)');
    if (types.status >= 400) throw new InstitutionHealthError('unavailable', `fineract GET /paymenttypes: HTTP ${types.status}`);
    const paymentTypes = parse2xx(this.#http, types, readPaymentTypes);
    if (!paymentTypes.some((type) => type.id === this.#options.paymentTypeId)) {
      const known = paymentTypes.map((type) => `${type.id} ${type.name}`).join(', ');
      throw new InstitutionHealthError('misconfigured', `FINERACT_PAYMENT_TYPE_ID ${this.#options.paymentTypeId} is not a payment type at Fineract (it lists: ${known || 'none'})`);
    }
    const float = await this.#send({ operation: 'verifySetup', method: 'GET', path: `/savingsaccounts/${encodeURIComponent(this.#options.floatAccountId)}` });
    if (float.status === 404) throw new InstitutionHealthError('misconfigured', `FINERACT_FLOAT_ACCOUNT_ID ${this.#options.floatAccountId}: no such savings account at Fineract`);
    if (float.status >= 400) throw new InstitutionHealthError('unavailable', `fineract GET /savingsaccounts/${this.#options.floatAccountId}: HTTP ${float.status}`);
    const account = parse2xx(this.#http, float, readSavingsAccount);
    if (account.status.id !== SAVINGS_ACTIVE_STATUS) {
      throw new InstitutionHealthError('misconfigured', `FINERACT_FLOAT_ACCOUNT_ID ${this.#options.floatAccountId}: the savings account is not active (${account.status.code})`);
    }
  }

  /**
   * The float's withdrawals and deposits in the period that carry a receipt number. Every credit
   * to a customer (an incoming transfer's payee, a refund) ends with a float withdrawal under our
   * reference; a customer's debit is the bank channel's deposit to the float under its
   * homeTransactionId (the convention docs/adding-an-institution.md asks the channel to keep; the
   * connector itself never deposits to the float). Read page by page
   * from the transaction search (Fineract 1.9 and later), whose `offset` is the page number
   * (TransactionSearchRequest.pageable: PageRequest.of(offset, limit)). Dates are value dates;
   * a movement is placed at midnight UTC of its day. Reversed transactions moved nothing.
   */
  async listMovements(period: Period): Promise<InstitutionMovement[]> {
    const fromDate = period.from.slice(0, 10);
    const toDate = new Date(Date.parse(period.to) - 1).toISOString().slice(0, 10);
    const movements: InstitutionMovement[] = [];
    const pageSize = 200;
    for (let page = 0; ; page += 1) {
      const query = new URLSearchParams({
        fromDate,
        toDate,
        dateFormat: 'yyyy-MM-dd',
        locale: 'en',
        types: `${FINERACT_TRANSACTION_TYPE.deposit},${FINERACT_TRANSACTION_TYPE.withdrawal}`,
        offset: String(page),
        limit: String(pageSize),
        orderBy: 'id',
        sortOrder: 'ASC',
      });
      const path = `/savingsaccounts/${encodeURIComponent(this.#options.floatAccountId)}/transactions/search?${query.toString()}`;
      const answer = await this.#send({ operation: 'listMovements', method: 'GET', path });
      if (answer.status >= 400) throw declineFor('listMovements', answer.status, answer.body, 'float');
      const read = parse2xx(this.#http, answer, readTransactionPage);
      for (const line of read.transactions) {
        if (line.reversed || line.receiptNumber === undefined) continue;
        const direction = line.typeId === FINERACT_TRANSACTION_TYPE.withdrawal ? 'customer-credit' : line.typeId === FINERACT_TRANSACTION_TYPE.deposit ? 'customer-debit' : undefined;
        if (direction === undefined) continue;
        const bookedAt = `${line.date}T00:00:00.000Z`;
        movements.push({ reference: line.receiptNumber, direction, amount: { amount: line.amount, currency: line.currency }, bookedAt, institutionId: line.id });
      }
      if (read.transactions.length < pageSize || (page + 1) * pageSize >= read.total) return movements;
    }
  }

  async health(): Promise<void> {
    const answer = await this.#send({ operation: 'health', method: 'GET', path: `/savingsaccounts/${this.#options.floatAccountId}` });
    if (answer.status >= 400) throw declineFor('health', answer.status, answer.body, 'float');
    parse2xx(this.#http, answer, readSavingsAccount);
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  /** The client with this external id and the savings account that stands for it; PartyNotFound otherwise. */
  async #findSavings(
    externalId: string,
    idSubValue: string | undefined,
    operation: string,
    role: 'payee' | 'payer',
  ): Promise<{ client: FineractClient; account: FineractSavingsSummary }> {
    const search = await this.#send({ operation, method: 'GET', path: `/clients?externalId=${encodeURIComponent(externalId)}&limit=2` });
    if (search.status >= 400) throw declineFor(operation, search.status, search.body, role);
    const clients = parse2xx(this.#http, search, readClientPage)
      // Checked here too: a Fineract that ignored the filter would otherwise hand us someone else.
      .filter((client) => client.externalId === externalId);
    const client = clients[0];
    if (client === undefined) throw new ConnectorError('PartyNotFound');
    if (clients.length > 1) throw new ConnectorError('InstitutionUnavailable', `fineract ${operation}: several clients share one external id`);
    const list = await this.#send({ operation, method: 'GET', path: `/clients/${client.id}/accounts` });
    if (list.status >= 400) throw declineFor(operation, list.status, list.body, role);
    const account = chooseSavingsAccount(parse2xx(this.#http, list, readSavingsSummaries), idSubValue);
    if (account === undefined) throw new ConnectorError('PartyNotFound');
    return { client, account };
  }

  async #float(operation: string, currency?: string): Promise<FineractSavingsAccount> {
    const float = await this.#account(this.#options.floatAccountId, operation, 'float');
    if (currency !== undefined) checkCurrency(float, currency, 'float');
    return float;
  }

  /**
   * Whether the float's available balance covers `amount` (in `currency`, checked when given):
   * the only balance read, where it decides (a refund's funding check; a float withdrawal refused
   * for a short float, before it is sent again).
   */
  async #floatCovers(operation: string, amount: string, currency?: string): Promise<boolean> {
    const answer = await this.#send({ operation, method: 'GET', path: `/savingsaccounts/${encodeURIComponent(this.#options.floatAccountId)}` });
    if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, 'float');
    const float = parse2xx(this.#http, answer, readFloatAccount);
    if (currency !== undefined) checkCurrency(float, currency, 'float');
    return fundsCover(float.availableBalance ?? float.accountBalance, amount);
  }

  /**
   * The account's id, status and currency, without its statement. Its balances are not read: a
   * customer's balance may be negative (overdraft) or finer than ISO 4217 at Fineract, and a
   * credit needs neither.
   */
  async #account(savingsId: string, operation: string, role: FineractRole): Promise<FineractSavingsAccount> {
    const answer = await this.#send({ operation, method: 'GET', path: `/savingsaccounts/${encodeURIComponent(savingsId)}` });
    if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, role);
    return parse2xx(this.#http, answer, readSavingsAccount);
  }

  /** The hold itself, read by its id: its amount and whether Fineract reports it released. */
  async #holdTransaction(operation: string, holdId: string): Promise<FineractHold> {
    const path = `/savingsaccounts/${encodeURIComponent(this.#options.floatAccountId)}/transactions/${encodeURIComponent(holdId)}`;
    const answer = await this.#send({ operation, method: 'GET', path });
    if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, 'float');
    return parse2xx(this.#http, answer, readHoldTransaction);
  }

  /** The reservation's hold on the float (step `hold`); answers its transaction id. */
  async #hold(operation: string, reference: string, amount: string): Promise<string> {
    const body = holdCommand(amount, reference, this.#today());
    return this.#command(`${operation}: hold`, this.#options.floatAccountId, '?command=holdAmount', body, 'float', reference, 'hold');
  }

  /**
   * Whether `step`'s key `attempt` is stored at Fineract as a failure: the command sent alone under
   * it, which only replays (the caller saw the key marked as served from the store), answers a
   * failure from the store. A replayed success, or anything else, is not a stored failure.
   */
  async #storedAsFailed(operation: string, step: BatchStep, reference: string, attempt: number): Promise<boolean> {
    const answer = await this.#post(operation, step.savingsId, step.suffix, step.body, idempotencyKey(reference, step.step, attempt));
    return answer.status >= 400 && answer.status !== 425 && answer.headers[SERVED_FROM_CACHE] === 'true';
  }

  /** Releases the hold under the step of whoever releases it: the commit (COMMIT_RELEASE) or an abort (ABORT_RELEASE). */
  async #releaseHold(operation: string, reference: string, holdId: string, step: string): Promise<void> {
    await this.#command(operation, this.#options.floatAccountId, `/${encodeURIComponent(holdId)}?command=releaseAmount`, {}, 'float', reference, step);
  }

  /**
   * Who released a hold found released: `step`'s own earlier attempt, or the other side. Asked by
   * sending the release again under `step`'s keys, which cannot move money, since the hold is
   * released already: Fineract replays the success stored under a key that released it
   * (x-served-from-cache), and refuses a release of a released hold (400 "not on hold") under a
   * key that did not. A release under the key both sides shared before the two were told apart
   * (LEGACY_RELEASE) counts as the caller's: only a release still in flight from before that
   * change can be under it, and the payee's state machine never both commits and aborts one
   * transfer. (Until 2026-11-27 this asked GET /search for the reference's transactions, a
   * resource Fineract does not have: a commit whose release was applied but not answered was
   * refused for ever, the payee credited and the float never debited.)
   */
  async #releasedBy(caller: 'commit' | 'release', reference: string, holdId: string, step: string): Promise<boolean> {
    for (const key of [step, LEGACY_RELEASE]) {
      const operation = `${caller}: who released the hold (${key})`;
      const answer = await this.#command(operation, this.#options.floatAccountId, `/${encodeURIComponent(holdId)}?command=releaseAmount`, {}, 'float', reference, key, { notOnHold: true });
      if (answer !== NOT_ON_HOLD) return true;
    }
    return false;
  }

  async #moneyCommand(operation: string, savingsId: string, command: 'deposit' | 'withdrawal', amount: string, reference: string, role: FineractRole): Promise<void> {
    const body = this.#moneyBody(amount, reference);
    // The float's withdrawal, refused for a short float (another hold took the amount the commit
    // released), waits for the float to cover it before spending another of the step's keys.
    const coveredNow = role === 'float' && command === 'withdrawal' ? () => this.#floatCovers(`${operation}: read float`, amount) : undefined;
    await this.#command(operation, savingsId, `?command=${command}`, body, role, reference, command === 'deposit' ? `deposit-${role}` : `withdraw-${role}`, coveredNow === undefined ? {} : { coveredNow });
  }


  /**
   * One write of a step; answers the transaction id Fineract booked (or had booked).
   *
   * Fineract stores a command's failure under its key as well as its success, and replays it to
   * every repeat with `x-served-from-cache: true` (SynchronousCommandProcessingService
   * .executeCommand saves status ERROR in a new transaction; a repeat meets
   * IdempotentCommandProcessFailedException). A step whose first run met a passing failure (a
   * lock conflict, a date refused near midnight, a 500) would then fail for ever under one key. So
   * a step has a fixed sequence of keys (idempotencyKey with attempt 0, 1, 2, ...), walked from
   * the first on every attempt: a replayed failure sends the command again under the next key.
   * This cannot move money twice, because a stored ERROR is a command Fineract rolled back: it
   * runs in CommandSourceService.processCommand's transaction, which the failure rolls back
   * before the ERROR is saved, so nothing was booked under that key. Every walker stops at the
   * first key that is not a stored ERROR (a booked result, or a run still under way: 425), so at
   * most one key of a step is ever booked, whichever process walks. A command held for a
   * checker's approval answers 200 and is not a failure, so it is never passed over.
   */
  async #command(operation: string, savingsId: string, suffix: string, body: unknown, role: FineractRole, reference: string, step: string, options?: { readonly coveredNow?: () => Promise<boolean> }): Promise<string>;
  /** The same, answering NOT_ON_HOLD instead of throwing when Fineract refuses to release a hold that is not on hold. */
  async #command(operation: string, savingsId: string, suffix: string, body: unknown, role: FineractRole, reference: string, step: string, options: { readonly notOnHold: true }): Promise<string | typeof NOT_ON_HOLD>;
  async #command(
    operation: string,
    savingsId: string,
    suffix: string,
    body: unknown,
    role: FineractRole,
    reference: string,
    step: string,
    options: { readonly notOnHold?: true; readonly coveredNow?: () => Promise<boolean> } = {},
  ): Promise<string | typeof NOT_ON_HOLD> {
    for (let attempt = 0; ; attempt += 1) {
      const answer = await this.#post(operation, savingsId, suffix, body, idempotencyKey(reference, step, attempt));
      if (stillRunning(answer)) {
        throw new ConnectorError('InstitutionTimeout', `fineract ${operation}: an earlier attempt is still running at Fineract (HTTP ${answer.status}); outcome unknown`);
      }
      // "Not on hold", replayed or not, is the answer a probe asks for: no further key is spent on it.
      if (options.notOnHold === true && answer.status === 400 && readError(answer.body).codes.some((code) => code.includes('not.on.hold'))) return NOT_ON_HOLD;
      const replayedFailure = answer.status >= 400 && answer.headers[SERVED_FROM_CACHE] === 'true';
      if (replayedFailure && attempt + 1 < KEYS_PER_STEP) {
        // A key spent on a shortfall: the next key would send the command again, which would only
        // spend that key too while the shortfall lasts. Asked first, so that the keys last.
        if (options.coveredNow !== undefined && readError(answer.body).codes.some((code) => code.includes('insufficient')) && !(await options.coveredNow())) {
          throw declineFor(`${operation} (refused before for a short balance, still short: no new key spent)`, answer.status, answer.body, role);
        }
        continue;
      }
      const spent = replayedFailure ? ` (replayed under each of the step's ${KEYS_PER_STEP} keys)` : '';
      if (answer.status >= 500) throw new ConnectorError('InstitutionUnavailable', `fineract ${operation}${spent}: HTTP ${answer.status}`);
      if (answer.status >= 400) throw declineFor(`${operation}${spent}`, answer.status, answer.body, role);
      return parse2xx(this.#http, answer, (result) => readCommandResult(result, savingsId)).resourceId;
    }
  }

  /** One savings transaction command under `key`; a 5xx replayed from Fineract's store is answered, not thrown. */
  #post(operation: string, savingsId: string, suffix: string, body: unknown, key: string): Promise<InstitutionAnswer> {
    return this.#http.send({
      operation,
      method: 'POST',
      path: `/savingsaccounts/${encodeURIComponent(savingsId)}/transactions${suffix}`,
      json: body,
      headers: { ...this.#headers, 'idempotency-key': key },
      serverErrorAnsweredWhen: SERVED_FROM_CACHE,
    });
  }

  /** A deposit's or withdrawal's body: our reference as the receipt number and in the note, under FINERACT_PAYMENT_TYPE_ID. */
  #moneyBody(amount: string, reference: string): ReturnType<typeof moneyCommand> {
    return moneyCommand(amount, reference, this.#today(), new JsonNumber(this.#options.paymentTypeId), `Mojaloop ${reference}`);
  }

  #send(call: InstitutionRequest): Promise<InstitutionAnswer> {
    return this.#http.send({ ...call, headers: this.#headers });
  }

  #today(): string {
    return transactionDate(this.#clock.now(), this.#tenantDay);
  }
}

/** One command of a batch booked as one transaction (#together): its account, path after it, body and step (its keys). */
interface BatchStep {
  readonly name: string;
  readonly role: FineractRole;
  readonly savingsId: string;
  readonly suffix: string;
  readonly body: unknown;
  readonly step: string;
}

/** A release refused because the hold is not on hold (any more). */
const NOT_ON_HOLD = Symbol('not on hold');

/** The steps under which the commit and an abort release a hold (their idempotency keys differ). */
const COMMIT_RELEASE = 'commit-release';
const ABORT_RELEASE = 'abort-release';
/** The step both used before 2026-11-27; still asked about, for releases in flight across the upgrade. */
const LEGACY_RELEASE = 'release-hold';

/** The header Fineract reads a command's key from (fineract.idempotency-key-header-name's default); matched exactly inside a batch (IdempotencyStoreBatchFilter). */
const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Fineract's mark on an answer replayed from its idempotency store (AbstractIdempotentCommandException). */
const SERVED_FROM_CACHE = 'x-served-from-cache';

/**
 * How many keys one step may use. A key is spent only by a command Fineract rolled back, and
 * every attempt replays the spent ones before the next, so this bounds an attempt's requests.
 * Past it, the last failure is answered as it is.
 */
const KEYS_PER_STEP = 32;

/**
 * Key `attempt` of one step of one operation: our reference, the step and, after the first, the
 * attempt, hashed to 43 characters (base64url SHA-256) so that any reference fits Fineract's key
 * column. Attempt 0 is the key this adapter has always sent for the step.
 */
export function idempotencyKey(reference: string, step: string, attempt = 0): string {
  const text = attempt === 0 ? `${reference}\u0000${step}` : `${reference}\u0000${step}\u0000${attempt}`;
  return createHash('sha256').update(text, 'utf8').digest('base64url');
}

/** Fineract refusing a repeat because the first attempt with the key has not finished. */
function stillRunning(answer: InstitutionAnswer): boolean {
  if (answer.status === 425) return true;
  return answer.status === 409 && isInProgress(answer.body);
}

function isInProgress(body: unknown): boolean {
  return readError(body).codes.some((code) => code.includes('idempotent') || code.includes('in.progress'));
}

function checkCurrency(account: FineractSavingsAccount, currency: string, role: FineractRole): void {
  if (account.currency !== currency) {
    throw new ConnectorError(role === 'float' ? 'InstitutionUnavailable' : 'UnsupportedCurrency', `fineract: the ${role} account is not in ${currency}`);
  }
}
