import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { compareDecimal } from '../../../domain/money.js';
import type { Clock } from '../../../ports/clock.js';
import type {
  CollectResult,
  CommitRequest,
  CoreBanking,
  CoreBankingCapabilities,
  InstitutionTransactionStatus,
  PartyDetails,
  RefundRequest,
  ReserveRequest,
} from '../../../ports/core-banking.js';
import { JsonNumber } from '../shared/decimal-json.js';
import { InstitutionHttp, parse2xx, readWire, type InstitutionAnswer, type InstitutionRequest } from '../shared/institution-http.js';
import { amountForWire } from '../shared/wire-reader.js';
import type { FineractOptions } from './fineract-options.js';
import {
  checkBookedAmounts,
  chooseSavingsAccount,
  declineFor,
  evidenceFor,
  holdCommand,
  moneyCommand,
  readClientPage,
  readCommandResult,
  readSavingsAccount,
  readSavingsSummaries,
  statusFromFloat,
  toPartyDetails,
  transactionDate,
  type FineractRole,
} from './fineract-transform.js';
import type { FineractClient, FineractSavingsAccount, FineractSavingsSummary, FineractTransaction } from './fineract-wire.js';
import { KeyedSerializer } from '../../../shared/keyed-serializer.js';

export interface FineractDeps {
  readonly clock: Clock;
}

/**
 * Adapter for Apache Fineract (bank flow). Parties are clients found by their external id, which
 * the institution sets to the identifier it registered with the platform (e.g. the MSISDN); the
 * payee account is the client's savings account. The prefunded float is one savings account.
 *
 * Money and idempotency. Fineract has no idempotency key, so every step is booked with our
 * reference where it can be read back (the receipt number of a deposit or withdrawal, the reason
 * of a hold), and each operation first reads what is already booked under the reference and
 * books only the missing steps, in a fixed order:
 * - reserve: hold on the float;
 * - commit: deposit to the payee, release the hold, withdraw from the float;
 * - refund: deposit to the payer, withdraw from the float;
 * - release: release the hold.
 * A crash or timeout between steps leaves a state the next attempt recognises and finishes; the
 * float withdrawal always comes last, so it marks a finished operation. Depositing first also
 * means a payee account that cannot receive is refused before the reservation is touched.
 * Reading the float's statement costs one call per operation; Fineract offers no search by
 * receipt number on the versions this adapter targets.
 *
 * Read-then-book is only safe when one operation on a reference runs at a time: two overlapping
 * commits would both read "no deposit yet" and both deposit. So reserve, commit, release and
 * refund take turns per reference (KeyedSerializer), and the second sees the first's booking.
 * That covers one process only; operations on one reference from two connector processes at
 * once are not serialised here.
 */
export class FineractCoreBanking implements CoreBanking {
  readonly name = 'fineract';
  readonly capabilities: CoreBankingCapabilities = { outgoingFlow: 'bank', nativeHolds: true };
  readonly #http: InstitutionHttp;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #options: FineractOptions;
  readonly #clock: Clock;
  /** In-process only: see the class comment. */
  readonly #turns = new KeyedSerializer();

  constructor(options: FineractOptions, deps: FineractDeps) {
    this.#options = options;
    this.#clock = deps.clock;
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
    return this.#turns.run(request.reference, () => this.#reserve(request));
  }

  commit(request: CommitRequest): Promise<void> {
    return this.#turns.run(request.reference, () => this.#commit(request));
  }

  release(reference: string): Promise<void> {
    return this.#turns.run(reference, () => this.#release(reference));
  }

  refund(request: RefundRequest): Promise<void> {
    return this.#turns.run(request.reference, () => this.#refund(request));
  }

  async collect(): Promise<CollectResult> {
    throw new ConnectorError('NotSupported', 'fineract works in the bank flow: the channel debits the customer, there is no payment prompt');
  }

  async #reserve(request: ReserveRequest): Promise<void> {
    const amount = amountForWire(request.amount);
    const float = await this.#float('reserve: read float', request.amount.currency);
    const booked = evidenceFor(float, request.reference);
    checkBookedAmounts(booked, amount, request.reference);
    if (booked.withdrawals.length > 0) return;
    const hold = booked.holds[0];
    if (hold !== undefined) {
      if (isReleased(hold)) throw new ConnectorError('TransferStateConflict', `fineract: reservation ${request.reference} was released`);
      return;
    }
    await this.#command('reserve: hold', float.id, '?command=holdAmount', holdCommand(amount, request.reference, this.#today()), 'float');
  }

  async #commit(request: CommitRequest): Promise<void> {
    const amount = amountForWire(request.amount);
    const float = await this.#float('commit: read float', request.amount.currency);
    const payee = await this.#account(request.payeeAccountId, 'commit: read payee', 'payee');
    checkCurrency(payee, request.amount.currency, 'payee');
    const onFloat = evidenceFor(float, request.reference);
    const onPayee = evidenceFor(payee, request.reference);
    checkBookedAmounts(onFloat, amount, request.reference);
    checkBookedAmounts(onPayee, amount, request.reference);
    const hold = onFloat.holds[0];
    if (onPayee.deposits.length === 0) {
      if (onFloat.withdrawals.length > 0) {
        throw new ConnectorError('TransferStateConflict', `fineract: ${request.reference} left the float but was never deposited; needs an operator`);
      }
      if (hold === undefined) throw new ConnectorError('TransferNotFound', `fineract: nothing reserved under ${request.reference}`);
      if (isReleased(hold)) throw new ConnectorError('TransferStateConflict', `fineract: reservation ${request.reference} was released`);
      await this.#moneyCommand('commit: deposit', payee.id, 'deposit', amount, request.reference, 'payee');
    }
    if (hold !== undefined && !isReleased(hold)) {
      await this.#command('commit: release hold', float.id, `/${hold.id}?command=releaseAmount`, {}, 'float');
    }
    if (onFloat.withdrawals.length === 0) {
      await this.#moneyCommand('commit: withdraw float', float.id, 'withdrawal', amount, request.reference, 'float');
    }
  }

  async #release(reference: string): Promise<void> {
    const float = await this.#float('release: read float');
    const booked = evidenceFor(float, reference);
    if (booked.withdrawals.length > 0) throw new ConnectorError('TransferStateConflict', `fineract: reservation ${reference} was committed`);
    const hold = booked.holds[0];
    if (hold === undefined || isReleased(hold)) return;
    await this.#command('release: release hold', float.id, `/${hold.id}?command=releaseAmount`, {}, 'float');
  }

  async #refund(request: RefundRequest): Promise<void> {
    const amount = amountForWire(request.amount);
    const found = await this.#findSavings(request.payerId, undefined, 'refund: find payer', 'payer');
    const payer = await this.#account(found.account.id, 'refund: read payer', 'payer');
    checkCurrency(payer, request.amount.currency, 'payer');
    const float = await this.#float('refund: read float', request.amount.currency);
    const onPayer = evidenceFor(payer, request.reference);
    const onFloat = evidenceFor(float, request.reference);
    checkBookedAmounts(onPayer, amount, request.reference);
    checkBookedAmounts(onFloat, amount, request.reference);
    if (onPayer.deposits.length === 0) {
      // Checked before depositing, so that a short float does not leave a deposit without its withdrawal.
      if (compareDecimal(float.availableBalance ?? float.accountBalance, amount) < 0) {
        throw new ConnectorError('InstitutionUnavailable', `fineract: the float cannot fund refund ${request.reference} now`);
      }
      await this.#moneyCommand('refund: deposit', payer.id, 'deposit', amount, request.reference, 'payer');
    }
    if (onFloat.withdrawals.length === 0) {
      await this.#moneyCommand('refund: withdraw float', float.id, 'withdrawal', amount, request.reference, 'float');
    }
  }

  async transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    const float = await this.#float('transactionStatus: read float');
    return statusFromFloat(evidenceFor(float, reference));
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

  async #account(savingsId: string, operation: string, role: FineractRole): Promise<FineractSavingsAccount> {
    const answer = await this.#send({ operation, method: 'GET', path: `/savingsaccounts/${encodeURIComponent(savingsId)}?associations=transactions` });
    if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, role);
    return parse2xx(this.#http, answer, readSavingsAccount);
  }

  async #moneyCommand(operation: string, savingsId: string, command: 'deposit' | 'withdrawal', amount: string, reference: string, role: FineractRole): Promise<void> {
    const body = moneyCommand(amount, reference, this.#today(), new JsonNumber(this.#options.paymentTypeId), `Mojaloop ${reference}`);
    await this.#command(operation, savingsId, `?command=${command}`, body, role);
  }

  async #command(operation: string, savingsId: string, suffix: string, body: unknown, role: FineractRole): Promise<void> {
    const answer = await this.#send({ operation, method: 'POST', path: `/savingsaccounts/${encodeURIComponent(savingsId)}/transactions${suffix}`, json: body });
    if (answer.status >= 400) throw declineFor(operation, answer.status, answer.body, role);
    parse2xx(this.#http, answer, (result) => readCommandResult(result, savingsId));
  }

  #send(call: InstitutionRequest): Promise<InstitutionAnswer> {
    return this.#http.send({ ...call, headers: this.#headers });
  }

  #today(): string {
    return transactionDate(this.#clock.now());
  }
}

function isReleased(hold: FineractTransaction): boolean {
  return hold.releaseTransactionId !== undefined;
}

function checkCurrency(account: FineractSavingsAccount, currency: string, role: FineractRole): void {
  if (account.currency !== currency) {
    throw new ConnectorError(role === 'float' ? 'InstitutionUnavailable' : 'UnsupportedCurrency', `fineract: the ${role} account is not in ${currency}`);
  }
}
