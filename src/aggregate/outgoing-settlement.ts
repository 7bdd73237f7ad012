import { switchDeclineOf } from '../domain/switch-declines.js';
import { ConnectorError, assert, errorCodeOf, isConnectorError, storedError } from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking, InstitutionTransactionStatus } from '../ports/core-banking.js';
import type { Logger } from '../ports/logger.js';
import type { OutgoingChanges, OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { OutboundAnswer, TransferContinuation } from '../ports/outgoing-switch.js';
import type { SwitchConnector } from '../ports/switch-connector.js';
import { failedAttempt, isDecline, type RetryPolicy } from './inbound-settlement.js';
import { refundReference } from '../domain/outgoing-references.js';
import { canTransitionOutgoing, type OutgoingState } from '../domain/outgoing-payment.js';
import { contradictionNote, flagKept, isContradiction } from '../domain/contradiction.js';
import { heldWhile, type IntentHold } from '../shared/held-while.js';

type Payment = OutgoingPaymentRecord;

/**
 * The steps of an outgoing payment that move money or decide its fate, each a compare-and-set
 * transition around one call. Request handlers, the callback and the recovery worker all use
 * these, so every path finishes a payment the same way. Callers hold the payment's in-process
 * lock (KeyedSerializer); the store's transitions decide between processes.
 */
export class OutgoingSettlement {
  constructor(
    private readonly store: OutgoingStore,
    private readonly coreBanking: CoreBanking,
    private readonly switchConnector: SwitchConnector,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly retry: RetryPolicy,
    private readonly hold: IntentHold,
  ) {}

  /**
   * An intent's calls, the intent held from the recovery workers while they run, so that calls
   * slower than their staleness are not made a second time beside themselves.
   */
  private whileHeld<T>(payment: Payment, calls: () => Promise<T>): Promise<T> {
    const { homeTransactionId, state } = payment;
    return heldWhile(
      this.hold.everyMs,
      () => this.store.holdIntent(homeTransactionId, state, new Date(this.clock.now().getTime() + this.hold.forMs).toISOString()),
      (error) => this.logger.warn({ homeTransactionId, state, code: errorCodeOf(error) }, 'the hold on an intent could not be renewed; a recovery worker may take it over'),
      calls,
    );
  }

  /** ACCEPTING -> COMPLETED, REFUNDING (the switch did not proceed) or CONFIRMING (outcome unknown). */
  async accept(payment: Payment): Promise<Payment> {
    assert(payment.state === 'ACCEPTING', `accept from ${payment.state}`);
    const transferId = transferIdOf(payment);
    const answer = await this.switchConnector.continueTransfer(transferId, { acceptQuote: true });
    switch (answer.outcome) {
      case 'answered': {
        const switchState = answer.transfer.currentState ?? 'UNSPECIFIED';
        // COMPLETED with the hub's own ABORTED (an answer the switch connector took from the hub's
        // reply to a query) is no completion: the switch is asked again.
        if (switchState === 'COMPLETED' && answer.transfer.hubState === 'ABORTED') return this.startConfirming(payment, 'switch answered COMPLETED with the hub\'s ABORTED');
        // From CONFIRMING too: another replica's recovery may have taken the accept over meanwhile.
        if (switchState === 'COMPLETED') return this.complete(payment, ['ACCEPTING', 'CONFIRMING'], switchState);
        // ABORTED: the switch connector ended the transfer itself, before any prepare.
        if (switchState === 'ABORTED') return this.startRefund(payment, 'switch answered ABORTED', 'switch answered ABORTED', switchState);
        const hubCode = answer.transfer.hubErrorCode;
        if (switchState === 'ERROR_OCCURRED' && hubCode !== undefined) {
          return this.startRefund(payment, `switch answered ERROR_OCCURRED, the hub's error ${hubCode}`, `switch answered ERROR_OCCURRED on the hub's error ${hubCode}`, switchState, hubCode);
        }
        // Any other state, ERROR_OCCURRED without the hub's error included, is not an outcome:
        // only the switch's later word decides.
        return this.startConfirming(payment, `switch answered ${switchState}`);
      }
      case 'failed': {
        // Only a failure that proves the transfer went no further refunds: the request never
        // reached the switch connector (HTTP status 0), the switch connector refused it as
        // invalid before acting on it (400), or the hub itself answered the transfer with an error
        // callback, which the switch connector relays with the hub's code. Any other error (the
        // switch connector's own 500 after a reset on its POST to the hub, a proxy's 502) may
        // come after the prepare reached the hub, whose transfer can then commit: asked instead.
        const summary = `HTTP ${answer.httpStatus}, statusCode ${answer.statusCode}`;
        if (answer.httpStatus === 0 || answer.httpStatus === 400 || hubRefusalOf(answer) !== undefined) {
          return this.startRefund(payment, summary, answer.message, answer.transfer?.currentState, answer.statusCode);
        }
        return this.startConfirming(payment, `${answer.message} (not the hub's error)`);
      }
      case 'unknown':
        return this.startConfirming(payment, answer.reason);
    }
  }

  /** ACCEPTING -> CONFIRMING (outcome unknown), then the first question to the switch. */
  private async startConfirming(payment: Payment, reason: string): Promise<Payment> {
    const confirming = await this.move(payment, ['ACCEPTING'], 'CONFIRMING', { lastError: `outcome unknown: ${reason}` });
    this.logger.warn({ transferId: confirming.transferId, state: confirming.state }, 'switch outcome unknown after accept; asking the switch');
    return confirming.state === 'CONFIRMING' ? this.confirm(confirming) : confirming;
  }

  /**
   * CONFIRMING -> COMPLETED or REFUNDING, on the switch's explicit word only (GET /transfers/{id}).
   * Anything else leaves the payment where it is, asked again with backoff: a transfer whose
   * outcome is unknown is never refunded.
   *
   * `acceptLost`: the accept was sent longer ago than the switch can take to act on one. A switch
   * that still waits for the quote's acceptance then never received it (a crash cut the call
   * off): the quote is withdrawn, see withdraw().
   */
  async confirm(payment: Payment, options: { readonly acceptLost?: boolean } = {}): Promise<Payment> {
    assert(payment.state === 'CONFIRMING', `confirm from ${payment.state}`);
    const transferId = transferIdOf(payment);
    let status;
    try {
      // Held while the switch is asked; not across the bookkeeping after it, whose failure record frees the row.
      status = await this.whileHeld(payment, () => this.switchConnector.getTransfer(transferId));
    } catch (error) {
      return this.recordFailure(payment, error);
    }
    switch (status.currentState) {
      case 'COMPLETED':
        return this.complete(payment, ['CONFIRMING'], 'COMPLETED');
      case 'ABORTED':
        return this.startRefund(payment, 'switch reports ABORTED', 'switch reports the transfer aborted', 'ABORTED');
      case 'WAITING_FOR_QUOTE_ACCEPTANCE':
        if (options.acceptLost === true) return this.withdraw(payment);
        return this.recordFailure(payment, new Error(`switch gives no final state (${status.currentState})`));
      case 'NOT_AT_HUB':
        // The hub never received the transfer. Once the accept is older than the switch can take
        // on it, no prepare is still on its way (and the switch connector, whose query of the hub
        // failed, will not prepare it any more): nothing will move, the customer is refunded.
        // Sooner, a prepare may still be on its way: asked again later.
        if (options.acceptLost === true) return this.startRefund(payment, 'the hub never received the transfer', 'the hub has no such transfer (3208) after the accept\'s time', 'ABORTED');
        return this.recordFailure(payment, new Error('the hub has no such transfer yet (3208)'));
      case 'UNKNOWN':
      case 'ERROR_OCCURRED':
      case 'WAITING_FOR_PARTY_ACCEPTANCE':
      case 'WAITING_FOR_CONVERSION_ACCEPTANCE':
        return this.recordFailure(payment, new Error(`switch gives no final state (${status.currentState})`));
    }
  }

  /**
   * CONFIRMING, the accept lost: tells the switch `acceptQuote: false` rather than accepting a
   * second time (a second accept that meets a first one still in progress fails, and that failure
   * must not refund a transfer that then completes). Only the switch's explicit answer decides:
   * ABORTED refunds the customer, COMPLETED completes, anything else (an error, a timeout, a
   * transfer still in progress) leaves the payment CONFIRMING, asked again with backoff.
   */
  private async withdraw(payment: Payment): Promise<Payment> {
    const transferId = transferIdOf(payment);
    this.logger.warn({ transferId, homeTransactionId: payment.homeTransactionId }, 'switch never received the accept; withdrawing the quote');
    const answer = await this.whileHeld(payment, () => this.switchConnector.continueTransfer(transferId, { acceptQuote: false }));
    if (answer.outcome === 'answered') {
      const switchState = answer.transfer.currentState ?? 'UNSPECIFIED';
      if (switchState === 'ABORTED') {
        return this.startRefund(payment, 'the accept never reached it; quote withdrawn', 'accept lost; the switch aborted the transfer on acceptQuote false', 'ABORTED');
      }
      if (switchState === 'COMPLETED') return this.complete(payment, ['CONFIRMING'], switchState);
      return this.recordFailure(payment, new Error(`withdrawal of the lost accept answered ${switchState}`));
    }
    const detail = answer.outcome === 'failed' ? `HTTP ${answer.httpStatus}, statusCode ${answer.statusCode}` : answer.reason;
    return this.recordFailure(payment, new Error(`withdrawal of the lost accept not confirmed (${detail})`));
  }

  /**
   * REFUNDING -> REFUNDED: pays the customer back through the institution, once per transferId.
   * Not once the switch has reported the transfer completed (see complete()): the payee is paid,
   * and a refund would pay the customer back as well. Such a refund is held back, flagged, for an
   * operator to resolve to COMPLETED, or to REFUNDED if an earlier attempt was paid after all.
   */
  async refund(payment: Payment): Promise<Payment> {
    assert(payment.state === 'REFUNDING', `refund from ${payment.state}`);
    const transferId = transferIdOf(payment);
    if (refundHeldBack(payment)) {
      // Looked at again only after the longest backoff: nothing changes without an operator.
      const later = new Date(this.clock.now().getTime() + this.retry.maxBackoffMs).toISOString();
      await this.store.recordAttempt(payment.homeTransactionId, 'REFUNDING', { nextAttemptAt: later, keepContradiction: true });
      this.logger.warn({ transferId, homeTransactionId: payment.homeTransactionId }, 'refund held back: the switch reported the transfer completed; waiting for an operator');
      return this.reread(payment.homeTransactionId);
    }
    assert(payment.debitAmount !== null, `refund of ${payment.homeTransactionId} without a debit amount`);
    const debitAmount = payment.debitAmount;
    try {
      await this.whileHeld(payment, () =>
        this.coreBanking.refund({
          reference: refundReference(transferId),
          // Bank flow: the channel debited under its own id; mobile-operator flow: we collected under the transferId.
          originalReference: payment.flow === 'bank' ? payment.homeTransactionId : transferId,
          amount: { amount: debitAmount, currency: payment.sendCurrency },
          payerId: payment.payerId,
        }),
      );
    } catch (error) {
      return this.recordFailure(payment, error);
    }
    // A contradiction flagged meanwhile (the switch reported the transfer completed) outlives the refund.
    const refunded = await this.move(payment, ['REFUNDING'], 'REFUNDED', { ...flagKept(payment), keepContradiction: true });
    this.logger.info({ transferId, homeTransactionId: payment.homeTransactionId, state: refunded.state }, 'customer refunded');
    return refunded;
  }

  /**
   * COLLECTING: asks the institution to debit the customer (payment prompt), keyed by the
   * transferId. `repeat`: a prompt may already have been sent under this reference (a channel's
   * retried accept, the recovery worker): a decline then does not prove that nothing was debited,
   * since the earlier prompt may still be live (its call still on its way, or answered after its
   * timeout), so the institution's status of the reference decides instead.
   */
  async collect(payment: Payment, options: { readonly repeat?: boolean; readonly held?: boolean } = {}): Promise<{ payment: Payment; status?: InstitutionTransactionStatus }> {
    assert(payment.state === 'COLLECTING', `collect from ${payment.state}`);
    const transferId = transferIdOf(payment);
    assert(payment.debitAmount !== null, `collect for ${payment.homeTransactionId} without a debit amount`);
    if (options.repeat === true) {
      // A prompt sent again is out for as long as the first: nobody else (the recovery worker, a
      // retried accept on another replica) prompts before then (see OutgoingPayments#accept). A
      // recovery worker holds the payment already; any other caller takes it first, and leaves
      // the prompt to whoever holds it.
      const now = this.clock.now();
      const outUntil = new Date(now.getTime() + (this.coreBanking.capabilities.collectTakesUpToMs ?? 0)).toISOString();
      const taken =
        options.held === true
          ? await this.store.recordAttempt(payment.homeTransactionId, 'COLLECTING', { nextAttemptAt: outUntil })
          : await this.store.holdPrompt(payment.homeTransactionId, outUntil, now.toISOString());
      if (!taken) return { payment: await this.reread(payment.homeTransactionId) };
    }
    let result;
    try {
      result = await this.coreBanking.collect({
        reference: transferId,
        amount: { amount: payment.debitAmount, currency: payment.sendCurrency },
        payerId: payment.payerId,
        description: payment.kind === 'SEND_MONEY' ? 'Send money' : 'Merchant payment',
      });
    } catch (error) {
      if (isDecline(error)) {
        if (options.repeat === true) return { payment: await this.afterDeclinedRepeat(payment, transferId, error) };
        return { payment: await this.abort(payment, ['COLLECTING'], error, { acceptQuote: false }) };
      }
      return { payment: await this.recordFailure(payment, error) };
    }
    const reference = result.institutionReference === undefined ? {} : { institutionReference: result.institutionReference };
    return { payment: await this.applyDebitStatus(payment, result.status, reference), status: result.status };
  }

  /** A repeated prompt was declined: the institution's status of the reference decides (see collect). */
  private async afterDeclinedRepeat(payment: Payment, transferId: string, decline: ConnectorError): Promise<Payment> {
    let status: InstitutionTransactionStatus;
    try {
      status = await this.coreBanking.transactionStatus(transferId);
    } catch (error) {
      return this.recordFailure(payment, error);
    }
    this.logger.warn({ transferId, state: payment.state, code: decline.code, institutionStatus: status }, 'repeated prompt declined; the institution\'s status of the reference decides');
    if (status === 'not-found') return this.abort(payment, ['COLLECTING'], decline, { acceptQuote: false });
    return this.applyDebitStatus(payment, status);
  }

  /**
   * Moves a payment waiting for its debit on the institution's word: succeeded -> ACCEPTING and
   * on to the switch; failed -> ABORTED (nothing debited, the switch told false); pending ->
   * AWAITING_DEBIT; unknown -> asked again later.
   */
  async applyDebitStatus(payment: Payment, status: InstitutionTransactionStatus, changes: OutgoingChanges = {}): Promise<Payment> {
    switch (status) {
      case 'succeeded':
        return this.debitSucceeded(payment, changes);
      case 'failed':
        return this.abort(payment, ['COLLECTING', 'AWAITING_DEBIT'], new ConnectorError('PayerRejected', 'the customer was not debited'), { acceptQuote: false }, changes);
      case 'pending':
        if (payment.state === 'COLLECTING') return this.move(payment, ['COLLECTING'], 'AWAITING_DEBIT', changes);
        return this.recordFailure(payment, new Error('debit still pending at the institution'));
      case 'unknown':
      case 'not-found':
        return this.recordFailure(payment, new Error(`institution reports the debit ${status}`));
    }
  }

  /**
   * COLLECTING or AWAITING_DEBIT -> ACCEPTING, then the switch is told to proceed, by the caller
   * whose transition won only. Another replica that found the payment ACCEPTING must not accept
   * again: the switch answers a second accept with an error, which would refund a customer
   * whose transfer completed.
   */
  async debitSucceeded(payment: Payment, changes: OutgoingChanges): Promise<Payment> {
    const accepting = await this.tryMove(payment, ['COLLECTING', 'AWAITING_DEBIT'], 'ACCEPTING', changes);
    if (accepting === undefined) {
      const current = await this.reread(payment.homeTransactionId);
      // Aborted meanwhile (another replica's declined repeat prompt, an operator): the debit now
      // confirmed will be refunded by nobody on its own.
      if (current.state === 'ABORTED') await this.flagDebitAfterAbort(current);
      return current;
    }
    this.logger.info({ transferId: accepting.transferId, state: 'ACCEPTING' }, 'customer debited; accepting the quote');
    return this.accept(accepting);
  }

  /**
   * A payment ABORTED before its debit was known, which the institution now reports debited:
   * nothing refunds it on its own, so it is flagged for an operator (once) and logged at error level.
   */
  async flagDebitAfterAbort(payment: Payment): Promise<void> {
    if (payment.needsAttention) return;
    const lastError = 'the institution reports the customer debited after the payment was aborted: refund the customer by hand';
    await this.store.recordAttempt(payment.homeTransactionId, 'ABORTED', { needsAttention: true, lastError });
    this.logger.error({ transferId: payment.transferId, state: payment.state }, `outgoing payment needs manual attention: ${lastError}`);
  }

  /**
   * Ends a payment without moving money and tells the switch `continuation` (false) once. That
   * message moves no money: if it is lost the switch's own timeout aborts the transfer.
   */
  async abort(
    payment: Payment,
    from: readonly OutgoingState[],
    reason: ConnectorError,
    continuation: TransferContinuation,
    changes: OutgoingChanges = {},
  ): Promise<Payment> {
    const aborted = await this.tryMove(payment, from, 'ABORTED', { ...changes, errorName: reason.errorName, errorMessage: reason.message });
    if (aborted === undefined) return this.reread(payment.homeTransactionId);
    this.logger.info({ transferId: aborted.transferId, homeTransactionId: aborted.homeTransactionId, code: reason.code }, 'payment aborted');
    if (aborted.transferId !== null) await this.tellSwitch(aborted.transferId, continuation);
    return aborted;
  }

  private async tellSwitch(transferId: string, continuation: TransferContinuation): Promise<void> {
    const answer = await this.switchConnector.continueTransfer(transferId, continuation);
    if (answer.outcome !== 'answered') {
      this.logger.warn({ transferId, outcome: answer.outcome }, 'switch not told of the abort; its own timeout will abort the transfer');
    }
  }

  /**
   * ACCEPTING or CONFIRMING -> REFUNDING (the switch did not take the money on), then the first
   * refund attempt. Only from the state the caller read: a late answer to an accept must not
   * refund a payment that recovery has meanwhile moved on to asking the switch.
   */
  private async startRefund(payment: Payment, summary: string, reason: string, switchState: string | undefined, statusCode?: string): Promise<Payment> {
    assert(payment.state === 'ACCEPTING' || payment.state === 'CONFIRMING', `refund from ${payment.state}`);
    // The channel's answer stays short (128 characters); lastError keeps the switch's own words.
    // A decline the switch relayed (payee blocked, transfer expired, ...) is answered as such (4xx), not as an outage.
    const declined = statusCode === undefined ? undefined : switchDeclineOf(statusCode);
    const answer = new ConnectorError(declined ?? 'SdkClientError', `the switch did not complete the transfer (${summary}); the customer is refunded`);
    const refunding = await this.move(payment, [payment.state], 'REFUNDING', {
      errorName: answer.errorName,
      errorMessage: answer.message,
      lastError: reason,
      ...(switchState === undefined ? {} : { switchState }),
    });
    if (refunding.state !== 'REFUNDING') return refunding;
    this.logger.warn({ transferId: refunding.transferId, state: 'REFUNDING' }, 'switch did not complete the transfer; refunding');
    return this.refund(refunding);
  }

  /**
   * To COMPLETED on the switch's word, from one of `from`. A payment another actor moved to
   * REFUNDING or REFUNDED meanwhile (a replica's recovery worker that gave the accept up as lost
   * on the hub's "no such transfer") has its customer paid back, or about to be, while the payee
   * is paid too: a contradiction only an operator can settle, so it is flagged, once, and logged
   * at error level; a refund not made yet is held back (refund()), one already on its way ends
   * REFUNDED still flagged. Before, the completion was dropped without a word.
   */
  private async complete(payment: Payment, from: readonly OutgoingState[], switchState: string): Promise<Payment> {
    const completed = await this.tryMove(payment, from, 'COMPLETED', { switchState });
    if (completed !== undefined) return completed;
    for (let tries = 0; tries < 3; tries += 1) {
      const current = await this.reread(payment.homeTransactionId);
      if ((current.state !== 'REFUNDING' && current.state !== 'REFUNDED') || isContradiction(current.lastError)) return current;
      const lastError = contradictionNote(switchState, 'payment', current.state);
      // From the state read: a refund ending meanwhile (REFUNDING -> REFUNDED) is read again.
      if (await this.store.recordAttempt(current.homeTransactionId, current.state, { needsAttention: true, lastError, switchState })) {
        this.logger.error({ homeTransactionId: current.homeTransactionId, transferId: current.transferId, state: current.state }, `outgoing payment needs manual attention: ${lastError}`);
        return this.reread(payment.homeTransactionId);
      }
    }
    return this.reread(payment.homeTransactionId);
  }

  /** A compare-and-set transition that clears the retry bookkeeping; answers the stored record when another actor moved first. */
  async move(payment: Payment, from: readonly OutgoingState[], to: OutgoingState, changes: OutgoingChanges): Promise<Payment> {
    return (await this.tryMove(payment, from, to, changes)) ?? this.reread(payment.homeTransactionId);
  }

  /** The same, answering undefined when the payment was not in one of `from`. */
  async tryMove(payment: Payment, from: readonly OutgoingState[], to: OutgoingState, changes: OutgoingChanges): Promise<Payment | undefined> {
    // The state machine (src/domain/outgoing-payment.ts) is the one list of allowed moves.
    assert(from.every((state) => canTransitionOutgoing(state, to)), `payment ${payment.homeTransactionId}: ${from.join('|')} -> ${to} is not a transition`);
    const moved = await this.store.transition(payment.homeTransactionId, from, to, {
      attempts: 0,
      nextAttemptAt: null,
      lastError: null,
      needsAttention: false,
      ...changes,
    });
    if (moved !== undefined) {
      this.logger.info({ homeTransactionId: moved.homeTransactionId, transferId: moved.transferId, from: payment.state, state: to }, 'outgoing payment moved');
    }
    return moved;
  }

  /** Schedules the next attempt with capped exponential backoff; flags long-failing or declined work. */
  async recordFailure(payment: Payment, error: unknown): Promise<Payment> {
    const failed = failedAttempt(this.retry, this.clock.now(), payment.attempts + 1, error);
    // Once flagged, a payment stays flagged until it moves on.
    const needsAttention = payment.needsAttention || failed.needsAttention;
    const bindings = { homeTransactionId: payment.homeTransactionId, transferId: payment.transferId, state: payment.state, attempts: failed.attempts, code: errorCodeOf(error) };
    // A contradiction recorded before stays the last error (decided in the same statement).
    if (!(await this.store.recordAttempt(payment.homeTransactionId, payment.state, { ...failed, needsAttention, keepContradiction: true }))) {
      // Another request or worker moved the payment on meanwhile: its bookkeeping stands.
      this.logger.info(bindings, 'outgoing payment step failed after the payment moved on; nothing recorded');
    } else if (needsAttention) this.logger.error(bindings, 'outgoing payment needs manual attention; still retrying');
    else this.logger.warn(bindings, 'outgoing payment step failed; will retry');
    return this.reread(payment.homeTransactionId);
  }

  async reread(homeTransactionId: string): Promise<Payment> {
    const payment = await this.store.findByHomeTransactionId(homeTransactionId);
    assert(payment !== undefined, `outgoing payment ${homeTransactionId} vanished`);
    return payment;
  }
}

/**
 * The hub's code when a failed accept carries the hub's error callback: in the transfer's last
 * error, or as the answer's four-digit statusCode, which the switch connector takes from that
 * error alone (its own failures answer their HTTP status, "500", there: sdk-scheme-adapter,
 * OutboundServer/handlers.js `handleError`).
 */
function hubRefusalOf(answer: Extract<OutboundAnswer, { outcome: 'failed' }>): string | undefined {
  if (answer.transfer?.hubErrorCode !== undefined) return answer.transfer.hubErrorCode;
  return /^[0-9]{4}$/.test(answer.statusCode) ? answer.statusCode : undefined;
}

/** A refund the switch's later COMPLETED holds back (complete() flagged it), until an operator resolves it. */
export function refundHeldBack(payment: Payment): boolean {
  return payment.state === 'REFUNDING' && payment.switchState === 'COMPLETED' && isContradiction(payment.lastError);
}

function transferIdOf(payment: Payment): string {
  assert(payment.transferId !== null, `outgoing payment ${payment.homeTransactionId} in ${payment.state} without a transferId`);
  return payment.transferId;
}

/** The error a payment was answered with, answered again on a retry. */
export function paymentError(payment: Payment): ConnectorError {
  return storedError(payment, `payment ${payment.homeTransactionId} in ${payment.state}`);
}
