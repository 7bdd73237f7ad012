import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import { compareDecimal, type Money } from '../../../domain/money.js';
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
import { InstitutionHealthError } from '../../../ports/core-banking.js';
import { InstitutionHttp, parse2xx, type InstitutionAnswer, type InstitutionRequest } from '../shared/institution-http.js';
import { MalformedResponse, WireRecord } from '../shared/wire-reader.js';
import type { MiniBankOptions } from './minibank-options.js';
import { fromMinor, readCustomer, readFloatBalance, readPayment, refusal, toMinor, toPartyDetails, toTransactionStatus } from './minibank-transform.js';
import type { MiniBankPaymentRequest } from './minibank-wire.js';

/**
 * MiniBank, the worked example of docs/adding-an-institution.md. It has no holds, so reserve
 * checks the float and release does nothing; commit and refund are payments out of the float,
 * made idempotent by MiniBank itself through the Idempotency-Key header (our reference).
 */
export class MiniBankCoreBanking implements CoreBanking {
  readonly name = 'minibank';
  readonly capabilities: CoreBankingCapabilities = { outgoingFlow: 'bank', nativeHolds: false };
  readonly #http: InstitutionHttp;
  readonly #apiKey: string;

  constructor(options: MiniBankOptions) {
    this.#http = new InstitutionHttp({ institution: 'minibank', baseUrl: options.baseUrl, timeoutMs: options.timeoutMs });
    this.#apiKey = options.apiKey;
  }

  /**
   * MiniBank finds customers by MSISDN only and has one wallet per customer: any other identifier
   * type, or a sub-identifier, names nobody it has (asked anyway, it would answer the wallet of
   * whoever has that number). An answer naming several customers, or another number, is refused.
   */
  async lookupParty(id: PartyId): Promise<PartyDetails> {
    if (id.idType !== 'MSISDN' || id.idSubValue !== undefined) throw new ConnectorError('PartyNotFound', 'minibank finds customers by MSISDN alone');
    const answer = await this.#send({ operation: 'lookupParty', method: 'GET', path: `/customers?msisdn=${encodeURIComponent(id.idValue)}` });
    this.#outageOn4xx(answer);
    const customer = parse2xx(this.#http, answer, (body) => readCustomer(body, id.idValue));
    if (customer === undefined) throw new ConnectorError('PartyNotFound');
    return toPartyDetails(id, customer);
  }

  async reserve(request: ReserveRequest): Promise<void> {
    const answer = await this.#send({ operation: 'reserve', method: 'GET', path: '/float' });
    this.#outageOn4xx(answer);
    const balance = parse2xx(this.#http, answer, (body) => readFloatBalance(body, request.amount.currency));
    if (compareDecimal(balance, request.amount.amount) < 0) throw new ConnectorError('PayeeInsufficientLiquidity', 'minibank float below the amount');
  }

  async commit(request: CommitRequest): Promise<void> {
    await this.#pay('commit', request.reference, request.payeeAccountId, request.amount, 'payee');
  }

  /** Nothing was held. */
  async release(): Promise<void> {}

  async collect(): Promise<CollectResult> {
    throw new ConnectorError('NotSupported', 'minibank has no payment prompts');
  }

  async refund(request: RefundRequest): Promise<void> {
    const payer = await this.lookupParty({ idType: 'MSISDN', idValue: request.payerId });
    await this.#pay('refund', request.reference, payer.accountId, request.amount, 'payer');
  }

  async transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    const answer = await this.#send({ operation: 'transactionStatus', method: 'GET', path: `/payments/${encodeURIComponent(reference)}` });
    if (answer.status === 404) return 'not-found';
    this.#outageOn4xx(answer);
    const payment = parse2xx(this.#http, answer, (body) => {
      const read = readPayment(body);
      // A payment under another key says nothing about ours.
      if (read.key !== reference) throw new MalformedResponse('body.key differs from the request');
      return read;
    });
    return toTransactionStatus(payment.state);
  }

  async health(): Promise<void> {
    const answer = await this.#send({ operation: 'health', method: 'GET', path: '/ping' });
    if (answer.status === 401 || answer.status === 403) {
      // The key was refused: /health and the start-up log say so, for an operator to fix MINIBANK_API_KEY.
      const detail = `minibank health: HTTP ${answer.status}: MINIBANK_API_KEY refused`;
      throw new ConnectorError('InstitutionUnavailable', detail, { cause: new InstitutionHealthError('credentials-refused', detail) });
    }
    this.#outageOn4xx(answer);
    parse2xx(this.#http, answer, (body) => {
      if (!WireRecord.of(body).boolean('ok')) throw new MalformedResponse('body.ok is false');
    });
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  async #pay(operation: string, reference: string, wallet: string, amount: Money, role: 'payee' | 'payer'): Promise<void> {
    const sent: MiniBankPaymentRequest = { from: 'FLOAT', to: wallet, amount_minor: toMinor(amount), ccy: amount.currency, memo: `Mojaloop ${reference}` };
    const answer = await this.#send({ operation, method: 'POST', path: '/payments', json: sent, headers: { 'idempotency-key': reference } });
    if (answer.status === 422) throw refusal(answer.body, role);
    this.#outageOn4xx(answer);
    parse2xx(this.#http, answer, (body) => {
      const payment = readPayment(body);
      if (payment.key !== reference || payment.to !== wallet || payment.ccy !== amount.currency) throw new MalformedResponse('body does not match the payment sent');
      if (fromMinor(payment.amountMinor, amount.currency, 'body.amount_minor') !== fromMinor(sent.amount_minor, amount.currency, 'amount')) {
        throw new MalformedResponse('body.amount_minor differs from the request');
      }
      if (payment.state !== 'BOOKED') throw new MalformedResponse(`body.state is ${payment.state} on a 2xx`);
    });
  }

  #send(call: InstitutionRequest): Promise<InstitutionAnswer> {
    return this.#http.send({ ...call, headers: { ...call.headers, 'x-api-key': this.#apiKey } });
  }

  /** MiniBank answers 401 for a wrong key and 400 for a request it cannot read: our problem, not a decision about the payment. */
  #outageOn4xx(answer: InstitutionAnswer): void {
    if (answer.status >= 400) throw new ConnectorError('InstitutionUnavailable', `minibank ${answer.operation}: HTTP ${answer.status}`);
  }
}
