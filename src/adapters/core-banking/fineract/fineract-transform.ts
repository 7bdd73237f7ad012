import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { compareDecimal } from '../../../domain/money.js';
import type { AccountStatus, PartyDetails } from '../../../ports/core-banking.js';
import { MalformedResponse, WireRecord, isRecord, optionalField } from '../shared/wire-reader.js';
import { parseDecimalJson } from '../shared/decimal-json.js';
import {
  FINERACT_TRANSACTION_TYPE,
  type FineractClient,
  type FineractCommandResult,
  type FineractEnum,
  type FineractError,
  type FineractFloatAccount,
  type FineractHold,
  type FineractHoldCommand,
  type FineractMoneyCommand,
  type FineractPaymentType,
  type FineractSavingsAccount,
  type FineractSavingsSummary,
  type FineractTransactionPage,
} from './fineract-wire.js';

/** Pure conversions between Fineract's wire and the port. */

function readEnum(record: WireRecord, key: string): FineractEnum {
  const value = record.record(key);
  return { id: value.integerText('id'), code: value.string('code') };
}

export function readClientPage(body: unknown): FineractClient[] {
  return WireRecord.of(body).array('pageItems').map(readClient);
}

function readClient(client: WireRecord): FineractClient {
  return {
    id: client.integerText('id'),
    ...optionalField('externalId', client.optionalString('externalId')),
    status: readEnum(client, 'status'),
    displayName: client.string('displayName'),
    ...optionalField('firstname', client.optionalString('firstname')),
    ...optionalField('middlename', client.optionalString('middlename')),
    ...optionalField('lastname', client.optionalString('lastname')),
    ...optionalField('dateOfBirth', readLocalDate(client, 'dateOfBirth')),
  };
}

/** Fineract writes dates as [year, month, day]. */
function readLocalDate(record: WireRecord, key: string): readonly [string, string, string] | undefined {
  if (!record.has(key)) return undefined;
  const value = record.values[key];
  if (!Array.isArray(value) || value.length !== 3) throw new MalformedResponse(`${record.at(key)} is not [year, month, day]`);
  const parts = WireRecord.of({ y: value[0], m: value[1], d: value[2] }, record.at(key));
  return [parts.integerText('y'), parts.integerText('m'), parts.integerText('d')];
}

export function readSavingsSummaries(body: unknown): FineractSavingsSummary[] {
  const accounts = WireRecord.of(body);
  if (!accounts.has('savingsAccounts')) return [];
  return accounts.array('savingsAccounts').map((account) => ({
    id: account.integerText('id'),
    accountNo: account.string('accountNo'),
    status: readEnum(account, 'status'),
    ...optionalField('subStatus', account.has('subStatus') ? readEnum(account, 'subStatus') : undefined),
    currency: account.record('currency').string('code'),
    ...optionalField('depositType', account.optionalRecord('depositType')?.string('code')),
  }));
}

/** An account's id, status and currency; its balances are not read (see readFloatAccount). */
export function readSavingsAccount(body: unknown): FineractSavingsAccount {
  const account = WireRecord.of(body);
  return {
    id: account.integerText('id'),
    status: readEnum(account, 'status'),
    ...optionalField('subStatus', account.has('subStatus') ? readEnum(account, 'subStatus') : undefined),
    currency: account.record('currency').string('code'),
  };
}

/** The float and its balances (summary.accountBalance, summary.availableBalance), signed and at any scale. */
export function readFloatAccount(body: unknown): FineractFloatAccount {
  const summary = WireRecord.of(body).record('summary');
  return {
    ...readSavingsAccount(body),
    accountBalance: readBalance(summary, 'accountBalance'),
    ...optionalField('availableBalance', summary.has('availableBalance') ? readBalance(summary, 'availableBalance') : undefined),
  };
}

const SIGNED_DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/** A balance as Fineract writes it: a JSON number, possibly negative, with any number of decimals; kept as its text. */
function readBalance(record: WireRecord, key: string): string {
  const text = record.number(key).text;
  if (!SIGNED_DECIMAL.test(text)) throw new MalformedResponse(`${record.at(key)} is not a decimal balance`);
  return text;
}

/** Whether a balance (signed, any scale) covers a positive amount; compared as decimals, never as numbers. */
export function fundsCover(balance: string, amount: string): boolean {
  if (balance.startsWith('-')) return false;
  return compareDecimal(balance, amount) >= 0;
}

/**
 * A hold read by its id. Fineract writes `releaseTransactionId` as a number on every savings
 * transaction: 0 while a hold is unreleased, the release transaction's id once released.
 */
export function readHoldTransaction(body: unknown): FineractHold {
  const transaction = WireRecord.of(body);
  const typeId = transaction.record('transactionType').integerText('id');
  if (typeId !== FINERACT_TRANSACTION_TYPE.amountHold) throw new MalformedResponse(`transaction ${transaction.integerText('id')} is not an amount hold (type ${typeId})`);
  const currency = transaction.record('currency').string('code');
  const releaseId = transaction.has('releaseTransactionId') ? transaction.integerText('releaseTransactionId') : '0';
  return { id: transaction.integerText('id'), amount: transaction.amountNumber('amount', currency), released: releaseId !== '0' };
}

/**
 * A page of GET /savingsaccounts/{id}/transactions/search (SavingsAccountTransactionsApiResource
 * .searchTransactions: Spring's Page, `{ total, content }`). The value date is Fineract's
 * LocalDate: `[year, month, day]`, or "yyyy-MM-dd" text when a date format applies.
 */
export function readTransactionPage(body: unknown): FineractTransactionPage {
  const page = WireRecord.of(body);
  const total = Number(page.integerText('total'));
  const transactions = page.array('content').map((line) => {
    const currency = line.record('currency').string('code');
    const detail = line.optionalRecord('paymentDetailData');
    return {
      id: line.integerText('id'),
      typeId: line.record('transactionType').integerText('id'),
      amount: line.amountNumber('amount', currency),
      currency,
      date: readValueDate(line, 'date'),
      receiptNumber: detail?.optionalString('receiptNumber'),
      reversed: line.optionalBoolean('reversed') ?? false,
    };
  });
  return { total, transactions };
}

/** A value date as YYYY-MM-DD, from Fineract's [year, month, day] or from "yyyy-MM-dd" text. */
function readValueDate(record: WireRecord, key: string): string {
  const value = record.values[key];
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value)) return value;
  const parts = readLocalDate(record, key);
  if (parts === undefined) throw new MalformedResponse(`${record.at(key)} is missing`);
  const [year, month, day] = parts;
  return `${year.padStart(4, '0')}-${month.padStart(2, '0')}-${day.padStart(2, '0')}`;
}

export function readPaymentTypes(body: unknown): FineractPaymentType[] {
  if (!Array.isArray(body)) throw new MalformedResponse('body is not a list of payment types');
  return body.map((item, index) => {
    const type = WireRecord.of(item, `body[${index}]`);
    return { id: type.integerText('id'), name: type.string('name') };
  });
}

/** savingsAccountStatusType.active */
export const SAVINGS_ACTIVE_STATUS = '300';

/**
 * One answer of a batch (Fineract's BatchResponse): the request it answers, its status, its body
 * (Fineract sends each body as JSON text; read here, or kept as text when it is not JSON) and
 * whether Fineract answered it from its idempotency store (the x-served-from-cache header).
 */
export interface FineractBatchAnswer {
  readonly requestId: string;
  readonly statusCode: number;
  readonly body: unknown;
  readonly servedFromCache: boolean;
}

/** POST /batches answers a list of BatchResponse: {requestId, statusCode, headers: [{name, value}], body}. */
export function readBatchAnswers(body: unknown): FineractBatchAnswer[] {
  if (!Array.isArray(body)) throw new MalformedResponse('body is not a list of batch answers');
  return body.map((item, index) => {
    const answer = WireRecord.of(item, `body[${index}]`);
    const statusText = answer.integerText('statusCode');
    const text = answer.optionalString('body');
    let parsed: unknown = text;
    if (text !== undefined) {
      try {
        parsed = parseDecimalJson(text);
      } catch {
        parsed = text;
      }
    }
    const headers = answer.has('headers') ? answer.array('headers') : [];
    const servedFromCache = headers.some((header) => header.optionalString('name')?.toLowerCase() === 'x-served-from-cache' && header.optionalString('value') === 'true');
    return { requestId: answer.integerText('requestId'), statusCode: Number(statusText), body: parsed, servedFromCache };
  });
}

export function readCommandResult(body: unknown, savingsId: string): FineractCommandResult {
  const result = WireRecord.of(body);
  const echoed = result.integerText('savingsId');
  if (echoed !== savingsId) throw new MalformedResponse('body.savingsId differs from the account the command was sent to');
  return { savingsId: echoed, resourceId: result.integerText('resourceId') };
}

/**
 * The savings account that stands for a client in payments. With a sub-identifier the account
 * number must match it; otherwise the client's active plain savings account with the lowest
 * id, or, when none is active, the lowest one of any status (so that its state is reported).
 */
export function chooseSavingsAccount(accounts: readonly FineractSavingsSummary[], idSubValue: string | undefined): FineractSavingsSummary | undefined {
  const savings = accounts
    .filter((account) => account.depositType === undefined || account.depositType === 'depositAccountType.savingsDeposit')
    .filter((account) => idSubValue === undefined || account.accountNo === idSubValue)
    .sort((a, b) => compareIds(a.id, b.id));
  return savings.find((account) => account.status.id === SAVINGS_ACTIVE_STATUS) ?? savings[0];
}

function compareIds(a: string, b: string): number {
  return a.length === b.length ? (a < b ? -1 : a > b ? 1 : 0) : a.length - b.length;
}


/** Rank of the three ways an account can be unable to receive; the worst of client and account wins. */
const SEVERITY: Record<AccountStatus, number> = { active: 0, barred: 1, blocked: 2, closed: 3 };

/** A client and account status Fineract documents, or MalformedResponse: a new status is never guessed. */
export function accountStatusOf(client: FineractClient, account: Pick<FineractSavingsSummary, 'status' | 'subStatus'>): AccountStatus {
  const candidates = [clientStatus(client.status), savingsStatus(account.status), subStatus(account.subStatus)];
  return candidates.reduce<AccountStatus>((worst, next) => (SEVERITY[next] > SEVERITY[worst] ? next : worst), 'active');
}

function clientStatus(status: FineractEnum): AccountStatus {
  switch (status.id) {
    case '300': // active
      return 'active';
    case '100': // pending activation
    case '303': // transfer in progress
    case '304': // transfer on hold
      return 'blocked';
    case '0': // invalid
    case '600': // closed
    case '700': // rejected
    case '800': // withdrawn
      return 'closed';
    default:
      throw new MalformedResponse(`client status ${status.id} is not one the adapter knows`);
  }
}

function savingsStatus(status: FineractEnum): AccountStatus {
  switch (status.id) {
    case '300': // active
      return 'active';
    case '100': // submitted and pending approval
    case '200': // approved, not yet activated
    case '303': // transfer in progress
    case '304': // transfer on hold
      return 'blocked';
    case '400': // withdrawn by applicant
    case '500': // rejected
    case '600': // closed
    case '700': // pre-maturely closed
    case '800': // matured
      return 'closed';
    default:
      throw new MalformedResponse(`savings account status ${status.id} is not one the adapter knows`);
  }
}

function subStatus(status: FineractEnum | undefined): AccountStatus {
  const id = status?.id;
  switch (id) {
    case undefined:
    case '0': // none
    case '100': // inactive
    case '200': // dormant
    case '600': // debits blocked: credits still land
      return 'active';
    case '300': // escheat: balance handed to the state
    case '400': // blocked
    case '500': // credits blocked
      return 'blocked';
    default:
      throw new MalformedResponse(`savings account sub-status ${id} is not one the adapter knows`);
  }
}

export function toPartyDetails(id: PartyId, client: FineractClient, account: FineractSavingsSummary): PartyDetails {
  const dateOfBirth = client.dateOfBirth === undefined ? undefined : isoDate(client.dateOfBirth);
  return {
    idType: id.idType,
    idValue: id.idValue,
    ...optionalField('idSubValue', id.idSubValue),
    accountId: account.id,
    currency: account.currency,
    status: accountStatusOf(client, account),
    displayName: client.displayName,
    ...optionalField('firstName', client.firstname),
    ...optionalField('middleName', client.middlename),
    ...optionalField('lastName', client.lastname),
    ...optionalField('dateOfBirth', dateOfBirth),
  };
}

function isoDate([year, month, day]: readonly [string, string, string]): string {
  return `${year.padStart(4, '0')}-${month.padStart(2, '0')}-${day.padStart(2, '0')}`;
}

export function moneyCommand(amount: string, reference: string, transactionDate: string, paymentTypeId: unknown, note: string): FineractMoneyCommand {
  return { locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate, transactionAmount: amount, paymentTypeId, receiptNumber: reference, note };
}

export function holdCommand(amount: string, reference: string, transactionDate: string): FineractHoldCommand {
  return { locale: 'en', dateFormat: 'yyyy-MM-dd', transactionDate, transactionAmount: amount, reasonForBlock: reference };
}

/** Formats an instant as the tenant's calendar day (see transactionDate). */
export function tenantDayFormat(timeZone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', calendar: 'iso8601', numberingSystem: 'latn' });
}

/**
 * The date of a command, yyyy-MM-dd as the commands' dateFormat expects: the tenant's day, not
 * UTC's. Fineract dates a release with the tenant's business date (DateUtils.getBusinessLocalDate,
 * the day in the tenant's time zone: SavingsAccountTransactionDataValidator
 * .validateReleaseAmountAndAssembleForm), refuses a hold dated before the account's last
 * transaction (validateHoldAndAssembleForm) and a deposit or withdrawal dated after the business
 * date (SavingsAccount: "transaction.in.the.future"). Dated with the UTC day, every hold on the
 * float was refused from the tenant's midnight to UTC's once a release had been dated the new day.
 */
export function transactionDate(now: Date, tenantDay: Intl.DateTimeFormat): string {
  const parts = tenantDay.formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((candidate) => candidate.type === type)?.value ?? '';
  const date = `${part('year')}-${part('month')}-${part('day')}`;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`tenant day formatted as "${date}"`);
  return date;
}

export function readError(body: unknown): FineractError {
  if (!isRecord(body)) return { codes: [] };
  const codes: string[] = [];
  const top = body['userMessageGlobalisationCode'];
  if (typeof top === 'string') codes.push(top);
  const errors = body['errors'];
  if (Array.isArray(errors)) {
    for (const item of errors) {
      if (isRecord(item) && typeof item['userMessageGlobalisationCode'] === 'string') codes.push(item['userMessageGlobalisationCode']);
    }
  }
  const status = body['httpStatusCode'];
  return { ...optionalField('httpStatusCode', typeof status === 'string' ? status : undefined), codes };
}

/**
 * Whose account a command was about: the float (ours), a payee, a payer. Declines name the
 * party; on the float only a shortfall is a business answer, anything else needs an operator.
 */
export type FineractRole = 'float' | 'payee' | 'payer';

const LOCK_CONFLICT = /^error\.msg\.platform\.service\..+\.conflict$/;

/** A 4xx answer as a catalogue error, from Fineract's globalisation codes (messages are left out: they quote balances). */
export function declineFor(operation: string, status: number, body: unknown, role: FineractRole): ConnectorError {
  const { codes } = readError(body);
  const detail = `fineract ${operation}: HTTP ${status}${codes.length === 0 ? '' : ` ${codes.join(', ')}`}`;
  const has = (fragment: string) => codes.some((code) => code.includes(fragment));
  if (status === 401) return new ConnectorError('InstitutionUnavailable', `${detail}: credentials refused`);
  // Optimistic-lock clashes on a busy account: nothing was booked, and the same call may pass now.
  // ConcurrencyFailureExceptionMapper answers 409 error.msg.platform.service.<entity or "lock">.conflict
  // (ApiGlobalErrorResponse.conflict) once Fineract's own retries of the command are spent.
  if (has('concurrent') || codes.some((code) => LOCK_CONFLICT.test(code))) return new ConnectorError('InstitutionUnavailable', detail);
  if (has('insufficient')) return new ConnectorError(role === 'payer' ? 'PayerInsufficientFunds' : 'PayeeInsufficientLiquidity', detail);
  if (role === 'float') return new ConnectorError('InstitutionUnavailable', `${detail}: the float account refused the command`);
  return new ConnectorError(declineName(status, has, role), detail);
}

function declineName(status: number, has: (fragment: string) => boolean, role: 'payee' | 'payer'): ErrorName {
  if (status === 404) return 'PartyNotFound';
  if (role === 'payer') return 'PayerRejected';
  if (has('blocked') || has('block')) return 'PayeeBlocked';
  if (has('not.active') || has('closed')) return 'PayeeClosed';
  return status === 400 ? 'ValidationFailed' : 'PayeeRejected';
}
