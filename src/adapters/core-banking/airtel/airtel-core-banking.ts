import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { compareDecimal, type Money } from '../../../domain/money.js';
import type { Clock } from '../../../ports/clock.js';
import type {
  CollectRequest,
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
import { MalformedResponse, amountForWire } from '../shared/wire-reader.js';
import type { AirtelOptions } from './airtel-options.js';
import { AirtelTokenCache } from './airtel-token.js';
import {
  airtelReference,
  collectionOutcome,
  disbursementId,
  disbursementOutcome,
  enquiryStatus,
  envelopeOf,
  readBalance,
  readEnvelope,
  readSubscriber,
  readToken,
  readTransaction,
  toAirtelMsisdn,
  toPartyDetails,
  type AirtelEnvelope,
} from './airtel-transform.js';
import { COLLECTION_CODES, DISBURSEMENT_CODES, type AirtelCollectionRequest, type AirtelDisbursementRequest } from './airtel-wire.js';

/**
 * Attempts of one disbursement, each under its own Airtel transaction id, before the adapter
 * stops and asks for a payment by hand (each attempt that failed is final at Airtel).
 */
const DISBURSEMENT_GENERATIONS = 8;

export interface AirtelDeps {
  readonly clock: Clock;
}

/**
 * Adapter for Airtel Money (mobile-operator flow).
 * - lookupParty: KYC enquiry; a barred subscriber is reported as barred.
 * - reserve: Airtel has no holds. Reserve checks that our disbursement wallet's balance covers
 *   the amount and records nothing; two reservations can both pass against the same balance, so
 *   the wallet must be funded with margin. release is a no-op and calls nothing.
 * - commit and refund: a B2C disbursement whose transaction id is our reference, so Airtel itself
 *   refuses to pay the same reference twice. Each first asks the disbursement enquiry whether the
 *   reference is known, and only disburses when it is not, so a retry after a timeout pays once.
 *   Refunds use a disbursement rather than Airtel's refund call because that call takes no id of
 *   ours and could not be repeated safely.
 * - collect: USSD push with our reference as transaction id; pending until the subscriber
 *   answers, which Airtel reports to the callback URL registered in its portal (readCallback).
 * - transactionStatus: disbursement enquiry, then collection enquiry.
 */
export class AirtelCoreBanking implements CoreBanking {
  readonly name = 'airtel';
  readonly capabilities: CoreBankingCapabilities;
  readonly #http: InstitutionHttp;
  readonly #options: AirtelOptions;
  readonly #tokens: AirtelTokenCache;

  constructor(options: AirtelOptions, deps: AirtelDeps) {
    this.#options = options;
    this.#http = new InstitutionHttp({
      institution: 'airtel',
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutMs,
      connectTimeoutMs: options.connectTimeoutMs,
    });
    // A collect is an enquiry and a push, each a call that may fetch a token first and, on a 401,
    // fetch another and go again (#call): at most 8 calls, each within its deadline.
    this.capabilities = { outgoingFlow: 'mobile-operator', nativeHolds: false, collectTakesUpToMs: 8 * this.#http.callDeadlineMs };
    this.#tokens = new AirtelTokenCache(() => this.#fetchToken(), deps.clock);
  }

  async lookupParty(id: PartyId): Promise<PartyDetails> {
    const msisdn = toAirtelMsisdn(id.idValue, this.#options.dialingCode);
    if (msisdn === undefined) throw new ConnectorError('PartyNotFound');
    const answer = await this.#call({ operation: 'lookupParty', method: 'GET', path: `/standard/v1/users/${encodeURIComponent(msisdn)}` });
    if (answer.status === 404 && envelopeOf(answer.body) === undefined) throw new ConnectorError('PartyNotFound');
    const envelope = this.#envelope(answer);
    // A failed user enquiry (DP02200000000, unknown subscriber, or any other refusal of this MSISDN) finds no party.
    if (!envelope.status.success) throw new ConnectorError('PartyNotFound', `airtel KYC: ${envelope.status.responseCode ?? envelope.status.resultCode ?? envelope.status.code}`);
    return readWire(this.#http, 'lookupParty', () => {
      const subscriber = readSubscriber(envelope.data);
      if (subscriber.msisdn !== msisdn) throw new MalformedResponse('body.data.msisdn differs from the subscriber asked about');
      return toPartyDetails(id, subscriber, this.#options.currency);
    });
  }

  async reserve(request: ReserveRequest): Promise<void> {
    const amount = amountForWire(this.#checkCurrency(request.amount));
    const balance = await this.#walletBalance('reserve');
    if (compareDecimal(balance, amount) < 0) {
      throw new ConnectorError('PayeeInsufficientLiquidity', `airtel reserve ${request.reference}: wallet balance below the amount`);
    }
  }

  async commit(request: CommitRequest): Promise<void> {
    await this.#disburse(request.reference, request.payeeAccountId, this.#checkCurrency(request.amount), 'commit');
  }

  /** Nothing was held, so there is nothing to give back. */
  async release(): Promise<void> {}

  async collect(request: CollectRequest): Promise<CollectResult> {
    const money = this.#checkCurrency(request.amount);
    const msisdn = toAirtelMsisdn(request.payerId, this.#options.dialingCode);
    if (msisdn === undefined) throw new ConnectorError('PartyNotFound');
    const known = await this.#enquire('collect: enquiry', `/standard/v1/payments/${encodeURIComponent(request.reference)}`, request.reference);
    if (known !== 'not-found') return { status: known };
    const { country, currency } = this.#options;
    const body: AirtelCollectionRequest = {
      reference: airtelReference(request.reference),
      subscriber: { country, currency, msisdn },
      transaction: { amount: new JsonNumber(amountForWire(money)), country, currency, id: request.reference },
    };
    const answer = await this.#call({ operation: 'collect', method: 'POST', path: '/merchant/v1/payments/', json: body });
    const envelope = this.#envelope(answer);
    const outcome = readWire(this.#http, 'collect', () => {
      checkPushEcho(envelope, request.reference);
      return collectionOutcome(envelope.status);
    });
    if ('error' in outcome) throw outcome.error;
    return { status: outcome.status };
  }

  async refund(request: RefundRequest): Promise<void> {
    const money = this.#checkCurrency(request.amount);
    const msisdn = toAirtelMsisdn(request.payerId, this.#options.dialingCode);
    if (msisdn === undefined) throw new ConnectorError('PartyNotFound');
    await this.#disburse(request.reference, msisdn, money, 'refund');
  }

  async transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    const path = encodeURIComponent(reference);
    const disbursement = await this.#enquire('transactionStatus', `/standard/v2/disbursements/${path}?transactionType=B2C`, reference);
    if (disbursement !== 'not-found') return disbursement;
    return this.#enquire('transactionStatus', `/standard/v1/payments/${path}`, reference);
  }

  async health(): Promise<void> {
    await this.#walletBalance('health');
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  /**
   * Pays `money` to `msisdn` once under our reference. Each attempt's Airtel transaction id is
   * disbursementId(reference, generation): the enquiry of each generation in turn says where it
   * stands. A generation that succeeded means paid (nothing more is sent); one still in progress
   * or ambiguous means outcome unknown (nothing is sent); one that failed (TF, final: nobody was
   * paid) moves on to the next generation, since Airtel refuses a transaction id it has seen;
   * the first generation Airtel never saw is sent. So a disbursement that failed (a short wallet
   * since topped up, a timeout Airtel settled as failed) is paid by a later attempt, and never
   * twice: every replica and retry derives the same ids, and Airtel refuses a repeated one.
   */
  async #disburse(reference: string, msisdn: string, money: Money, purpose: 'commit' | 'refund'): Promise<void> {
    for (let generation = 0; generation < DISBURSEMENT_GENERATIONS; generation += 1) {
      const id = disbursementId(reference, generation);
      const path = `/standard/v2/disbursements/${encodeURIComponent(id)}?transactionType=B2C`;
      const known = await this.#enquire(`${purpose}: enquiry`, path, id);
      switch (known) {
        case 'succeeded':
          return;
        case 'failed':
          continue;
        case 'pending':
        case 'unknown':
          throw new ConnectorError('InstitutionTimeout', `airtel ${purpose}: disbursement ${id} is not final; outcome unknown`);
        case 'not-found':
          // After a failed attempt (the wallet short, say), an id is spent only once the wallet
          // covers the amount: a retry while the cause lasts would only spend the next one too.
          if (generation > 0) await this.#walletCovers(money, purpose);
          return this.#sendDisbursement(id, msisdn, money, purpose);
      }
    }
    throw new ConnectorError(
      purpose === 'commit' ? 'PayeeRejected' : 'PayerRejected',
      `airtel ${purpose}: ${DISBURSEMENT_GENERATIONS} disbursements under ${reference} failed at Airtel; pay by hand`,
    );
  }

  async #walletCovers(money: Money, purpose: 'commit' | 'refund'): Promise<void> {
    const balance = await this.#walletBalance(`${purpose}: wallet`);
    if (compareDecimal(balance, amountForWire(money)) >= 0) return;
    const detail = `airtel ${purpose}: an earlier disbursement failed and the wallet still cannot cover ${money.amount}; no new transaction id spent`;
    throw new ConnectorError(purpose === 'commit' ? 'PayeeInsufficientLiquidity' : 'InstitutionUnavailable', detail);
  }

  async #sendDisbursement(id: string, msisdn: string, money: Money, purpose: 'commit' | 'refund'): Promise<void> {
    const body: AirtelDisbursementRequest = {
      payee: { msisdn, wallet_type: 'NORMAL' },
      reference: airtelReference(id),
      pin: this.#options.pinEncrypted,
      transaction: { amount: new JsonNumber(amountForWire(money)), id, type: 'B2C' },
    };
    const answer = await this.#call({ operation: `${purpose}: disburse`, method: 'POST', path: '/standard/v2/disbursements/', json: body });
    const envelope = this.#envelope(answer);
    const outcome = readWire(this.#http, `${purpose}: disburse`, () => {
      checkTransactionEcho(envelope, id);
      return disbursementOutcome(envelope.status, purpose);
    });
    if (outcome.kind === 'declined') throw outcome.error;
    if (outcome.kind === 'not-final') {
      throw new ConnectorError('InstitutionTimeout', `airtel ${purpose}: response code ${outcome.code}; outcome unknown`);
    }
  }

  async #enquire(operation: string, path: string, reference: string): Promise<InstitutionTransactionStatus> {
    const answer = await this.#call({ operation, method: 'GET', path });
    // A bare 404 (no Airtel envelope): the gateway knows no such transaction.
    if (answer.status === 404 && envelopeOf(answer.body) === undefined) return 'not-found';
    const envelope = this.#envelope(answer);
    return readWire(this.#http, operation, () => enquiryStatus(envelope, reference));
  }

  async #walletBalance(operation: string): Promise<string> {
    const answer = await this.#call({ operation, method: 'GET', path: '/standard/v1/users/balance' });
    const envelope = this.#envelope(answer);
    if (!envelope.status.success) throw new ConnectorError('InstitutionUnavailable', `airtel ${operation}: balance enquiry refused (${envelope.status.responseCode ?? envelope.status.resultCode ?? envelope.status.code})`);
    const balance = readWire(this.#http, operation, () => readBalance(envelope.data));
    if (balance.currency !== this.#options.currency) {
      throw new ConnectorError('InstitutionUnavailable', `airtel ${operation}: the wallet is not in ${this.#options.currency}`);
    }
    return balance.balance;
  }

  /** One API call with the cached token; a 401 means the token was revoked early, so one fresh token is tried. */
  async #call(call: InstitutionRequest): Promise<InstitutionAnswer> {
    const token = await this.#tokens.get();
    const answer = await this.#http.send({ ...call, headers: this.#headers(token) });
    if (answer.status !== 401) return answer;
    this.#tokens.invalidate(token);
    const retried = await this.#http.send({ ...call, headers: this.#headers(await this.#tokens.get()) });
    if (retried.status === 401) throw new ConnectorError('InstitutionUnavailable', `airtel ${call.operation}: token refused`);
    return retried;
  }

  async #fetchToken(): Promise<{ accessToken: string; expiresInSeconds: number }> {
    const answer = await this.#http.send({
      operation: 'token',
      method: 'POST',
      path: '/auth/oauth2/token',
      json: { client_id: this.#options.clientId, client_secret: this.#options.clientSecret, grant_type: 'client_credentials' },
    });
    if (answer.status >= 400) throw new ConnectorError('InstitutionUnavailable', `airtel token: HTTP ${answer.status}, credentials refused`);
    return parse2xx(this.#http, answer, readToken);
  }

  #headers(token: string): Record<string, string> {
    return { authorization: `Bearer ${token}`, 'x-country': this.#options.country, 'x-currency': this.#options.currency };
  }

  #checkCurrency(money: Money): Money {
    if (money.currency !== this.#options.currency) throw new ConnectorError('UnsupportedCurrency', `airtel works in ${this.#options.currency}`);
    return money;
  }

  /**
   * Airtel's envelope, whatever the HTTP status: every decision is taken on its fields
   * (status.success, status.response_code, data.transaction.status). Only a 4xx without an
   * envelope is the request refused as such.
   */
  #envelope(answer: InstitutionAnswer): AirtelEnvelope {
    if (answer.status >= 400) {
      const envelope = envelopeOf(answer.body);
      if (envelope !== undefined) return envelope;
      this.#refuseOn4xx(answer);
    }
    return parse2xx(this.#http, answer, readEnvelope);
  }

  /** A 4xx without Airtel's envelope: the request itself was refused. */
  #refuseOn4xx(answer: InstitutionAnswer): void {
    if (answer.status < 400) return;
    if (answer.status === 403) throw new ConnectorError('InstitutionUnavailable', `airtel ${answer.operation}: HTTP 403, the application may not use this API`);
    throw new ConnectorError('ValidationFailed', `airtel ${answer.operation}: HTTP ${answer.status}`);
  }
}

/**
 * A USSD push's answer names no transaction of ours: Airtel's documented 200 answer carries
 * `data.transaction: {id: false, status: "SUCCESS"}` (Collection API, USSD push, response
 * sample). Only an id that is there and is another transaction's is refused.
 */
function checkPushEcho(envelope: AirtelEnvelope, reference: string): void {
  const id = envelope.data?.optionalRecord('transaction')?.values['id'];
  if (typeof id === 'string' && id !== reference) throw new MalformedResponse('body.data.transaction.id differs from our reference');
}

/** A confirmed transaction must be ours. */
function checkTransactionEcho(envelope: AirtelEnvelope, reference: string): void {
  if (!envelope.status.success || envelope.data === undefined) return;
  const transaction = readTransaction(envelope.data);
  if (transaction.id !== reference) throw new MalformedResponse('body.data.transaction.id differs from our reference');
}
