import { JsonNumber, parseDecimalJson, stringifyDecimalJson } from '../../../src/adapters/core-banking/shared/decimal-json.js';
import { FixtureBooks, InsufficientFunds, type BookAccount, type FixtureAccountSeed, type FixtureSeed } from '../fixture-books.js';
import { serveFixtureInstitution, type FixtureInstitution } from '../fixture-institution.js';
import type { FixtureReply, FixtureRequest } from '../fixture-server.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import { systemClock, type Clock } from '../../../src/ports/clock.js';
import { FINERACT_TRANSACTION_TYPE } from '../../../src/adapters/core-banking/fineract/fineract-wire.js';

/**
 * A fixture Apache Fineract on loopback, written from Fineract's own documents and source (each
 * behaviour below names the file it follows; paths are in the apache/fineract repository):
 * - tenants and basic authentication: a missing or unknown tenant is 400, bad credentials 401
 *   (fineract-provider/.../infrastructure/security/filter/TenantAwareBasicAuthenticationFilter.java);
 * - clients found by external id, savings accounts with statuses and sub-statuses, deposits,
 *   withdrawals, amount holds and releases (SavingsAccountTransactionsApiResource.java:
 *   POST /savingsaccounts/{id}/transactions?command=deposit|withdrawal|holdAmount and
 *   POST /savingsaccounts/{id}/transactions/{transactionId}?command=releaseAmount);
 * - idempotency (fineract-doc/src/docs/en/chapters/architecture/idempotency.adoc, and the
 *   header name `Idempotency-Key` from fineract.idempotency-key-header-name in
 *   application.properties): a command is stored with its result under action + entity + key;
 *   a repeat answers the stored status and body with `x-served-from-cache: true`, errors the
 *   command raised included (SynchronousCommandProcessingService.executeCommand stores status
 *   ERROR with the answer; IdempotentCommandExceptionMapper replays it); a repeat while the first
 *   is still running is refused (425, also marked; the document says 409) and runs nothing;
 * - `releaseTransactionId` on every savings transaction: 0 while a hold is unreleased, the
 *   release transaction's id once released (SavingsAccountTransactionData.java); releasing an
 *   unknown transaction answers 500, releasing twice 400;
 * - batches in one transaction: POST /batches?enclosingTransaction=true runs savings transaction
 *   commands (relativeUrl `savingsaccounts/{id}/transactions?command=...` and
 *   `savingsaccounts/{id}/transactions/{transactionId}?command=releaseAmount`, ids digits only:
 *   CommandStrategyProvider) in order in one transaction. Each command's key is read from its own
 *   headers, by the exact name `Idempotency-Key` (IdempotencyStoreBatchFilter); a stored command
 *   replays as it would alone (IdempotentCommandExceptionMapper, through ErrorHandler into the
 *   item's status, body and headers); a new command's record is saved in the enclosing
 *   transaction, and a failure is not stored (SynchronousCommandProcessingService
 *   .executeCommand: isEnclosingTransaction). The first failing command rolls everything back and
 *   the answer is that command's alone (BatchApiServiceImpl.callInTransaction); otherwise one
 *   answer per command {requestId, statusCode, headers, body} with each body as JSON text,
 *   HTTP 200 either way. Parent references (`reference`) and batches without an enclosing
 *   transaction are not imitated (answered 501);
 * - dates: the tenant's business date is its day in the tenant's time zone
 *   (DateUtils.getBusinessLocalDate / getLocalDateOfTenant: LocalDate.now(tenant timezone_id),
 *   with the business-date feature off). A release is dated with it, whatever its hold's date
 *   (SavingsAccountTransactionDataValidator.validateReleaseAmountAndAssembleForm); a hold dated
 *   before the account's last transaction is refused 400 (validateHoldAndAssembleForm,
 *   retrieveLastTransactionDate); a deposit or withdrawal dated after the business date is
 *   refused 400 (SavingsAccount: "error.msg.savingsaccount.transaction.in.the.future");
 * - statements: GET /savingsaccounts/{id}?associations=transactions lists the whole history;
 * - GET /paymenttypes lists the payment types (PaymentTypeApiResource.java); a deposit or a
 *   withdrawal under an unknown payment type is refused (400);
 * - GET /search searches clients, groups, loans, savings and share accounts, never
 *   transactions: a resource naming savings (savingsTransactions included, SearchConditions)
 *   finds savings accounts whose account number or external id matches the query
 *   (SearchReadPlatformServiceImpl, savingMatchSql), answered as entityType "SAVING";
 * - error bodies {developerMessage, httpStatusCode, defaultUserMessage,
 *   userMessageGlobalisationCode, errors[]} (PlatformApiDataValidationException,
 *   PlatformDomainRuleException and their mappers); amounts as JSON numbers with six decimals.
 */

export interface FineractFixtureOptions extends FixtureSeed {
  readonly host?: string;
  readonly port?: number;
  readonly tenant?: string;
  readonly username?: string;
  readonly password?: string;
  /** The tenant's time zone (its timezone_id); UTC unless given. */
  readonly timeZone?: string;
  /** Fineract's clock, from which it takes the tenant's business date; the system clock unless given. */
  readonly clock?: Clock;
}

const FINERACT_FIXTURE_DEFAULTS_PAYMENT_TYPE = '4';
export const FINERACT_FIXTURE_DEFAULTS = { tenant: 'default', username: 'mifos', password: 'password', floatAccountId: '1', paymentTypeId: FINERACT_FIXTURE_DEFAULTS_PAYMENT_TYPE } as const;
const API_PREFIX = '/fineract-provider/api/v1';

interface Transaction {
  readonly id: string;
  readonly typeId: string;
  readonly amountMinor: bigint;
  readonly receiptNumber?: string;
  readonly reasonForBlock?: string;
  /** '0' until released, as Fineract reports an unreleased hold (and every other transaction). */
  releaseTransactionId: string;
  /** The value date, YYYY-MM-DD: the command's transactionDate (a release: the business date it was made on). */
  readonly date: string;
  /** Set when an operator reverses the transaction (undo); it then moved nothing. */
  reversed: boolean;
}

/** A command in Fineract's idempotency store: running, or done with the answer it gave. */
type StoredCommand = { readonly state: 'running' } | { readonly state: 'done'; readonly reply: FixtureReply };

/** The payment types a fresh Fineract lists, plus the one the tests configure (id 4). */
const PAYMENT_TYPES = [
  { id: '1', name: 'Money Transfer', isCashPayment: false },
  { id: '2', name: 'Cash', isCashPayment: true },
  { id: FINERACT_FIXTURE_DEFAULTS_PAYMENT_TYPE, name: 'Mojaloop', isCashPayment: false },
] as const;

interface Savings {
  readonly id: string;
  readonly clientId: string | undefined;
  readonly book: BookAccount;
  readonly statusId: string;
  readonly subStatusId: string;
  readonly transactions: Transaction[];
}

interface Client {
  readonly id: string;
  readonly seed: FixtureAccountSeed;
  readonly statusId: string;
}

export interface FineractFixture extends FixtureInstitution {
  /** Base URL to configure as FINERACT_BASE_URL. */
  readonly url: string;
  /** Reverses the transaction with this receipt number on this savings account, as a back-office undo would. */
  reverse(savingsId: string, receiptNumber: string): void;
  /**
   * The customer takes `amount` in cash at the counter beyond the balance, as a savings product
   * with allowOverdraft lets them (SavingsAccount.validateAccountBalanceDoesNotBecomeNegative
   * allows down to -overdraftLimit): the money leaves the books and Fineract then writes a
   * negative accountBalance. The fixture's balanceOf cannot show a negative balance; read the
   * account through the API.
   */
  overdraw(idValue: string, amount: string): void;
  /**
   * The next new run of `command` (deposit, withdrawal, holdAmount, releaseAmount) fails and
   * books nothing (CommandSourceService.processCommand's transaction is rolled back); the answer
   * is stored under the command's key like any error it raised:
   * - 'lock-conflict': another writer of the account won; Fineract's own retries of the command
   *   (resilience4j executeCommand retries ConcurrencyFailureException) are spent: 409
   *   `error.msg.platform.service.lock.conflict` (ConcurrencyFailureExceptionMapper,
   *   ApiGlobalErrorResponse.conflict);
   * - 'server-error': an unexpected exception (a dropped database connection, say): 500
   *   `{"Exception": message}` (DefaultExceptionMapper).
   */
  failNext(command: string, failure: 'lock-conflict' | 'server-error'): void;
  /**
   * The next batch fails as a whole, as Fineract answers a failure of the enclosing transaction
   * rather than of one command (BatchApiServiceImpl):
   * - 'commit-conflict': the commands ran, then the commit failed (a TransactionSystemException,
   *   turned into a ConcurrencyFailureException: 409 lock conflict); everything is rolled back and
   *   the one answer carries the requestId and the headers of the last command's own answer
   *   (buildErrorResponses), `x-served-from-cache` included when that command was a replay;
   * - 'duplicate-key': a twin batch under the same keys committed first; this one's command
   *   record breaks UNIQUE_PORTFOLIO_COMMAND_SOURCE (DataIntegrityViolationException, mapped by
   *   ErrorHandler to PlatformDataIntegrityException: 403 error.msg.data.integrity.issue), all is
   *   rolled back, answered on the first command.
   */
  failNextBatch(failure: 'commit-conflict' | 'duplicate-key'): void;
}

export async function startFineractFixture(options: FineractFixtureOptions): Promise<FineractFixture> {
  const state = new FineractInstitution(options);
  const { institution } = await serveFixtureInstitution('fineract', state, {
    host: options.host,
    port: options.port,
    isWrite: (request) => request.method === 'POST',
    accountIdOf: (idValue) => state.savingsOf(idValue).id,
    basePath: API_PREFIX,
  });
  return Object.assign(institution, {
    reverse: (savingsId: string, receiptNumber: string) => state.reverse(savingsId, receiptNumber),
    overdraw: (idValue: string, amount: string) => state.overdraw(idValue, amount),
    failNext: (command: string, failure: 'lock-conflict' | 'server-error') => state.failNext(command, failure),
    failNextBatch: (failure: 'commit-conflict' | 'duplicate-key') => state.failNextBatch(failure),
    debitByChannel: (reference: string, idValue: string, amount: string) => state.debitByChannel(reference, idValue, amount),
  });
}

class FineractInstitution {
  readonly books: FixtureBooks;
  readonly #clients = new Map<string, Client>();
  readonly #savings = new Map<string, Savings>();
  readonly #authorization: string;
  readonly #tenant: string;
  readonly #commands = new Map<string, StoredCommand>();
  readonly #failures: Array<{ readonly command: string; readonly failure: 'lock-conflict' | 'server-error' }> = [];
  readonly #batchFailures: Array<'commit-conflict' | 'duplicate-key'> = [];
  readonly #clock: Clock;
  readonly #tenantDay: Intl.DateTimeFormat;
  #nextId = 100;
  #nextTransaction = 1;

  constructor(options: FineractFixtureOptions) {
    const floatId = FINERACT_FIXTURE_DEFAULTS.floatAccountId;
    this.books = new FixtureBooks(options.currency, options.floatBalance, floatId);
    this.#savings.set(floatId, { id: floatId, clientId: undefined, book: this.books.float, statusId: '300', subStatusId: '0', transactions: [] });
    const user = options.username ?? FINERACT_FIXTURE_DEFAULTS.username;
    const password = options.password ?? FINERACT_FIXTURE_DEFAULTS.password;
    this.#authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    this.#tenant = options.tenant ?? FINERACT_FIXTURE_DEFAULTS.tenant;
    this.#clock = options.clock ?? systemClock;
    this.#tenantDay = new Intl.DateTimeFormat('en-CA', { timeZone: options.timeZone ?? 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' });
    this.seed(options.accounts);
  }

  seed(accounts: readonly FixtureAccountSeed[]): void {
    for (const seed of accounts) {
      const clientId = String(this.#nextId++);
      const savingsId = String(this.#nextId++);
      this.#clients.set(clientId, { id: clientId, seed, statusId: '300' });
      const book = this.books.add(seed, savingsId);
      const statusId = seed.status === 'closed' ? '600' : '300';
      // Fineract knows no "barred": a barred or blocked account is a blocked sub-status.
      const subStatusId = seed.status === 'barred' || seed.status === 'blocked' ? '400' : '0';
      this.#savings.set(savingsId, { id: savingsId, clientId, book, statusId, subStatusId, transactions: [] });
    }
  }

  savingsOf(idValue: string): Savings {
    const book = this.books.byIdValue(idValue);
    const savings = book === undefined ? undefined : this.#savings.get(book.accountId);
    if (savings === undefined) throw new Error(`fineract fixture: no savings account for ${idValue}`);
    return savings;
  }

  /**
   * Fineract's idempotency filter, after authentication: a stored command answers from the store,
   * a running one is refused, a new one is marked running (idempotency.adoc).
   */
  admit(request: FixtureRequest): FixtureReply | undefined {
    if (this.#refusal(request) !== undefined) return undefined;
    const key = idempotencyKeyOf(request);
    if (key === undefined) return undefined;
    const stored = this.#commands.get(key);
    if (stored === undefined) {
      this.#commands.set(key, { state: 'running' });
      return undefined;
    }
    // IdempotentCommandExceptionMapper marks every answer it gives, the 425 included.
    if (stored.state === 'running') {
      const refusal = fail(425, 'error.msg.idempotent.request.in.progress', 'The command with this idempotency key is still being processed');
      return { ...refusal, headers: { 'x-served-from-cache': 'true' } };
    }
    return { ...stored.reply, headers: { ...stored.reply.headers, 'x-served-from-cache': 'true' } };
  }

  handle(request: FixtureRequest): FixtureReply {
    const refusal = this.#refusal(request);
    if (refusal !== undefined) return refusal;
    const reply = this.#route(request);
    const key = idempotencyKeyOf(request);
    // The command's result, errors included, is stored with its key (idempotency.adoc).
    if (key !== undefined && this.#commands.get(key)?.state === 'running') this.#commands.set(key, { state: 'done', reply });
    return reply;
  }

  #refusal(request: FixtureRequest): FixtureReply | undefined {
    if (request.headers['fineract-platform-tenantid'] !== this.#tenant) {
      return fail(400, 'error.msg.platform.tenant.identifier.missing', 'No tenant identifier found');
    }
    if (request.headers.authorization !== this.#authorization) {
      return fail(401, 'error.msg.not.authenticated', 'Unauthenticated. Please login.');
    }
    return undefined;
  }

  #route(request: FixtureRequest): FixtureReply {
    if (!request.path.startsWith(`${API_PREFIX}/`)) return fail(404, 'error.msg.resource.not.found', 'Unknown path');
    const parts = request.path.slice(API_PREFIX.length + 1).split('/');
    const [resource, id, sub, transactionId] = parts;
    if (request.method === 'GET' && resource === 'paymenttypes' && id === undefined) return this.paymentTypes();
    if (request.method === 'GET' && resource === 'search' && id === undefined) return this.search(request.query);
    if (request.method === 'GET' && resource === 'clients' && id === undefined) return this.searchClients(request.query.get('externalId'));
    if (request.method === 'GET' && resource === 'clients' && sub === 'accounts') return this.clientAccounts(id ?? '');
    if (request.method === 'GET' && resource === 'savingsaccounts' && sub === undefined) {
      return this.savingsAccount(id ?? '', request.query.get('associations') === 'transactions');
    }
    if (request.method === 'GET' && resource === 'savingsaccounts' && sub === 'transactions' && transactionId === 'search') {
      return this.searchTransactions(id ?? '', request.query);
    }
    if (request.method === 'GET' && resource === 'savingsaccounts' && sub === 'transactions' && transactionId !== undefined) {
      return this.transaction(id ?? '', transactionId);
    }
    if (request.method === 'POST' && resource === 'batches' && id === undefined) return this.batch(request.query, request.body);
    if (request.method === 'POST' && resource === 'savingsaccounts' && sub === 'transactions') {
      return this.command(id ?? '', transactionId, request.query.get('command'), request.body);
    }
    return fail(404, 'error.msg.resource.not.found', 'Unknown path');
  }

  paymentTypes(): FixtureReply {
    return {
      status: 200,
      body: PAYMENT_TYPES.map((type, position) => ({
        id: new JsonNumber(type.id),
        name: type.name,
        description: type.name,
        isCashPayment: type.isCashPayment,
        position: new JsonNumber(String(position + 1)),
      })),
    };
  }

  /**
   * Global search as Fineract answers it for savings (SearchReadPlatformServiceImpl, savingMatchSql):
   * savings accounts whose account number or external id equals the query (exactMatch), as
   * entityType "SAVING". Transactions are not searched, whatever the resource is called.
   */
  search(query: URLSearchParams): FixtureReply {
    const text = query.get('query');
    if (text === null || text === '') return fail(400, 'validation.msg.search.query.cannot.be.blank', 'query is mandatory');
    if (!(query.get('resource') ?? '').toLowerCase().includes('saving')) return { status: 200, body: [] };
    const found: unknown[] = [];
    for (const savings of this.#savings.values()) {
      // The fixture's savings accounts carry no external id; their number is the id on 9 digits.
      const accountNo = savings.id.padStart(9, '0');
      if (accountNo !== text) continue;
      found.push({
        entityType: 'SAVING',
        entityId: new JsonNumber(savings.id),
        entityAccountNo: accountNo,
        ...(savings.clientId === undefined ? {} : { parentId: new JsonNumber(savings.clientId), parentType: 'client' }),
      });
    }
    return { status: 200, body: found };
  }

  searchClients(externalId: string | null): FixtureReply {
    const matches = [...this.#clients.values()].filter((client) => externalId === null || client.seed.idValue === externalId);
    return { status: 200, body: { totalFilteredRecords: new JsonNumber(String(matches.length)), pageItems: matches.map((client) => this.#clientBody(client)) } };
  }

  clientAccounts(clientId: string): FixtureReply {
    if (!this.#clients.has(clientId)) return fail(404, 'error.msg.client.id.invalid', `Client with identifier ${clientId} does not exist`);
    const accounts = [...this.#savings.values()].filter((savings) => savings.clientId === clientId);
    return {
      status: 200,
      body: {
        savingsAccounts: accounts.map((savings) => ({
          id: new JsonNumber(savings.id),
          accountNo: savings.id.padStart(9, '0'),
          productName: 'Mobile wallet',
          status: savingsStatus(savings.statusId),
          subStatus: subStatus(savings.subStatusId),
          currency: this.#currencyBody(),
          depositType: { id: new JsonNumber('100'), code: 'depositAccountType.savingsDeposit', value: 'Savings' },
          accountBalance: this.#amount(savings.book.balanceMinor),
        })),
      },
    };
  }

  savingsAccount(savingsId: string, withTransactions: boolean): FixtureReply {
    const savings = this.#savings.get(savingsId);
    if (savings === undefined) return fail(404, 'error.msg.saving.account.id.invalid', `Savings account with identifier ${savingsId} does not exist`);
    return {
      status: 200,
      body: {
        id: new JsonNumber(savings.id),
        accountNo: savings.id.padStart(9, '0'),
        ...(savings.clientId === undefined ? {} : { clientId: new JsonNumber(savings.clientId) }),
        status: savingsStatus(savings.statusId),
        subStatus: subStatus(savings.subStatusId),
        currency: this.#currencyBody(),
        savingsAmountOnHold: this.#amount(savings.book.heldMinor),
        summary: {
          currency: this.#currencyBody(),
          accountBalance: this.#amount(savings.book.balanceMinor),
          availableBalance: this.#amount(this.books.available(savings.book)),
        },
        ...(withTransactions ? { transactions: [...savings.transactions].reverse().map((transaction) => this.#transactionBody(transaction)) } : {}),
      },
    };
  }

  /**
   * GET /savingsaccounts/{id}/transactions/search (SavingsAccountTransactionsApiResource
   * .searchTransactions and SavingsAccountTransactionsSearchServiceImpl): fromDate and toDate
   * bound the value date, both inclusive; `types` is a comma-separated list of transaction type
   * ids; `offset` is the page number and `limit` the page size (TransactionSearchRequest.pageable
   * calls PageRequest.of(offset, limit)); without orderBy the newest come first (transaction
   * date, then id, descending). Reversal entries are left out, reversed originals are listed
   * with `reversed: true`. The answer is the Page: `{ total, content }`
   * (SavingsAccountTransactionsApiResourceSwagger.SavingsAccountTransactionsSearchResponse).
   */
  searchTransactions(savingsId: string, query: URLSearchParams): FixtureReply {
    const savings = this.#savings.get(savingsId);
    if (savings === undefined) return fail(404, 'error.msg.saving.account.id.invalid', `Savings account with identifier ${savingsId} does not exist`);
    const fromDate = query.get('fromDate');
    const toDate = query.get('toDate');
    for (const date of [fromDate, toDate]) {
      if (date !== null && !/^\d{4}-\d{2}-\d{2}$/.test(date)) return fail(400, 'validation.msg.invalid.date.format', 'Invalid date format');
    }
    const types = query.get('types')?.split(',');
    const page = Number(query.get('offset') ?? '0');
    const size = Number(query.get('limit') ?? '50');
    const ascending = query.get('orderBy') === 'id' && query.get('sortOrder') === 'ASC';
    const matching = savings.transactions
      .filter((transaction) => (fromDate === null || transaction.date >= fromDate) && (toDate === null || transaction.date <= toDate))
      .filter((transaction) => types === undefined || types.includes(transaction.typeId))
      .sort((a, b) => (ascending ? Number(a.id) - Number(b.id) : b.date.localeCompare(a.date) || Number(b.id) - Number(a.id)));
    const content = matching.slice(page * size, page * size + size).map((transaction) => this.#transactionBody(transaction));
    return { status: 200, body: { total: new JsonNumber(String(matching.length)), content } };
  }

  /** Reverses a transaction as a back-office undo would (tests: an institution that took a credit back). */
  /**
   * The bank's channel debits the customer into the float under its homeTransactionId, booked as
   * a withdrawal from the customer's savings account and a deposit to the float, each with that
   * reference as the payment detail's receipt number (the convention docs/adding-an-institution.md
   * asks a Fineract bank's channel to keep, so that the reconciliation finds the debit).
   */
  debitByChannel(reference: string, idValue: string, amount: string): void {
    const customer = this.savingsOf(idValue);
    const float = this.#savings.get(FINERACT_FIXTURE_DEFAULTS.floatAccountId);
    if (float === undefined) throw new Error('fineract fixture: no float');
    const minor = this.books.minor(amount);
    this.books.move(customer.book, float.book, minor);
    this.#book(customer, FINERACT_TRANSACTION_TYPE.withdrawal, minor, reference, undefined, this.#businessDate());
    this.#book(float, FINERACT_TRANSACTION_TYPE.deposit, minor, reference, undefined, this.#businessDate());
  }

  reverse(savingsId: string, receiptNumber: string): void {
    const transaction = this.#savings.get(savingsId)?.transactions.find((candidate) => candidate.receiptNumber === receiptNumber);
    if (transaction === undefined) throw new Error(`no transaction ${receiptNumber} on ${savingsId}`);
    transaction.reversed = true;
  }

  overdraw(idValue: string, amount: string): void {
    const book = this.savingsOf(idValue).book;
    const minor = this.books.minor(amount);
    if (minor > this.books.available(book)) book.balanceMinor -= minor;
    else throw new Error(`fineract fixture: ${amount} does not overdraw ${idValue}`);
  }

  /** GET /savingsaccounts/{id}/transactions/{transactionId} (SavingsAccountTransactionsApiResource.retrieveOne). */
  transaction(savingsId: string, transactionId: string): FixtureReply {
    const savings = this.#savings.get(savingsId);
    const transaction = savings?.transactions.find((candidate) => candidate.id === transactionId);
    if (transaction === undefined) return fail(404, 'error.msg.saving.account.transaction.id.invalid', `Transaction with identifier ${transactionId} does not exist`);
    return { status: 200, body: this.#transactionBody(transaction) };
  }

  /** POST /batches?enclosingTransaction=true: see the file's head (BatchApiServiceImpl). */
  batch(query: URLSearchParams, body: unknown): FixtureReply {
    if (query.get('enclosingTransaction') !== 'true') return fail(501, 'error.msg.fixture.not.imitated', 'the fixture imitates batches in an enclosing transaction only');
    if (!Array.isArray(body)) return fail(400, 'validation.msg.invalid.json', 'Body is not a list of requests');
    const restore = this.#snapshot();
    const answers: Array<{ requestId: unknown; statusCode: JsonNumber; headers: Array<{ name: string; value: string }>; body: string }> = [];
    const batchFailure = this.#batchFailures.shift();
    if (batchFailure === 'duplicate-key') {
      const first = body[0];
      const headers = isRecord(first) ? batchHeaders(first) : [];
      const refusal = fail(403, 'error.msg.data.integrity.issue', "The request caused a data integrity issue to be fired by the database: Duplicate entry for key 'UNIQUE_PORTFOLIO_COMMAND_SOURCE'");
      return { status: 200, body: [{ requestId: isRecord(first) ? first['requestId'] : null, statusCode: new JsonNumber('403'), headers, body: stringifyDecimalJson(refusal.body) }] };
    }
    for (const item of body) {
      const outcome = this.#batchItem(item);
      const text = typeof outcome.reply.body === 'string' ? outcome.reply.body : stringifyDecimalJson(outcome.reply.body);
      const answer = { requestId: isRecord(item) ? item['requestId'] : null, statusCode: new JsonNumber(String(outcome.reply.status)), headers: outcome.headers, body: text };
      if (outcome.reply.status !== 200) {
        // Rolled back, the commands' records with it; the answer is the failing command's alone.
        restore();
        return { status: 200, body: [answer] };
      }
      answers.push(answer);
    }
    const last = answers[answers.length - 1];
    if (batchFailure === 'commit-conflict' && last !== undefined) {
      restore();
      const message = 'The server is currently unable to handle the request due to concurrent modification  on lock, please try again';
      const conflict = { developerMessage: message, httpStatusCode: '409', defaultUserMessage: message, userMessageGlobalisationCode: 'error.msg.platform.service.lock.conflict', errors: [] };
      return { status: 200, body: [{ requestId: last.requestId, statusCode: new JsonNumber('409'), headers: last.headers, body: stringifyDecimalJson(conflict) }] };
    }
    return { status: 200, body: answers };
  }

  failNextBatch(failure: 'commit-conflict' | 'duplicate-key'): void {
    this.#batchFailures.push(failure);
  }

  #batchItem(item: unknown): { reply: FixtureReply; headers: Array<{ name: string; value: string }> } {
    if (!isRecord(item) || typeof item['relativeUrl'] !== 'string' || item['method'] !== 'POST' || typeof item['body'] !== 'string' || item['reference'] !== undefined) {
      return { reply: fail(501, 'error.msg.fixture.not.imitated', 'the fixture imitates POST savings transaction commands without parent references only'), headers: [] };
    }
    const headers = batchHeaders(item);
    const match = /^(?:v1\/)?savingsaccounts\/(\d+)\/transactions(?:\/(\d+))?(?:\?command=(\w+))?$/.exec(item['relativeUrl']);
    if (match === null) {
      return { reply: { status: 501, body: `Resource with method POST and relativeUrl ${item['relativeUrl']} doesn't exist` }, headers };
    }
    const [, savingsId = '', transactionId, command = null] = match;
    const keyHeader = headers.find((header) => header.name === 'Idempotency-Key');
    const key = keyHeader === undefined ? undefined : `${(command ?? '').toUpperCase()}|SAVINGSACCOUNT|${keyHeader.value}`;
    const stored = key === undefined ? undefined : this.#commands.get(key);
    const cached = [...headers, { name: 'x-served-from-cache', value: 'true' }];
    if (stored?.state === 'running') return { reply: fail(425, 'error.msg.idempotent.request.in.progress', 'The command with this idempotency key is still being processed'), headers: cached };
    if (stored?.state === 'done') return { reply: stored.reply, headers: cached };
    let parsed: unknown;
    try {
      parsed = parseDecimalJson(item['body']);
    } catch {
      return { reply: fail(400, 'validation.msg.invalid.json', 'Body is not JSON'), headers };
    }
    const reply = this.command(savingsId, transactionId, command, parsed);
    if (key !== undefined && reply.status === 200) this.#commands.set(key, { state: 'done', reply });
    return { reply, headers };
  }

  /** The fixture's books, stored commands and transactions now, and a function that puts them back (a rolled-back transaction; like a database sequence, transaction ids are not given back). */
  #snapshot(): () => void {
    const books = this.books.snapshot();
    const commands = new Map(this.#commands);
    const savings = [...this.#savings.values()].map((account) => ({ account, length: account.transactions.length, released: account.transactions.map((transaction) => transaction.releaseTransactionId) }));
    return () => {
      books();
      this.#commands.clear();
      for (const [key, value] of commands) this.#commands.set(key, value);
      for (const entry of savings) {
        entry.account.transactions.length = entry.length;
        entry.account.transactions.forEach((transaction, index) => {
          transaction.releaseTransactionId = entry.released[index] ?? '0';
        });
      }
    };
  }

  failNext(command: string, failure: 'lock-conflict' | 'server-error'): void {
    this.#failures.push({ command, failure });
  }

  command(savingsId: string, transactionId: string | undefined, command: string | null, body: unknown): FixtureReply {
    const planned = this.#failures.find((candidate) => candidate.command === command);
    if (planned !== undefined) {
      this.#failures.splice(this.#failures.indexOf(planned), 1);
      if (planned.failure === 'server-error') return { status: 500, body: { Exception: 'Could not open JPA EntityManager for transaction' } };
      const message = 'The server is currently unable to handle the request due to concurrent modification  on lock, please try again';
      return { status: 409, body: { developerMessage: message, httpStatusCode: '409', defaultUserMessage: message, userMessageGlobalisationCode: 'error.msg.platform.service.lock.conflict', errors: [] } };
    }
    const savings = this.#savings.get(savingsId);
    if (savings === undefined) return fail(404, 'error.msg.saving.account.id.invalid', `Savings account with identifier ${savingsId} does not exist`);
    if (transactionId !== undefined) {
      return command === 'releaseAmount' ? this.release(savings, transactionId) : fail(400, 'error.msg.unrecognized.query.param', 'Unrecognized command');
    }
    if (command !== 'deposit' && command !== 'withdrawal' && command !== 'holdAmount') {
      return fail(400, 'error.msg.unrecognized.query.param', 'Unrecognized command');
    }
    const input = this.#commandInput(body, command);
    if ('reply' in input) return input.reply;
    if (command !== 'holdAmount' && isRecord(body) && body['paymentTypeId'] instanceof JsonNumber && !PAYMENT_TYPES.some((type) => type.id === (body['paymentTypeId'] as JsonNumber).text)) {
      return fail(400, 'error.msg.payment.type.invalid', 'Payment type does not exist');
    }
    if (command === 'holdAmount' && input.reasonForBlock === undefined) {
      return fail(400, 'validation.msg.savingsaccount.transaction.reasonForBlock.cannot.be.blank', 'reasonForBlock is mandatory');
    }
    const dateRefusal = this.#dateRefusal(savings, command, input.date);
    if (dateRefusal !== undefined) return dateRefusal;
    if (savings.statusId !== '300') return fail(403, 'error.msg.savingsaccount.transaction.account.is.not.active', 'Account is not active');
    if (savings.subStatusId === '400') return fail(403, 'error.msg.savingsaccount.account.is.blocked', 'Account is blocked');
    try {
      if (command === 'deposit') this.books.deposit(savings.book, input.amountMinor);
      if (command === 'withdrawal') this.books.withdraw(savings.book, input.amountMinor);
      if (command === 'holdAmount') this.books.hold(savings.book, input.amountMinor);
    } catch (failure) {
      if (failure instanceof InsufficientFunds) return fail(403, 'error.msg.savingsaccount.transaction.insufficient.account.balance', 'Insufficient account balance');
      throw failure;
    }
    const typeId = command === 'deposit' ? FINERACT_TRANSACTION_TYPE.deposit : command === 'withdrawal' ? FINERACT_TRANSACTION_TYPE.withdrawal : FINERACT_TRANSACTION_TYPE.amountHold;
    const transaction = this.#book(savings, typeId, input.amountMinor, input.receiptNumber, input.reasonForBlock, input.date);
    return this.#commandResult(savings, transaction);
  }

  /** The tenant's business date, yyyy-MM-dd: its day in the tenant's time zone (DateUtils.getBusinessLocalDate). */
  #businessDate(): string {
    const parts = this.#tenantDay.formatToParts(this.#clock.now());
    const part = (type: string) => parts.find((candidate) => candidate.type === type)?.value ?? '';
    return `${part('year')}-${part('month')}-${part('day')}`;
  }

  /**
   * Fineract's date rules for these commands: a hold may not be dated before the account's last
   * transaction (validateHoldAndAssembleForm: "Amount can be put on hold only after last
   * transaction"; the last by date, SavingsAccount.retrieveLastTransactionDate), and a deposit or
   * withdrawal may not be dated after the business date (SavingsAccount, deposit and withdrawal
   * validation: DateUtils.isDateInTheFuture).
   */
  #dateRefusal(savings: Savings, command: 'deposit' | 'withdrawal' | 'holdAmount', date: string): FixtureReply | undefined {
    if (command === 'holdAmount') {
      const last = savings.transactions.filter((transaction) => !transaction.reversed).reduce((latest, transaction) => (transaction.date > latest ? transaction.date : latest), '');
      if (date < last) {
        return validationErrors('validation.msg.savingsaccount.date.validation.msg.date.can.not.be.before.last.transaction.date', 'Amount can be put on hold only after last transaction', 'date');
      }
      return undefined;
    }
    if (date > this.#businessDate()) {
      return validationErrors('error.msg.savingsaccount.transaction.in.the.future', 'Transaction date cannot be in the future.', 'transactionDate');
    }
    return undefined;
  }

  release(savings: Savings, holdId: string): FixtureReply {
    const hold = savings.transactions.find((transaction) => transaction.id === holdId && transaction.typeId === FINERACT_TRANSACTION_TYPE.amountHold);
    // Fineract fails with a server error on an id it cannot load, and validates a second release (400).
    if (hold === undefined) return { status: 500, body: { developerMessage: 'Request failed', httpStatusCode: '500', defaultUserMessage: 'Request failed' } };
    // A second release: SavingsAccountTransactionDataValidator.validateReleaseAmountAndAssembleForm
    // fails "validation.msg.amount.is.not.on.hold" on the amount parameter, which
    // DataValidatorBuilder.failWithCode prefixes with the resource and the parameter.
    if (hold.releaseTransactionId !== '0') return validationErrors('validation.msg.savingsaccount.amount.validation.msg.amount.is.not.on.hold', 'Failed data validation due to: validation.msg.amount.is.not.on.hold.', 'amount');
    this.books.releaseHold(savings.book, hold.amountMinor);
    // Dated with the tenant's business date, not the hold's (validateReleaseAmountAndAssembleForm).
    const release = this.#book(savings, FINERACT_TRANSACTION_TYPE.amountRelease, hold.amountMinor, undefined, undefined, this.#businessDate());
    hold.releaseTransactionId = release.id;
    return this.#commandResult(savings, release);
  }

  /** Reads a command body as Fineract does: amount as a number or a decimal string with a locale, dates by the given format. */
  #commandInput(body: unknown, command: string): { amountMinor: bigint; receiptNumber: string | undefined; reasonForBlock: string | undefined; date: string } | { reply: FixtureReply } {
    if (!isRecord(body)) return { reply: fail(400, 'validation.msg.invalid.json', 'Body is not a JSON object') };
    const amount = body['transactionAmount'];
    const text = amount instanceof JsonNumber ? amount.text : typeof amount === 'string' && body['locale'] === 'en' ? amount : undefined;
    if (text === undefined) return { reply: fail(400, 'validation.msg.savingsaccount.transaction.transactionAmount.cannot.be.blank', 'transactionAmount is mandatory') };
    let amountMinor: bigint;
    try {
      amountMinor = this.books.minor(text);
    } catch {
      return { reply: fail(400, 'validation.msg.savingsaccount.transaction.transactionAmount.invalid', 'transactionAmount is invalid') };
    }
    if (body['dateFormat'] !== 'yyyy-MM-dd' || typeof body['transactionDate'] !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(body['transactionDate'])) {
      return { reply: fail(400, 'validation.msg.savingsaccount.transaction.transactionDate.invalid', 'transactionDate is invalid') };
    }
    // Like Fineract, payment details (and so the receipt number) are only recorded with a payment type.
    const receipt = body['paymentTypeId'] instanceof JsonNumber && typeof body['receiptNumber'] === 'string' ? body['receiptNumber'] : undefined;
    const reason = command === 'holdAmount' && typeof body['reasonForBlock'] === 'string' ? body['reasonForBlock'] : undefined;
    return { amountMinor, receiptNumber: command === 'holdAmount' ? undefined : receipt, reasonForBlock: reason, date: body['transactionDate'] };
  }

  #book(savings: Savings, typeId: string, amountMinor: bigint, receiptNumber: string | undefined, reasonForBlock: string | undefined, date: string): Transaction {
    const transaction: Transaction = {
      id: String(this.#nextTransaction++),
      typeId,
      amountMinor,
      releaseTransactionId: '0',
      date,
      reversed: false,
      ...(receiptNumber === undefined ? {} : { receiptNumber }),
      ...(reasonForBlock === undefined ? {} : { reasonForBlock }),
    };
    savings.transactions.push(transaction);
    return transaction;
  }

  #commandResult(savings: Savings, transaction: Transaction): FixtureReply {
    return {
      status: 200,
      body: {
        officeId: new JsonNumber('1'),
        ...(savings.clientId === undefined ? {} : { clientId: new JsonNumber(savings.clientId) }),
        savingsId: new JsonNumber(savings.id),
        resourceId: new JsonNumber(transaction.id),
        changes: {},
      },
    };
  }

  #clientBody(client: Client): unknown {
    const seed = client.seed;
    const [year, month, day] = (seed.dateOfBirth ?? '').split('-');
    return {
      id: new JsonNumber(client.id),
      accountNo: client.id.padStart(9, '0'),
      externalId: seed.idValue,
      status: { id: new JsonNumber(client.statusId), code: 'clientStatusType.active', value: 'Active' },
      active: true,
      firstname: seed.firstName,
      ...(seed.middleName === undefined ? {} : { middlename: seed.middleName }),
      lastname: seed.lastName,
      displayName: [seed.firstName, seed.middleName, seed.lastName].filter((part) => part !== undefined).join(' '),
      mobileNo: seed.idValue,
      ...(year === undefined || month === undefined || day === undefined || seed.dateOfBirth === undefined
        ? {}
        : { dateOfBirth: [new JsonNumber(String(Number(year))), new JsonNumber(String(Number(month))), new JsonNumber(String(Number(day)))] }),
      officeId: new JsonNumber('1'),
    };
  }

  #transactionBody(transaction: Transaction): unknown {
    return {
      id: new JsonNumber(transaction.id),
      transactionType: transactionType(transaction.typeId),
      amount: this.#amount(transaction.amountMinor),
      currency: this.#currencyBody(),
      reversed: transaction.reversed,
      date: transaction.date.split('-').map((part) => new JsonNumber(String(Number(part)))),
      ...(transaction.receiptNumber === undefined
        ? {}
        : { paymentDetailData: { id: new JsonNumber(transaction.id), paymentType: { id: new JsonNumber('4'), name: 'Mojaloop' }, receiptNumber: transaction.receiptNumber } }),
      ...(transaction.reasonForBlock === undefined ? {} : { reasonForBlock: transaction.reasonForBlock }),
      releaseTransactionId: new JsonNumber(transaction.releaseTransactionId),
    };
  }

  /** Amounts and balances at the columns' scale, 6 decimals; an overdrawn balance is negative. */
  #amount(minor: bigint): JsonNumber {
    return new JsonNumber(minor < 0n ? `-${this.books.formatPadded(-minor, 6)}` : this.books.formatPadded(minor, 6));
  }

  #currencyBody(): unknown {
    return { code: this.books.currency, name: this.books.currency, decimalPlaces: new JsonNumber('2'), inMultiplesOf: new JsonNumber('1') };
  }
}

function savingsStatus(id: string): unknown {
  const codes: Record<string, string> = { '300': 'savingsAccountStatusType.active', '600': 'savingsAccountStatusType.closed' };
  return { id: new JsonNumber(id), code: codes[id] ?? 'savingsAccountStatusType.invalid', value: id === '300' ? 'Active' : 'Closed', active: id === '300', closed: id === '600' };
}

function subStatus(id: string): unknown {
  const codes: Record<string, string> = { '0': 'SavingsAccountSubStatusEnum.none', '400': 'SavingsAccountSubStatusEnum.block' };
  return { id: new JsonNumber(id), code: codes[id] ?? 'SavingsAccountSubStatusEnum.invalid', value: id === '400' ? 'Block' : 'None', none: id === '0', block: id === '400' };
}

function transactionType(typeId: string): unknown {
  const codes: Record<string, string> = {
    [FINERACT_TRANSACTION_TYPE.deposit]: 'savingsAccountTransactionType.deposit',
    [FINERACT_TRANSACTION_TYPE.withdrawal]: 'savingsAccountTransactionType.withdrawal',
    [FINERACT_TRANSACTION_TYPE.amountHold]: 'savingsAccountTransactionType.onHold',
    [FINERACT_TRANSACTION_TYPE.amountRelease]: 'savingsAccountTransactionType.release',
  };
  return { id: new JsonNumber(typeId), code: codes[typeId] ?? 'savingsAccountTransactionType.invalid', value: codes[typeId] ?? '' };
}

/** A batch request's headers (BatchRequest.headers: [{name, value}]). */
function batchHeaders(item: Record<string, unknown>): Array<{ name: string; value: string }> {
  const headers = item['headers'];
  return Array.isArray(headers) ? headers.filter(isRecord).map((header) => ({ name: String(header['name']), value: String(header['value']) })) : [];
}

/** The key of a command in Fineract's idempotency store: action + entity + the Idempotency-Key header. */
function idempotencyKeyOf(request: FixtureRequest): string | undefined {
  const header = request.headers['idempotency-key'];
  if (request.method !== 'POST' || typeof header !== 'string' || header === '') return undefined;
  const action = (request.query.get('command') ?? '').toUpperCase();
  return `${action}|SAVINGSACCOUNT|${header}`;
}

/** Fineract's error body: the top-level code, and the reason repeated in `errors`. */
function fail(status: number, code: string, message: string): FixtureReply {
  return {
    status,
    body: {
      developerMessage: message,
      httpStatusCode: String(status),
      defaultUserMessage: message,
      userMessageGlobalisationCode: status === 403 ? 'validation.msg.domain.rule.violation' : code,
      errors: [{ developerMessage: message, defaultUserMessage: message, userMessageGlobalisationCode: code, parameterName: 'id', args: [] }],
    },
  };
}

/** A validation failure (PlatformApiDataValidationException): 400, the specific code in errors[0]. */
function validationErrors(code: string, message: string, parameterName: string): FixtureReply {
  return {
    status: 400,
    body: {
      developerMessage: 'Invalid parameter(s) was/were passed in the request.',
      httpStatusCode: '400',
      defaultUserMessage: 'Validation errors exist.',
      userMessageGlobalisationCode: 'validation.msg.validation.errors.exist',
      errors: [{ developerMessage: message, defaultUserMessage: message, userMessageGlobalisationCode: code, parameterName, args: [] }],
    },
  };
}
