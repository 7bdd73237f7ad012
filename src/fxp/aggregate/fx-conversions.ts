import { ConnectorError, asInstitutionError, isConnectorError, storedError } from '../../domain/errors.js';
import { compareDecimal, sameMoney, type Money } from '../../domain/money.js';
import { requestHash } from '../../domain/request-hash.js';
import { isDecline } from '../../aggregate/inbound-settlement.js';
import type { Clock } from '../../ports/clock.js';
import type { Logger } from '../../ports/logger.js';
import { KeyedSerializer } from '../../shared/keyed-serializer.js';
import { ConversionTooLarge, ConversionTooSmall, convertReceiveAmount, convertSendAmount, type Conversion } from '../domain/fx-arithmetic.js';
import { readCallerInstant } from '../domain/fx-instant.js';
import { readFxNotification } from '../domain/fx-notification.js';
import type { Exchange } from '../ports/exchange.js';
import type { ConversionRecord, ConversionState, FxQuoteRecord, FxStore } from '../store/fx-store.js';
import type { RateSource } from './rate-source.js';
import { contradictionNote, flagKept, isContradiction } from '../../domain/contradiction.js';
import { heldWhile, intentHold } from '../../shared/held-while.js';

/** POST /fxQuotes as the switch connector sends it (backend API v2.1, FxQuotesPostBackendRequest). */
export interface FxQuoteRequest {
  readonly conversionRequestId: string;
  readonly conversionTerms: {
    readonly conversionId: string;
    readonly amountType: 'SEND' | 'RECEIVE';
    readonly sourceAmount: { readonly currency: string; readonly amount?: string };
    readonly targetAmount: { readonly currency: string; readonly amount?: string };
    readonly expiration?: string;
    readonly [key: string]: unknown;
  };
}

/** POST /fxTransfers (FxTransfersPostBackendRequest); unknown fields are accepted. */
export interface FxTransferRequest {
  readonly commitRequestId: string;
  readonly sourceAmount: Money;
  readonly targetAmount: Money;
  readonly expiration?: string;
  readonly [key: string]: unknown;
}

export interface FxConversionSettings {
  /** A quote's terms hold this long (FX_QUOTE_EXPIRY_SECONDS), never past the request's own expiration. */
  readonly quoteExpiryMs: number;
  readonly baseBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly attentionAfterAttempts: number;
  /** An intent (RESERVING, COMMITTING, RELEASING) untouched this long is the recovery worker's. */
  readonly intentStaleAfterMs: number;
}

export interface FxDeps {
  readonly store: FxStore;
  readonly exchange: Exchange;
  readonly rates: RateSource;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: FxConversionSettings;
}

/**
 * The FX provider's use cases: quote a conversion (locking the rate), reserve target liquidity
 * for it, and commit or release it on the hub's word. Each is idempotent on the switch's id and
 * backed by a stored record: a retry answers the first answer; the same id with another body
 * is ModifiedRequest (3106).
 */
export class FxConversions {
  readonly #serial = new KeyedSerializer();

  constructor(private readonly deps: FxDeps) {}

  quote(body: FxQuoteRequest): Promise<unknown> {
    // Duplicates in this process take turns; across replicas the unique ids decide.
    return this.#serial.run(`quote:${body.conversionRequestId}`, () => this.#quote(body));
  }

  async #quote(body: FxQuoteRequest): Promise<unknown> {
    const { store } = this.deps;
    const hash = requestHash(body);
    const terms = body.conversionTerms;
    // Priced and inserted without a read first: a repeat finds its first answer stored, and a
    // repeat that would no longer pass the checks (expired, rates changed) is answered from it too.
    let priced: { readonly answer: unknown; readonly record: FxQuoteRecord };
    try {
      priced = this.#price(body, hash);
    } catch (error) {
      const stored = await store.findQuoteByRequest(body.conversionRequestId);
      if (stored === undefined) throw error;
      return answerRepeat(stored.requestHash, hash, stored.answer);
    }
    if (!(await store.insertQuote(priced.record))) {
      // A repeat, a racing duplicate, or another request under this conversionId.
      const stored = await store.findQuoteByRequest(body.conversionRequestId);
      if (stored === undefined) throw new ConnectorError('ModifiedRequest', `conversionId ${terms.conversionId} was quoted under another conversionRequestId`);
      return answerRepeat(stored.requestHash, hash, stored.answer);
    }
    this.deps.logger.info({ conversionId: terms.conversionId, amountType: terms.amountType, rate: priced.record.rate }, 'conversion quoted');
    return priced.answer;
  }

  /** The answer to a quote request and the record stored for it; throws what refuses it. */
  #price(body: FxQuoteRequest, hash: string): { readonly answer: unknown; readonly record: FxQuoteRecord } {
    const terms = body.conversionTerms;
    const now = this.deps.clock.now();
    const requestExpiry = terms.expiration === undefined ? undefined : readCallerInstant(terms.expiration, 'conversionTerms.expiration');
    if (requestExpiry !== undefined && requestExpiry <= now.getTime()) throw new ConnectorError('QuoteExpired', 'the request expired before it was quoted');
    const pricing = this.deps.rates.pricing(terms.sourceAmount.currency, terms.targetAmount.currency);
    const conversion = convertOrRefuse(terms, pricing);
    if (compareDecimal(conversion.source.amount, pricing.minSource) < 0 || compareDecimal(conversion.source.amount, pricing.maxSource) > 0) {
      throw new ConnectorError('FxAmountOutOfLimits', `${conversion.source.amount} ${conversion.source.currency} is outside ${pricing.minSource}-${pricing.maxSource}`);
    }
    const expiry = Math.min(now.getTime() + this.deps.settings.quoteExpiryMs, requestExpiry ?? Number.POSITIVE_INFINITY);
    const expiration = new Date(expiry).toISOString();
    const answer = {
      homeTransactionId: terms.conversionId,
      conversionTerms: {
        ...terms,
        sourceAmount: conversion.source,
        targetAmount: conversion.target,
        expiration,
        charges: [{ chargeType: 'CONVERSION_FEE', sourceAmount: conversion.charges.source, targetAmount: conversion.charges.target }],
      },
    };
    return {
      answer,
      record: {
        conversionId: terms.conversionId,
        conversionRequestId: body.conversionRequestId,
        requestHash: hash,
        amountType: terms.amountType,
        sourceCurrency: conversion.source.currency,
        sourceAmount: conversion.source.amount,
        targetCurrency: conversion.target.currency,
        targetAmount: conversion.target.amount,
        rate: conversion.rate,
        expiration,
        answer: JSON.stringify(answer),
      },
    };
  }

  async transfer(body: FxTransferRequest): Promise<{ conversionState: 'RESERVED' | 'COMMITTED'; homeTransactionId: string }> {
    const id = body.commitRequestId;
    return this.#serial.run(id, async () => {
      const hash = requestHash(body);
      const existing = await this.deps.store.findConversion(id);
      if (existing !== undefined) {
        if (existing.requestHash === ABORTED_BEFORE_ARRIVAL) throw abortedBeforeArrival(id);
        if (existing.requestHash !== hash) throw new ConnectorError('ModifiedRequest', `commitRequestId ${id} was used with another body`);
        return this.#resumeTransfer(existing);
      }
      const quote = await this.deps.store.findQuote(id);
      if (quote === undefined) throw new ConnectorError('FxQuoteNotFound', `no conversion quote with conversionId ${id}`);
      const now = this.deps.clock.now();
      if (Date.parse(quote.expiration) <= now.getTime()) throw new ConnectorError('QuoteExpired', `the conversion quote expired at ${quote.expiration}`);
      const quotedSource = { amount: quote.sourceAmount, currency: quote.sourceCurrency };
      const quotedTarget = { amount: quote.targetAmount, currency: quote.targetCurrency };
      if (!sameMoney(body.sourceAmount, quotedSource)) throw new ConnectorError('InvalidQuote', `sourceAmount ${body.sourceAmount.amount} ${body.sourceAmount.currency} differs from the quote's ${quote.sourceAmount} ${quote.sourceCurrency}`);
      if (!sameMoney(body.targetAmount, quotedTarget)) throw new ConnectorError('InvalidQuote', `targetAmount ${body.targetAmount.amount} ${body.targetAmount.currency} differs from the quote's ${quote.targetAmount} ${quote.targetCurrency}`);
      // The hold lasts while the hub may still commit: to the fxTransfer's own expiration when that
      // is later than the quote's. An fxTransfer already expired is refused, reserving nothing.
      let expiration = quote.expiration;
      if (body.expiration !== undefined) {
        const requested = readCallerInstant(body.expiration, 'expiration');
        if (requested <= now.getTime()) throw new ConnectorError('TransferExpired', `the fxTransfer expired at ${new Date(requested).toISOString()}`);
        expiration = new Date(Math.max(requested, Date.parse(quote.expiration))).toISOString();
      }
      const inserted = await this.deps.store.insertConversion({
        commitRequestId: id,
        requestHash: hash,
        sourceCurrency: quote.sourceCurrency,
        sourceAmount: quote.sourceAmount,
        targetCurrency: quote.targetCurrency,
        targetAmount: quote.targetAmount,
        expiration,
        nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs),
      });
      if (inserted !== undefined) return this.#resumeTransfer(inserted);
      // Not inserted: a racing duplicate stored it first, answered as a repeat.
      const conversion = await this.#reread(id);
      if (conversion.requestHash === ABORTED_BEFORE_ARRIVAL) throw abortedBeforeArrival(id);
      if (conversion.requestHash !== hash) throw new ConnectorError('ModifiedRequest', `commitRequestId ${id} was used with another body`);
      return this.#resumeTransfer(conversion);
    });
  }

  /** A stored conversion answered as the first answer was, finishing a reservation cut off before. */
  async #resumeTransfer(conversion: ConversionRecord): Promise<{ conversionState: 'RESERVED' | 'COMMITTED'; homeTransactionId: string }> {
    const homeTransactionId = conversion.commitRequestId;
    switch (conversion.state) {
      case 'RESERVING':
        await this.reserve(conversion);
        return { conversionState: 'RESERVED', homeTransactionId };
      case 'RESERVED':
      case 'COMMITTING':
        return { conversionState: 'RESERVED', homeTransactionId };
      case 'COMMITTED':
        return { conversionState: 'COMMITTED', homeTransactionId };
      case 'RELEASING':
      case 'ABORTED':
        throw new ConnectorError('TransferStateConflict', `conversion ${homeTransactionId} was aborted`);
      case 'FAILED':
        throw storedRefusal(conversion) as Error;
    }
  }

  /** RESERVING -> RESERVED: holds the target at the exchange. A refusal ends it FAILED; an outage leaves the intent. */
  async reserve(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    try {
      await this.#whileHeld(conversion, () => this.deps.exchange.reserve(id, { amount: conversion.targetAmount, currency: conversion.targetCurrency }));
    } catch (error) {
      if (isDecline(error)) {
        const failed = await this.deps.store.transition(id, ['RESERVING'], 'FAILED', { errorName: error.errorName, lastError: error.message.slice(0, 500) });
        // An earlier attempt's outcome was never known (a timeout, a 5xx): it may have held the
        // target before this one was declined (an exchange that refuses a repeated reference,
        // say), and nothing else would ever give that hold back. Released by the reference, which
        // releases nothing where nothing is held, as for incoming transfers (inbound-settlement.ts).
        if (failed !== undefined && conversion.attempts > 0) await this.#releaseAfterDecline(failed);
        throw error;
      }
      await this.#recordFailure(conversion, error);
      throw error;
    }
    const moved = await this.deps.store.transition(id, ['RESERVING'], 'RESERVED', { lastError: null, freeLease: true });
    if (moved === undefined) {
      const now = await this.deps.store.findConversion(id);
      if (now?.state !== 'RESERVED' && now?.state !== 'COMMITTING' && now?.state !== 'COMMITTED') throw new ConnectorError('TransferStateConflict', `conversion ${id} is ${now?.state ?? 'gone'}`);
    }
    this.deps.logger.info({ commitRequestId: id }, 'conversion reserved');
  }

  /** A declined reservation's possible hold released at the exchange; if that fails, the conversion is flagged: target may still be held for it. */
  async #releaseAfterDecline(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    try {
      await this.deps.exchange.release(id);
      this.deps.logger.warn({ commitRequestId: id }, 'reservation declined after an attempt whose outcome was unknown; released again');
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await this.deps.store.note(id, 'FAILED', { needsAttention: true, lastError: `declined after an attempt whose outcome was unknown, and the release failed: ${message}`.slice(0, 500), keepContradiction: true });
      this.deps.logger.error({ commitRequestId: id, err: isConnectorError(error) ? error.message : error }, 'reservation declined after an attempt whose outcome was unknown, and the hold could not be released; release it by hand');
    }
  }

  /** PUT or PATCH /fxTransfers/{commitRequestId}: the hub's word moves money, once. */
  async notify(id: string, body: Record<string, unknown>, method: 'PUT' | 'PATCH'): Promise<void> {
    const word = readFxNotification(body, method);
    await this.#serial.run(id, async () => {
      // The usual case first: a reserved conversion's intent recorded by compare-and-set, without
      // a read; anything else (a repeat, another state, an unknown id) is read and answered below.
      if (word.kind === 'commit') {
        if (await this.commitReserved(id)) return;
      } else if (word.kind === 'abort') {
        if (await this.releaseReserved(id, ['RESERVED', 'RESERVING'])) return;
      }
      const conversion = await this.deps.store.findConversion(id);
      if (conversion === undefined && word.kind === 'abort') return this.#abortBeforeArrival(id);
      if (conversion === undefined) throw new ConnectorError('FxConversionNotFound', `no conversion ${id}`);
      if (word.kind === 'doubtful') {
        this.deps.logger.error({ commitRequestId: id, state: conversion.state, why: word.why }, 'conversion notification not applied');
        // A contradiction flagged before stays the last error (decided in the same statement): a
        // finished step keeps only a contradiction's flag, and the doubtful word's would be cleared.
        await this.deps.store.note(id, conversion.state, { needsAttention: true, lastError: `notification not applied: ${word.why}`, keepContradiction: true });
        throw new ConnectorError('DoubtfulNotification', word.why);
      }
      if (word.kind === 'commit') return this.#commit(conversion);
      return this.#abort(conversion);
    });
  }

  /**
   * The hub's abort of a conversion whose fxTransfer has not arrived (it is still on its way, or
   * never will). Remembered, so that the fxTransfer, if it comes, reserves nothing: stored from
   * its quote in RELEASING with ABORTED_BEFORE_ARRIVAL for a request hash, then released as any
   * abort (the exchange records the reference released and refuses a late hold). Without a quote
   * under the id there is nothing this provider could reserve for it: answered not found.
   */
  async #abortBeforeArrival(id: string): Promise<void> {
    const quote = await this.deps.store.findQuote(id);
    if (quote === undefined) throw new ConnectorError('FxConversionNotFound', `no conversion ${id}`);
    const inserted = await this.deps.store.insertConversion(
      {
        commitRequestId: id,
        requestHash: ABORTED_BEFORE_ARRIVAL,
        sourceCurrency: quote.sourceCurrency,
        sourceAmount: quote.sourceAmount,
        targetCurrency: quote.targetCurrency,
        targetAmount: quote.targetAmount,
        expiration: quote.expiration,
        nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs),
      },
      'RELEASING',
    );
    if (inserted !== undefined) this.deps.logger.warn({ commitRequestId: id }, 'the hub aborted a conversion before its fxTransfer arrived; a late fxTransfer will reserve nothing');
    // Not inserted: the fxTransfer landed meanwhile (another replica), aborted as usual.
    return this.#abort(inserted ?? (await this.#reread(id)));
  }

  async #commit(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    switch (conversion.state) {
      case 'COMMITTED':
        return;
      case 'RESERVED':
      case 'COMMITTING': {
        const intent = conversion.state === 'COMMITTING' ? conversion : await this.deps.store.transition(id, ['RESERVED'], 'COMMITTING', { nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs) });
        if (intent === undefined) return this.#commit(await this.#reread(id));
        return this.finishCommit(intent);
      }
      default:
        await this.#flagContradiction(conversion, 'COMMITTED');
        throw new ConnectorError('TransferStateConflict', `conversion ${id} is ${conversion.state}: it cannot be committed`);
    }
  }

  /** The hub's word contradicts the conversion's own outcome: flagged and logged, once (src/domain/contradiction.ts). */
  async #flagContradiction(conversion: ConversionRecord, word: string): Promise<void> {
    const lastError = contradictionNote(word, 'conversion', conversion.state);
    if (conversion.needsAttention && conversion.lastError === lastError) return;
    await this.deps.store.note(conversion.commitRequestId, conversion.state, { needsAttention: true, lastError });
    this.deps.logger.error({ commitRequestId: conversion.commitRequestId, state: conversion.state, word }, `conversion needs manual attention: ${lastError}`);
  }

  async #abort(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    switch (conversion.state) {
      case 'ABORTED':
      case 'FAILED':
        return;
      case 'RESERVED':
      case 'RESERVING':
      case 'RELEASING': {
        const intent = conversion.state === 'RELEASING' ? conversion : await this.deps.store.transition(id, ['RESERVED', 'RESERVING'], 'RELEASING', { nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs) });
        if (intent === undefined) return this.#abort(await this.#reread(id));
        return this.finishRelease(intent);
      }
      default:
        await this.#flagContradiction(conversion, 'ABORTED');
        throw new ConnectorError('TransferStateConflict', `conversion ${id} is ${conversion.state}: it cannot be aborted`);
    }
  }

  /** RESERVED -> COMMITTING, then the commit at the exchange; false when the conversion was not RESERVED. */
  async commitReserved(id: string): Promise<boolean> {
    const intent = await this.deps.store.transition(id, ['RESERVED'], 'COMMITTING', { nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs) });
    if (intent === undefined) return false;
    await this.finishCommit(intent);
    return true;
  }

  /** One of `from` -> RELEASING, then the release at the exchange; false when the conversion was in none of them. */
  async releaseReserved(id: string, from: readonly ConversionState[] = ['RESERVED']): Promise<boolean> {
    const intent = await this.deps.store.transition(id, from, 'RELEASING', { nextAttemptAt: this.#later(this.deps.settings.intentStaleAfterMs) });
    if (intent === undefined) return false;
    await this.finishRelease(intent);
    return true;
  }

  /** COMMITTING -> COMMITTED: source credited, held target paid out. */
  async finishCommit(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    try {
      await this.#whileHeld(conversion, () =>
        this.deps.exchange.commit(id, { amount: conversion.sourceAmount, currency: conversion.sourceCurrency }, { amount: conversion.targetAmount, currency: conversion.targetCurrency }),
      );
    } catch (error) {
      await this.#recordFailure(conversion, error);
      throw error;
    }
    await this.deps.store.transition(id, ['COMMITTING'], 'COMMITTED', { ...flagKept(conversion), keepContradiction: true });
    this.deps.logger.info({ commitRequestId: id }, 'conversion committed');
  }

  /** RELEASING -> ABORTED: the held target is available again. */
  async finishRelease(conversion: ConversionRecord): Promise<void> {
    const id = conversion.commitRequestId;
    try {
      await this.#whileHeld(conversion, () => this.deps.exchange.release(id));
    } catch (error) {
      await this.#recordFailure(conversion, error);
      throw error;
    }
    await this.deps.store.transition(id, ['RELEASING'], 'ABORTED', { ...flagKept(conversion), keepContradiction: true });
    this.deps.logger.info({ commitRequestId: id }, 'conversion released');
  }

  /** Runs `work` on a conversion in turn with requests on the same id (this process). */
  serially<T>(id: string, work: () => Promise<T>): Promise<T> {
    return this.#serial.run(id, work);
  }

  async #reread(id: string): Promise<ConversionRecord> {
    const conversion = await this.deps.store.findConversion(id);
    if (conversion === undefined) throw new ConnectorError('Internal', `conversion ${id} vanished`);
    return conversion;
  }

  async #recordFailure(conversion: ConversionRecord, error: unknown): Promise<void> {
    const { settings } = this.deps;
    const attempts = conversion.attempts + 1;
    const backoff = Math.min(settings.baseBackoffMs * 2 ** Math.min(attempts - 1, 20), settings.maxBackoffMs);
    const needsAttention = attempts >= settings.attentionAfterAttempts || conversion.needsAttention;
    const message = error instanceof Error ? error.message : String(error);
    // A contradiction the switch reported stays the conversion's last error.
    const lastError = isContradiction(conversion.lastError) ? conversion.lastError : message.slice(0, 500);
    await this.deps.store.note(conversion.commitRequestId, conversion.state, { attempts, nextAttemptAt: this.#later(backoff), needsAttention, lastError, keepContradiction: true, freeLease: true });
    this.deps.logger.warn({ commitRequestId: conversion.commitRequestId, state: conversion.state, attempts, err: isConnectorError(error) ? error.message : error }, 'conversion step failed; the recovery worker retries');
  }

  /**
   * An intent's exchange call, the intent held from the recovery worker while it runs, so that a
   * call slower than the intent's staleness is not made a second time beside itself.
   */
  #whileHeld(conversion: ConversionRecord, call: () => Promise<void>): Promise<void> {
    const { commitRequestId, state } = conversion;
    const hold = intentHold(this.deps.settings.intentStaleAfterMs);
    return heldWhile(
      hold.everyMs,
      () => this.deps.store.hold(commitRequestId, state, this.#later(hold.forMs)),
      (error) => this.deps.logger.warn({ commitRequestId, state, err: isConnectorError(error) ? error.message : error }, 'the hold on an intent could not be renewed; the recovery worker may take it over'),
      call,
    );
  }

  #later(ms: number): string {
    return new Date(this.deps.clock.now().getTime() + ms).toISOString();
  }
}

function convertOrRefuse(terms: FxQuoteRequest['conversionTerms'], pricing: Parameters<typeof convertSendAmount>[1]): Conversion {
  try {
    if (terms.amountType === 'SEND') {
      if (terms.sourceAmount.amount === undefined) throw new ConnectorError('MissingElement', 'SEND needs conversionTerms.sourceAmount.amount');
      return convertSendAmount({ amount: terms.sourceAmount.amount, currency: terms.sourceAmount.currency }, pricing);
    }
    if (terms.targetAmount.amount === undefined) throw new ConnectorError('MissingElement', 'RECEIVE needs conversionTerms.targetAmount.amount');
    return convertReceiveAmount({ amount: terms.targetAmount.amount, currency: terms.targetAmount.currency }, pricing);
  } catch (error) {
    if (error instanceof ConversionTooSmall || error instanceof ConversionTooLarge) throw new ConnectorError('FxAmountOutOfLimits', error.message);
    if (error instanceof RangeError) throw new ConnectorError('ValidationFailed', error.message);
    throw error;
  }
}

/** The request hash of a conversion stored from the hub's abort before its fxTransfer arrived (no request hashes to it). */
const ABORTED_BEFORE_ARRIVAL = 'aborted-before-arrival';

function abortedBeforeArrival(id: string): ConnectorError {
  return new ConnectorError('TransferStateConflict', `the hub aborted ${id} before it arrived; nothing held`);
}

function answerRepeat(storedHash: string, hash: string, answer: string): unknown {
  if (storedHash !== hash) throw new ConnectorError('ModifiedRequest', 'this conversionRequestId was quoted with another body');
  return JSON.parse(answer) as unknown;
}

/** The exchange's refusal, answered again as the first time (its detail kept for the logs only). */
function storedRefusal(conversion: ConversionRecord): unknown {
  return asInstitutionError(storedError({ errorName: conversion.errorName, errorMessage: conversion.lastError }, `failed conversion ${conversion.commitRequestId}`));
}
