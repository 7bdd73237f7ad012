import { switchDeclineOf } from '../domain/switch-declines.js';
import { ConnectorError, ERROR_CATALOGUE, assert } from '../domain/errors.js';
import { isSwitchId } from '../domain/identifiers.js';
import { requestHash } from '../domain/request-hash.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking } from '../ports/core-banking.js';
import type { Logger } from '../ports/logger.js';
import type { OutgoingChanges, OutgoingPaymentRecord, OutgoingStore, PaymentKind } from '../ports/outgoing-store.js';
import type { OutboundAnswer, OutboundTransfer } from '../ports/outgoing-switch.js';
import type { SwitchConnector } from '../ports/switch-connector.js';
import { KeyedSerializer } from '../shared/keyed-serializer.js';
import { checkSendMoneyRequest, outboundTransferRequest, type CheckedRequest, type RequestSettings } from './outgoing-request.js';
import { paymentError, refundHeldBack, type OutgoingSettlement } from './outgoing-settlement.js';
import { checkConversionTerms, checkReturnedQuote, type PaymentAmounts } from './outgoing-terms-check.js';
import { callbackOf, type AcceptResult, type CallbackBody, type ConversionView, type PaymentStatus, type PaymentTerms, type SendMoneyRequest } from './outgoing-types.js';
import { paymentStatus, paymentTerms } from './outgoing-views.js';

export interface OutgoingSettings extends RequestSettings {
  /**
   * How long a parallel retry that finds the payment INITIATING or ACCEPTING in the store, moved
   * there by another replica, waits for that step to end (normally the switch call's timeout).
   * Default 0.
   */
  readonly parallelRetryWaitMs?: number;
}

const PARALLEL_RETRY_POLL_FIRST_MS = 20;
const PARALLEL_RETRY_POLL_MAX_MS = 500;

export interface OutgoingDependencies {
  readonly settings: OutgoingSettings;
  readonly coreBanking: CoreBanking;
  readonly store: OutgoingStore;
  readonly settlement: OutgoingSettlement;
  readonly switchConnector: SwitchConnector;
  readonly clock: Clock;
  readonly logger: Logger;
}

type Payment = OutgoingPaymentRecord;

/**
 * Outgoing payments (payer side): send money and merchant payments, the customer's accept or
 * abort, and the institution's debit callback. Each use case checks input, loads or creates
 * the durable record, calls the switch or the institution, records the outcome and answers; a
 * retry finds the record and answers from it.
 */
export class OutgoingPayments {
  /** Initiations running in this process, by homeTransactionId: a parallel retry waits for the first. */
  readonly #initiations = new Map<string, Promise<Payment>>();
  readonly #serial = new KeyedSerializer();

  constructor(private readonly deps: OutgoingDependencies) {}

  /** POST /send-money (SEND) and POST /merchant-payments (RECEIVE). */
  async sendMoney(body: SendMoneyRequest, kind: PaymentKind): Promise<PaymentTerms> {
    const checked = checkSendMoneyRequest(body, amountTypeOf(kind), this.deps.settings);
    const hash = requestHash({ kind, body });
    const id = body.homeTransactionId;
    let running = this.#initiations.get(id);
    if (running === undefined) {
      running = this.#initiate(body, checked, kind, hash).finally(() => this.#initiations.delete(id));
      this.#initiations.set(id, running);
    }
    return answerTerms(await running, hash);
  }

  async #initiate(body: SendMoneyRequest, checked: CheckedRequest, kind: PaymentKind, hash: string): Promise<Payment> {
    const { settings, store } = this.deps;
    const amountType = amountTypeOf(kind);
    const { record, created } = await store.insert({
      homeTransactionId: body.homeTransactionId,
      requestHash: hash,
      kind,
      amountType,
      flow: this.deps.coreBanking.capabilities.outgoingFlow,
      // Normalised (checked.*), so that the collection and the refund name the customer as
      // registered; the request hash stays on the body as sent, so a retry of it is recognised.
      payerId: checked.payerId,
      payeeIdType: checked.payeeIdType,
      payeeId: checked.payeeId,
      sendAmount: checked.sendAmount,
      sendCurrency: body.sendCurrency,
      receiveCurrency: body.receiveCurrency,
      createdAt: this.deps.clock.now().toISOString(),
    });
    if (!created) return this.#awaitLeaving('INITIATING', record);
    const answer = await this.deps.switchConnector.initiateTransfer(outboundTransferRequest(body, checked, amountType, settings));
    return this.#recordInitiation(record, answer);
  }

  /**
   * A parallel retry that reached another replica than the first request finds the payment in a
   * state that replica is working on (INITIATING or ACCEPTING, waiting for the switch). It waits
   * as well, rereading the stored record, so that it answers what a retry within one process
   * answers; bounded by `parallelRetryWaitMs`, after which it answers from the state it finds.
   */
  async #awaitLeaving(state: 'INITIATING' | 'ACCEPTING' | 'COLLECTING', record: Payment, limitMs = this.deps.settings.parallelRetryWaitMs ?? 0): Promise<Payment> {
    let payment = record;
    let waitedMs = 0;
    let pauseMs = PARALLEL_RETRY_POLL_FIRST_MS;
    while (payment.state === state && waitedMs < limitMs) {
      const stepMs = Math.min(pauseMs, limitMs - waitedMs);
      await new Promise((resolve) => setTimeout(resolve, stepMs));
      waitedMs += stepMs;
      pauseMs = Math.min(pauseMs * 2, PARALLEL_RETRY_POLL_MAX_MS);
      payment = await this.deps.settlement.reread(payment.homeTransactionId);
    }
    return payment;
  }

  /** Walks the switch's answer to QUOTED, answering the conversion on the way, or ends the payment. */
  async #recordInitiation(payment: Payment, first: OutboundAnswer): Promise<Payment> {
    if (first.outcome !== 'answered') return this.#failInitiation(payment, first);
    let transfer = first.transfer;
    const transferId = transfer.transferId;
    if (transferId === undefined || !isSwitchId(transferId)) {
      return this.#fail(payment, new ConnectorError('SdkClientError', 'the switch answered without a valid transferId'));
    }
    // Known from here on, so that a crash during the conversion step leaves the id for support staff.
    await this.deps.store.recordAttempt(payment.homeTransactionId, 'INITIATING', { transferId, switchState: transfer.currentState ?? 'UNSPECIFIED' });
    const withId = { ...payment, transferId };
    const amounts: PaymentAmounts = payment;
    let conversion: ConversionView | undefined;
    if (transfer.currentState === 'WAITING_FOR_CONVERSION_ACCEPTANCE') {
      try {
        conversion = checkConversionTerms(transfer.conversion, transfer.malformed, amounts, this.deps.clock.now());
      } catch (error) {
        if (!(error instanceof ConnectorError)) throw error;
        return this.deps.settlement.abort(withId, ['INITIATING'], error, { acceptConversion: false });
      }
      const next = await this.deps.switchConnector.continueTransfer(transferId, { acceptConversion: true });
      if (next.outcome !== 'answered') return this.#failInitiation(withId, next);
      transfer = next.transfer;
    }
    const unexpected = unexpectedState(transfer);
    if (unexpected !== undefined) return this.#fail(withId, unexpected.error, { needsAttention: unexpected.needsAttention });
    let quote;
    try {
      quote = checkReturnedQuote(transfer.quote, transfer.malformed, amounts, conversion, this.deps.clock.now());
    } catch (error) {
      if (!(error instanceof ConnectorError)) throw error;
      return this.deps.settlement.abort(withId, ['INITIATING'], error, { acceptQuote: false });
    }
    const terms = paymentTerms(withId, transfer.payeeName, quote, conversion);
    return this.deps.settlement.move(withId, ['INITIATING'], 'QUOTED', {
      transferId,
      terms: JSON.stringify(terms),
      quoteExpiration: terms.expiration,
      debitAmount: terms.debitAmount.amount,
      switchState: 'WAITING_FOR_QUOTE_ACCEPTANCE',
    });
  }

  #failInitiation(payment: Payment, answer: Exclude<OutboundAnswer, { outcome: 'answered' }>): Promise<Payment> {
    const transferId = answer.transfer?.transferId;
    const changes: OutgoingChanges = transferId !== undefined && isSwitchId(transferId) && payment.transferId === null ? { transferId } : {};
    const error =
      answer.outcome === 'unknown'
        ? new ConnectorError('SdkTimeout', `no answer from the switch (${answer.reason}); no money moved, start again with a new homeTransactionId`)
        : new ConnectorError(switchDeclineOf(answer.statusCode) ?? (answer.httpStatus === 400 ? 'SwitchRefusedRequest' : 'SdkClientError'), answer.message);
    return this.#fail(payment, error, changes);
  }

  /** INITIATING -> FAILED: nothing reached the point of moving money; the error is answered to every retry. */
  async #fail(payment: Payment, error: ConnectorError, changes: OutgoingChanges = {}): Promise<Payment> {
    const ended = await this.deps.settlement.move(payment, ['INITIATING'], 'FAILED', {
      ...changes,
      errorName: error.errorName,
      errorMessage: error.message,
      lastError: error.message,
    });
    this.deps.logger.warn({ homeTransactionId: payment.homeTransactionId, transferId: ended.transferId, code: error.code }, 'outgoing payment not started');
    return ended;
  }

  /** PUT /send-money/{transferId} and PUT /merchant-payment(s)/{transferId}. */
  async updateSendMoney(transferId: string, acceptQuote: boolean, kind: PaymentKind): Promise<AcceptResult> {
    const found = await this.#find(transferId, kind);
    return this.#serial.run(found.homeTransactionId, async () => {
      const payment = await this.deps.settlement.reread(found.homeTransactionId);
      return acceptQuote ? this.#accept(payment) : this.#decline(payment);
    });
  }

  async #decline(payment: Payment): Promise<never> {
    const declined =
      payment.state === 'QUOTED'
        ? await this.deps.settlement.abort(payment, ['QUOTED'], new ConnectorError('QuoteNotAccepted', 'the customer declined the terms'), { acceptQuote: false })
        : payment;
    if (declined.state === 'ABORTED' && declined.errorName === 'QuoteNotAccepted') throw paymentError(declined);
    throw new ConnectorError('PaymentStateConflict', `payment is ${declined.state}; it can no longer be declined`);
  }

  async #accept(start: Payment): Promise<AcceptResult> {
    let payment = start;
    if (payment.state === 'QUOTED') {
      assert(payment.quoteExpiration !== null, `quoted payment ${payment.homeTransactionId} without expiration`);
      if (this.deps.clock.now().toISOString() >= payment.quoteExpiration) {
        const expired = new ConnectorError('QuoteExpired', `the quote expired at ${payment.quoteExpiration}; nothing was debited`);
        throw paymentError(await this.deps.settlement.abort(payment, ['QUOTED'], expired, { acceptQuote: false }));
      }
      const moved = await this.deps.settlement.tryMove(payment, ['QUOTED'], payment.flow === 'bank' ? 'ACCEPTING' : 'COLLECTING', {});
      if (moved !== undefined) return this.#answerAccepted(await this.#driveAccepted(moved, { repeat: false }));
      payment = await this.deps.settlement.reread(payment.homeTransactionId);
    }
    // Found ACCEPTING, moved there by someone else: another replica is at the switch with it (or
    // a crash interrupted it, and the recovery worker asks the switch). Only the one that moved
    // it accepts: a second accept could come back as an error and refund a customer whose
    // transfer completed. Wait for that outcome instead, as a retry in one process does.
    if (payment.state === 'ACCEPTING') return this.#answerAccepted({ payment: await this.#awaitLeaving('ACCEPTING', payment) });
    // Found COLLECTING with no failed attempt: another replica's prompt may still be on its way
    // (collectTakesUpToMs). Prompting again could ask the customer twice: its outcome is waited
    // for instead, and a prompt still out when the wait ends is answered as under way.
    const promptOutForMs = this.#promptMayBeOutForMs(payment);
    if (promptOutForMs > 0) {
      payment = await this.#awaitLeaving('COLLECTING', payment, Math.min(promptOutForMs, this.deps.settings.parallelRetryWaitMs ?? 0));
      // Still out, or still another's to take on (a replica that stopped is settled by the
      // recovery worker once the bound passes).
      if (payment.state === 'COLLECTING') return this.#answerAccepted({ payment });
    }
    return this.#answerAccepted(await this.#driveAccepted(payment, { repeat: true }));
  }

  /**
   * How much longer a COLLECTING payment's prompt may be on its way, or its next step belongs to
   * someone else; 0 when a prompt may be sent now. The first prompt is out for
   * collectTakesUpToMs from the move to COLLECTING; a prompt sent again, or a failed one's retry,
   * until the payment's next attempt. (A recovery worker that holds the payment without a prompt
   * out yet is kept out by OutgoingSettlement.collect: a repeat takes the payment first.)
   */
  #promptMayBeOutForMs(payment: Payment): number {
    if (payment.state !== 'COLLECTING') return 0;
    const now = this.deps.clock.now().getTime();
    const first = payment.nextAttemptAt === null && payment.attempts === 0 ? Date.parse(payment.updatedAt) + (this.deps.coreBanking.capabilities.collectTakesUpToMs ?? 0) : 0;
    const scheduled = payment.nextAttemptAt === null ? 0 : Date.parse(payment.nextAttemptAt);
    return Math.max(0, first - now, scheduled - now);
  }

  /**
   * Takes an accepted payment as far as it goes now. `repeat`: found already accepted (a retried
   * accept), so a prompt may have been sent before (see OutgoingSettlement.collect).
   */
  async #driveAccepted(payment: Payment, options: { readonly repeat: boolean }): Promise<{ payment: Payment; collectStatus?: string }> {
    const { settlement } = this.deps;
    switch (payment.state) {
      case 'COLLECTING': {
        const collected = await settlement.collect(payment, options);
        return collected.status === undefined ? { payment: collected.payment } : { payment: collected.payment, collectStatus: collected.status };
      }
      case 'ACCEPTING':
        return { payment: await settlement.accept(payment) };
      default:
        return { payment };
    }
  }

  #answerAccepted(outcome: { payment: Payment; collectStatus?: string }): AcceptResult {
    const { payment } = outcome;
    const ids = { homeTransactionId: payment.homeTransactionId, transferId: payment.transferId ?? '' };
    switch (payment.state) {
      case 'COLLECTING':
      case 'AWAITING_DEBIT': {
        const status = outcome.collectStatus ?? (payment.state === 'AWAITING_DEBIT' ? 'pending' : 'unknown');
        const reference = payment.institutionReference === null ? {} : { institutionReference: payment.institutionReference };
        return { ...ids, state: payment.state, collection: { status, ...reference } };
      }
      case 'COMPLETED':
        return { ...ids, state: payment.state };
      case 'ACCEPTING':
      case 'CONFIRMING':
        throw new ConnectorError('SdkTimeout', `outcome not known yet; see GET /send-money/${ids.transferId}`);
      case 'REFUNDING':
      case 'REFUNDED':
        // Not "refunded" while an operator decides on a refund the switch's COMPLETED held back.
        if (refundHeldBack(payment)) throw new ConnectorError('SdkTimeout', 'refund held back: the switch reported COMPLETED after it began; an operator decides');
        throw refundAnswer(payment);
      case 'FAILED':
        throw paymentError(payment);
      case 'ABORTED':
        if (payment.errorName === 'QuoteNotAccepted') throw new ConnectorError('PaymentStateConflict', 'the customer declined this payment');
        // Aborted by an operator, who records no error of the payment's own.
        if (payment.errorName === null) throw new ConnectorError('PaymentStateConflict', 'the payment was aborted; see GET /send-money/{transferId}');
        throw paymentError(payment);
      case 'INITIATING':
      case 'QUOTED':
        throw new ConnectorError('PaymentStateConflict', `payment is ${payment.state}`);
    }
  }

  /**
   * PUT /callback: the institution says whether the customer's debit succeeded (TS, SUCCEEDED)
   * or not. Success -> the switch is told to proceed; a failure code -> the switch is told false;
   * an undecided code (TA, TIP, PENDING) moves nothing. A repeated or late callback changes nothing.
   */
  async callback(body: CallbackBody, origin: { readonly authenticated: boolean } = { authenticated: true }): Promise<void> {
    const { id, code } = callbackOf(body);
    const found = await this.deps.store.findByTransferId(id);
    if (found === undefined) throw new ConnectorError('TransferNotFound', `no outgoing payment with transferId ${id}`);
    if (found.flow !== 'mobile-operator') throw new ConnectorError('PaymentStateConflict', 'this payment is not debited by the institution');
    // Checked before queueing behind work on the same payment, so a duplicate answers at once.
    if (!awaitsDebit(found) && found.state !== 'QUOTED') return this.#lateCallback(found, code);
    await this.#serial.run(found.homeTransactionId, async () => {
      const payment = await this.deps.settlement.reread(found.homeTransactionId);
      if (payment.state === 'QUOTED') throw new ConnectorError('PaymentStateConflict', 'the customer has not accepted this payment');
      if (!awaitsDebit(payment)) return this.#lateCallback(payment, code);
      // The secret only says who sent the callback; the institution says whether the customer was
      // debited. Only an adapter whose callbacks are signed evidence is believed on its word.
      const evidence = origin.authenticated && this.deps.coreBanking.capabilities.signedCallbacks === true;
      if (!evidence || UNDECIDED_CALLBACK_CODES.includes(code)) return this.#confirmCallback(payment, id, code, origin.authenticated);
      this.deps.logger.info({ transferId: id, state: payment.state, code }, 'debit callback');
      await this.deps.settlement.applyDebitStatus(payment, SUCCESS_CALLBACK_CODES.includes(code) ? 'succeeded' : 'failed', { callbackCode: code });
    });
  }

  /**
   * A callback is a hint, never evidence (with our secret it is at least known to come from the
   * payment provider): the institution is asked for the debit's status at once and only its
   * answer moves the payment. A pending or unknown answer changes nothing; the recovery worker
   * asks again later.
   */
  async #confirmCallback(payment: Payment, transferId: string, code: string, authenticated: boolean): Promise<void> {
    const status = await this.deps.coreBanking.transactionStatus(transferId);
    const bindings = { transferId, state: payment.state, code, authenticated, institutionStatus: status };
    const claimed = SUCCESS_CALLBACK_CODES.includes(code) ? 'succeeded' : 'failed';
    if (status !== 'succeeded' && status !== 'failed') {
      this.deps.logger.info(bindings, 'callback: the institution has no final status yet; nothing changes');
      return;
    }
    if (status !== claimed) this.deps.logger.warn(bindings, 'callback contradicts the institution; the institution decides');
    else this.deps.logger.info(bindings, 'callback confirmed by the institution');
    await this.deps.settlement.applyDebitStatus(payment, status, { callbackCode: code });
  }

  /**
   * A callback for a payment no longer waiting for its debit. One saying the customer was debited,
   * for a payment ABORTED before the debit was known (an operator resolved it, or a repeated
   * collection was declined while the first prompt was still live), is asked of the institution:
   * if it confirms the debit, nothing will ever refund it on its own, so the payment is flagged
   * for an operator and logged at error level. Any other is only logged.
   */
  async #lateCallback(payment: Payment, code: string): Promise<void> {
    if (payment.state !== 'ABORTED' || payment.needsAttention || !SUCCESS_CALLBACK_CODES.includes(code) || payment.transferId === null) {
      return this.#ignoreCallback(payment, code);
    }
    const status = await this.deps.coreBanking.transactionStatus(payment.transferId);
    if (status !== 'succeeded') return this.#ignoreCallback(payment, code);
    await this.deps.settlement.flagDebitAfterAbort(payment);
  }

  #ignoreCallback(payment: Payment, code: string): void {
    const bindings = { transferId: payment.transferId, state: payment.state, code, recordedCode: payment.callbackCode };
    if (payment.callbackCode !== null && payment.callbackCode !== code) this.deps.logger.warn(bindings, 'callback contradicts the one recorded; ignored');
    else this.deps.logger.info(bindings, 'repeated callback changes nothing');
  }

  /** GET /send-money/{transferId} and GET /merchant-payment(s)/{transferId}. */
  async status(transferId: string, kind: PaymentKind): Promise<PaymentStatus> {
    return paymentStatus(await this.#find(transferId, kind));
  }

  async #find(transferId: string, kind: PaymentKind): Promise<Payment> {
    const payment = await this.deps.store.findByTransferId(transferId);
    if (payment === undefined || payment.kind !== kind) throw new ConnectorError('TransferNotFound', `no ${kindWord(kind)} with transferId ${transferId}`);
    return payment;
  }

  async needingAttention(limit: number): Promise<PaymentStatus[]> {
    return (await this.deps.store.listNeedingAttention(limit)).map(paymentStatus);
  }

  /** Runs `work` on a payment under its in-process lock (the recovery worker's way in). */
  exclusive<T>(homeTransactionId: string, work: () => Promise<T>): Promise<T> {
    return this.#serial.run(homeTransactionId, work);
  }

  /** True while this process is initiating the payment (its POST /transfers may still be running). */
  isInitiating(homeTransactionId: string): boolean {
    return this.#initiations.has(homeTransactionId);
  }

  /** Resolves when the work under way in this process has ended (for a clean stop). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.#initiations.values()]);
    await this.#serial.idle();
  }
}

/**
 * The answer to an accept of a payment the connector is refunding or has refunded: the switch did
 * not complete the transfer after the connector had asked it to proceed, so giving the money back
 * is the connector's. Never a 4xx, which tells the channel that nothing was started and that it
 * reverses its own debit (README, One account model): a decline the switch relayed (a payee
 * rejection, an expired transfer) stays on the payment, for GET, and is named in the message of
 * a 503 (2001), as a switch that failed otherwise is answered. A review found the decline
 * answered as such (422 3303 after a refund had started, the same code as the connector's own
 * refusal of an expired quote), which invited the channel to reverse its debit a second time.
 */
function refundAnswer(payment: Payment): ConnectorError {
  const stored = paymentError(payment);
  if (stored.category === 'unavailable' || stored.category === 'timeout' || stored.category === 'internal') return stored;
  return new ConnectorError('SdkClientError', `the switch declined the transfer (${stored.code}, ${ERROR_CATALOGUE[stored.errorName].text}); the customer is refunded`);
}

function answerTerms(payment: Payment, hash: string): PaymentTerms {
  if (payment.requestHash !== hash) {
    throw new ConnectorError('ModifiedRequest', `homeTransactionId ${payment.homeTransactionId} was used for another request`);
  }
  // The stored terms are the QUOTED snapshot; a retry after the accept, a decline or an expiry
  // is told where the payment stands now, not that it still waits for the customer's choice.
  if (payment.terms !== null) return { ...(JSON.parse(payment.terms) as PaymentTerms), state: payment.state };
  if (payment.state === 'INITIATING') {
    throw new ConnectorError('PaymentStateConflict', `payment ${payment.homeTransactionId} is being initiated; ask again shortly`);
  }
  throw paymentError(payment);
}

/** A state other than WAITING_FOR_QUOTE_ACCEPTANCE after initiation: why it cannot go on. */
function unexpectedState(transfer: OutboundTransfer): { error: ConnectorError; needsAttention: boolean } | undefined {
  switch (transfer.currentState) {
    case 'WAITING_FOR_QUOTE_ACCEPTANCE':
      return undefined;
    case 'WAITING_FOR_PARTY_ACCEPTANCE':
      return { error: new ConnectorError('SdkClientError', 'the switch connector waits for party acceptance: set AUTO_ACCEPT_PARTY=true'), needsAttention: true };
    case 'COMPLETED':
      // The customer was not debited but the switch moved money: someone has to settle this by hand.
      return { error: new ConnectorError('SdkClientError', 'the switch completed the transfer without quote acceptance: set AUTO_ACCEPT_QUOTES=false'), needsAttention: true };
    default:
      return { error: new ConnectorError('SdkClientError', `the switch answered ${transfer.currentState ?? 'without a state'}`), needsAttention: false };
  }
}

/** Callback codes that say the debit succeeded: Airtel's TS, the reference API's SUCCEEDED. */
const SUCCESS_CALLBACK_CODES: readonly string[] = ['TS', 'SUCCEEDED'];

/**
 * Callback codes that do not decide the debit (Airtel's TA, ambiguous, and TIP, in progress; the
 * reference API's PENDING): telling the switch false on them could abort a payment whose
 * customer is then debited.
 */
const UNDECIDED_CALLBACK_CODES: readonly string[] = ['TA', 'TIP', 'PENDING'];

function awaitsDebit(payment: Payment): boolean {
  return payment.state === 'COLLECTING' || payment.state === 'AWAITING_DEBIT';
}

/** Send money sends an amount (SEND); a merchant payment asks for an amount to arrive (RECEIVE). */
function amountTypeOf(kind: PaymentKind): 'SEND' | 'RECEIVE' {
  return kind === 'SEND_MONEY' ? 'SEND' : 'RECEIVE';
}

function kindWord(kind: PaymentKind): string {
  return kind === 'SEND_MONEY' ? 'send-money payment' : 'merchant payment';
}
