import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import { canonicalAmount, type Money } from '../../../domain/money.js';
import { InstitutionHttp, parse2xx, type InstitutionAnswer, type InstitutionRequest } from '../../../adapters/core-banking/shared/institution-http.js';
import { MalformedResponse, WireRecord, amountForWire } from '../../../adapters/core-banking/shared/wire-reader.js';
import type { ConversionHoldStatus, Exchange, PairPricing, RateTable } from '../../ports/exchange.js';

/** Settings of the reference exchange API adapter (FX_EXCHANGE_ADAPTER=rest). */
export interface RestExchangeOptions {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
}

/** Every `Error.code` of docs/reference-exchange-api.yaml; test/docs checks it against the document. */
export const REST_EXCHANGE_ERROR_CODES = [
  'HOLD_NOT_FOUND',
  'HOLD_RELEASED',
  'HOLD_COMMITTED',
  'REFERENCE_CONFLICT',
  'INSUFFICIENT_LIQUIDITY',
  'CURRENCY_NOT_SUPPORTED',
  'INVALID_REQUEST',
  'UNAUTHORIZED',
] as const;

const HOLD_STATES = ['HELD', 'COMMITTED', 'RELEASED'] as const;
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * Adapter for exchanges that implement our reference exchange API
 * (docs/reference-exchange-api.yaml). The API was designed for the port: each operation is one
 * call, idempotent on our reference.
 */
export class RestExchange implements Exchange {
  readonly name = 'rest';
  readonly #http: InstitutionHttp;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(options: RestExchangeOptions) {
    this.#http = new InstitutionHttp({ institution: 'exchange', baseUrl: options.baseUrl, timeoutMs: options.timeoutMs });
    this.#headers = options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
  }

  async rates(): Promise<RateTable> {
    const answer = await this.#send({ operation: 'rates', method: 'GET', path: '/rates' });
    this.#declineOn4xx(answer);
    return parse2xx(this.#http, answer, readRateTable);
  }

  async reserve(reference: string, target: Money): Promise<void> {
    const answer = await this.#send({ operation: 'hold', method: 'POST', path: '/holds', json: { reference, target: wireMoney(target) } });
    this.#declineOn4xx(answer);
    const hold = parse2xx(this.#http, answer, (body) => readHold(body, reference, target));
    if (hold === 'RELEASED') throw new ConnectorError('TransferStateConflict', `exchange hold ${reference} was released`);
  }

  async commit(reference: string, source: Money, target: Money): Promise<void> {
    const answer = await this.#send({
      operation: 'commit',
      method: 'POST',
      path: `/holds/${encodeURIComponent(reference)}/commit`,
      json: { source: wireMoney(source), target: wireMoney(target) },
    });
    this.#declineOn4xx(answer);
    const state = parse2xx(this.#http, answer, (body) => readHold(body, reference, target));
    if (state !== 'COMMITTED') throw new ConnectorError('InstitutionUnavailable', `exchange commit: malformed response: body.state is ${state} after a commit`);
  }

  async release(reference: string): Promise<void> {
    const answer = await this.#send({ operation: 'release', method: 'POST', path: `/holds/${encodeURIComponent(reference)}/release` });
    // Nothing held: the port defines release as a no-op then (the exchange records the reference released).
    if (holdNotFound(answer)) return;
    this.#declineOn4xx(answer);
    const state = parse2xx(this.#http, answer, (body) => readHold(body, reference));
    if (state !== 'RELEASED') throw new ConnectorError('InstitutionUnavailable', `exchange release: malformed response: body.state is ${state} after a release`);
  }

  async status(reference: string): Promise<ConversionHoldStatus> {
    const answer = await this.#send({ operation: 'holdStatus', method: 'GET', path: `/holds/${encodeURIComponent(reference)}` });
    if (holdNotFound(answer)) return 'not-found';
    this.#declineOn4xx(answer);
    const state = parse2xx(this.#http, answer, (body) => readHold(body, reference));
    return state === 'HELD' ? 'held' : state === 'COMMITTED' ? 'committed' : 'released';
  }

  async health(): Promise<void> {
    const answer = await this.#send({ operation: 'health', method: 'GET', path: '/health' });
    if (answer.status >= 400) throw new ConnectorError('InstitutionUnavailable', `exchange health: HTTP ${answer.status}`);
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

  #declineOn4xx(answer: InstitutionAnswer): void {
    if (answer.status < 400) return;
    const code = errorCodeOf(answer.body);
    const detail = `exchange ${answer.operation}: HTTP ${answer.status}${code === undefined ? '' : ` ${code}`}`;
    if (answer.status === 401 || answer.status === 403 || code === 'UNAUTHORIZED') throw new ConnectorError('InstitutionUnavailable', `${detail}: credentials refused`);
    // The API answers every 404 with one of its codes; without one the request reached something
    // else (a gateway, a wrong base path): nothing was decided about the conversion.
    if (answer.status === 404 && !REST_EXCHANGE_ERROR_CODES.some((known) => known === code)) throw new ConnectorError('InstitutionUnavailable', `${detail}: not an answer of the API`);
    throw new ConnectorError(declineName(code), detail);
  }
}

/**
 * Whether the answer is the API's 404 HOLD_NOT_FOUND (true). Any other 404 (a gateway's page, a
 * wrong base path, a framework's default body) did not come from the operation, so it throws
 * InstitutionUnavailable: never "nothing held". Not a 404: false.
 */
function holdNotFound(answer: InstitutionAnswer): boolean {
  if (answer.status !== 404) return false;
  const code = errorCodeOf(answer.body);
  if (code === 'HOLD_NOT_FOUND') return true;
  throw new ConnectorError('InstitutionUnavailable', `exchange ${answer.operation}: HTTP 404${code === undefined ? '' : ` ${code}`}, not the API's HOLD_NOT_FOUND`);
}

function declineName(code: string | undefined): ErrorName {
  switch (code) {
    case 'INSUFFICIENT_LIQUIDITY':
      return 'FxInsufficientLiquidity';
    case 'CURRENCY_NOT_SUPPORTED':
      return 'FxPairNotSupported';
    case 'HOLD_NOT_FOUND':
      return 'FxConversionNotFound';
    case 'HOLD_RELEASED':
    case 'HOLD_COMMITTED':
      return 'TransferStateConflict';
    case 'REFERENCE_CONFLICT':
      return 'ModifiedRequest';
    case 'INVALID_REQUEST':
      return 'ValidationFailed';
    default:
      // A 4xx is a decision about this conversion even when its code is new to us.
      return 'FxInsufficientLiquidity';
  }
}

function errorCodeOf(body: unknown): string | undefined {
  try {
    return WireRecord.of(body).string('code');
  } catch {
    return undefined;
  }
}

function wireMoney(money: Money): { amount: string; currency: string } {
  return { amount: amountForWire(money), currency: money.currency };
}

/** A hold answer: it must be for the reference (and target) we sent; answers its state. */
function readHold(body: unknown, reference: string, target?: Money): (typeof HOLD_STATES)[number] {
  const hold = WireRecord.of(body);
  if (hold.string('reference') !== reference) throw new MalformedResponse('body.reference differs from the request');
  if (target !== undefined) {
    const wire = hold.record('target');
    if (wire.string('currency') !== target.currency) throw new MalformedResponse('body.target.currency differs from the request');
    if (wire.amountString('amount', target.currency) !== canonicalAmount(target.amount, target.currency)) throw new MalformedResponse('body.target.amount differs from the request');
  }
  return hold.oneOf('state', HOLD_STATES);
}

function readRateTable(body: unknown): RateTable {
  const table = WireRecord.of(body);
  const asOf = new Date(table.string('asOf'));
  if (Number.isNaN(asOf.getTime())) throw new MalformedResponse('body.asOf is not a date-time');
  const pairs = table.array('pairs').map((pair, index): PairPricing => {
    const source = pair.string('sourceCurrency');
    const target = pair.string('targetCurrency');
    const rate = pair.string('rate');
    if (!DECIMAL.test(rate) || /^0(\.0+)?$/.test(rate)) throw new MalformedResponse(`body.pairs[${index}].rate is not a positive decimal`);
    const charge = pair.record('charge');
    const chargeCurrency = charge.string('currency');
    if (chargeCurrency !== source && chargeCurrency !== target) throw new MalformedResponse(`body.pairs[${index}].charge.currency is not the pair's`);
    const percent = charge.string('percent');
    if (!DECIMAL.test(percent)) throw new MalformedResponse(`body.pairs[${index}].charge.percent is not a decimal`);
    const limits = pair.record('limits');
    return {
      sourceCurrency: source,
      targetCurrency: target,
      rate,
      charge: { currency: chargeCurrency, fixed: charge.amountString('fixed', chargeCurrency), percent },
      minSource: limits.amountString('minSource', source),
      maxSource: limits.amountString('maxSource', source),
    };
  });
  return { asOf, pairs };
}
