import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
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
import { InstitutionHealthError } from '../../../ports/core-banking.js';
import { InstitutionHttp, parse2xx, type InstitutionAnswer, type InstitutionRequest } from '../shared/institution-http.js';
import { MalformedResponse, WireRecord, amountForWire, optionalField } from '../shared/wire-reader.js';
import type { RestOptions } from './rest-options.js';
import {
  checkReservationEcho,
  checkTransactionEcho,
  declineFor,
  readError,
  readParty,
  readReservation,
  readTransaction,
  toPartyDetails,
  toTransactionStatus,
  type DeclineRole,
} from './rest-transform.js';
import type { RestCollectionRequest, RestCommitRequest, RestErrorCode, RestRefundRequest, RestReservationRequest } from './rest-wire.js';

/**
 * Adapter for institutions that implement our reference core banking API
 * (docs/reference-core-banking-api.yaml). The API was designed for the port, so each operation
 * is one call; the institution keeps every money-moving call idempotent on our reference.
 */
export class RestCoreBanking implements CoreBanking {
  readonly name = 'rest';
  readonly capabilities: CoreBankingCapabilities;
  readonly #http: InstitutionHttp;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #callbackUrl: string | undefined;

  constructor(options: RestOptions) {
    this.#http = new InstitutionHttp({
      institution: 'rest',
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutMs,
      connectTimeoutMs: options.connectTimeoutMs,
    });
    // A collect is one call, within its deadline.
    this.capabilities = { outgoingFlow: options.outgoingFlow, nativeHolds: true, collectTakesUpToMs: this.#http.callDeadlineMs };
    this.#callbackUrl = options.callbackUrl;
    this.#headers = options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
  }

  async lookupParty(id: PartyId): Promise<PartyDetails> {
    const query = id.idSubValue === undefined ? '' : `?idSubValue=${encodeURIComponent(id.idSubValue)}`;
    const answer = await this.#send({
      operation: 'lookupParty',
      method: 'GET',
      path: `/parties/${encodeURIComponent(id.idType)}/${encodeURIComponent(id.idValue)}${query}`,
    });
    if (notFoundAsDocumented(answer, 'PARTY_NOT_FOUND')) throw new ConnectorError('PartyNotFound');
    this.#declineOn4xx(answer, 'party');
    return parse2xx(this.#http, answer, (body) => toPartyDetails(readParty(body), id));
  }

  async reserve(request: ReserveRequest): Promise<void> {
    const sent: RestReservationRequest = {
      reference: request.reference,
      payeeAccountId: request.payeeAccountId,
      amount: amountForWire(request.amount),
      currency: request.amount.currency,
    };
    const answer = await this.#send({ operation: 'reserve', method: 'POST', path: '/reservations', json: sent });
    this.#declineOn4xx(answer, 'payee');
    const reservation = parse2xx(this.#http, answer, (body) => {
      const read = readReservation(body, sent.currency);
      checkReservationEcho(read, sent);
      return read;
    });
    // A repeat after a commit is still the same reservation; after a release the reference is spent.
    if (reservation.state === 'RELEASED') throw new ConnectorError('TransferStateConflict', `reservation ${request.reference} was released`);
  }

  async commit(request: CommitRequest): Promise<void> {
    const sent: RestCommitRequest = {
      payeeAccountId: request.payeeAccountId,
      amount: amountForWire(request.amount),
      currency: request.amount.currency,
    };
    const answer = await this.#send({
      operation: 'commit',
      method: 'POST',
      path: `/reservations/${encodeURIComponent(request.reference)}/commit`,
      json: sent,
    });
    this.#declineOn4xx(answer, 'payee');
    parse2xx(this.#http, answer, (body) => {
      const reservation = readReservation(body, sent.currency);
      checkReservationEcho(reservation, { ...sent, reference: request.reference });
      if (reservation.state !== 'COMMITTED') throw new MalformedResponse(`body.state is ${reservation.state} after a commit`);
    });
  }

  async release(reference: string): Promise<void> {
    const answer = await this.#send({
      operation: 'release',
      method: 'POST',
      path: `/reservations/${encodeURIComponent(reference)}/release`,
    });
    // Nothing held under this reference: the port defines release as a no-op then.
    if (notFoundAsDocumented(answer, 'RESERVATION_NOT_FOUND')) return;
    this.#declineOn4xx(answer, 'payee');
    parse2xx(this.#http, answer, (body) => {
      const record = WireRecord.of(body);
      if (record.string('reference') !== reference) throw new MalformedResponse('body.reference differs from the request');
      if (record.string('state') !== 'RELEASED') throw new MalformedResponse('body.state is not RELEASED after a release');
    });
  }

  async collect(request: CollectRequest): Promise<CollectResult> {
    const sent: RestCollectionRequest = {
      reference: request.reference,
      payerId: request.payerId,
      amount: amountForWire(request.amount),
      currency: request.amount.currency,
      ...optionalField('description', request.description),
      ...optionalField('callbackUrl', this.#callbackUrl),
    };
    const answer = await this.#send({ operation: 'collect', method: 'POST', path: '/collections', json: sent });
    this.#declineOn4xx(answer, 'payer');
    const transaction = parse2xx(this.#http, answer, (body) => {
      const read = readTransaction(body, sent.currency);
      checkTransactionEcho(read, sent, 'COLLECTION');
      return read;
    });
    return {
      status: toTransactionStatus(transaction.status),
      ...optionalField('institutionReference', transaction.institutionReference),
    };
  }

  async refund(request: RefundRequest): Promise<void> {
    const sent: RestRefundRequest = {
      reference: request.reference,
      originalReference: request.originalReference,
      payerId: request.payerId,
      amount: amountForWire(request.amount),
      currency: request.amount.currency,
    };
    const answer = await this.#send({ operation: 'refund', method: 'POST', path: '/refunds', json: sent });
    this.#declineOn4xx(answer, 'payer');
    const transaction = parse2xx(this.#http, answer, (body) => {
      const read = readTransaction(body, sent.currency);
      checkTransactionEcho(read, sent, 'REFUND');
      return read;
    });
    const status = toTransactionStatus(transaction.status);
    switch (status) {
      case 'succeeded':
        return;
      case 'failed':
        throw new ConnectorError('PayerRejected', `rest refund ${request.reference}: the institution reports it failed`);
      case 'pending':
      case 'unknown':
      case 'not-found':
        // Not final: the same refund is asked again later and answers how it ended.
        throw new ConnectorError('InstitutionTimeout', `rest refund ${request.reference}: status ${transaction.status}; outcome not final`);
    }
  }

  async transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    const answer = await this.#send({ operation: 'transactionStatus', method: 'GET', path: `/transactions/${encodeURIComponent(reference)}` });
    if (notFoundAsDocumented(answer, 'TRANSACTION_NOT_FOUND')) return 'not-found';
    this.#declineOn4xx(answer, 'party');
    const transaction = parse2xx(this.#http, answer, (body) => {
      const read = readTransaction(body);
      if (read.reference !== reference) throw new MalformedResponse('body.reference differs from the request');
      return read;
    });
    return toTransactionStatus(transaction.status);
  }

  async health(): Promise<void> {
    const answer = await this.#send({ operation: 'health', method: 'GET', path: '/health' });
    if (answer.status === 401 || answer.status === 403) {
      // The key was refused: /health and the start-up log say so, for an operator to fix REST_CBS_API_KEY.
      const detail = `rest health: HTTP ${answer.status}: REST_CBS_API_KEY refused`;
      throw new ConnectorError('InstitutionUnavailable', detail, { cause: new InstitutionHealthError('credentials-refused', detail) });
    }
    if (answer.status >= 400) throw new ConnectorError('InstitutionUnavailable', `rest health: HTTP ${answer.status}`);
    parse2xx(this.#http, answer, (body) => {
      if (WireRecord.of(body).string('status') !== 'UP') throw new MalformedResponse('body.status is not UP');
    });
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  #send(call: InstitutionRequest): Promise<InstitutionAnswer> {
    return this.#http.send({ ...call, headers: this.#headers });
  }

  #declineOn4xx(answer: InstitutionAnswer, role: DeclineRole): void {
    if (answer.status >= 400) throw declineFor(answer.operation, answer.status, answer.body, role);
  }
}

/**
 * Whether the answer is the API's "not found" of this operation: a 404 with the code the document
 * gives it (true). Any other 404 (a gateway's page, a wrong base path, a framework's default body,
 * another operation's code) did not come from the operation, so it throws InstitutionUnavailable:
 * never "nothing there". Not a 404: false.
 */
function notFoundAsDocumented(answer: InstitutionAnswer, code: RestErrorCode): boolean {
  if (answer.status !== 404) return false;
  const found = readError(answer.body)?.code;
  if (found === code) return true;
  throw new ConnectorError('InstitutionUnavailable', `rest ${answer.operation}: HTTP 404${found === undefined ? '' : ` ${found}`}, not the API's ${code}`);
}
