import { ConnectorError, errorCodeOf } from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking } from '../ports/core-banking.js';
import type { Logger } from '../ports/logger.js';
import type { OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { OutgoingPayments } from './outgoing-payments.js';
import type { OutgoingSettlement } from './outgoing-settlement.js';
import { isFinalOutgoing, type OutgoingState } from '../domain/outgoing-payment.js';
import { workWithinLease, type RecoveryReport } from './recovery.js';
import { withAuditCause } from '../audit/audit-cause.js';

export interface OutgoingRecoverySettings {
  readonly batchSize: number;
  /** How long the switch connector may block on POST or PUT /transfers: older initiations and accepts were cut off. */
  readonly transferTimeoutMs: number;
  /** Without a callback this long after the payment prompt, the institution is asked. */
  readonly callbackWaitMs: number;
  /** Intents (COLLECTING, CONFIRMING, REFUNDING) untouched this long are taken over from a crashed request. */
  readonly intentStaleAfterMs: number;
  readonly leaseMs: number;
}

type Payment = OutgoingPaymentRecord;

/**
 * Finishes outgoing payments that a crash, an outage or a lost callback left unfinished: a
 * refund is retried with capped backoff until it succeeds (flagged for manual action after a
 * number of attempts), an unknown switch outcome is asked until the switch says, a missing
 * callback is replaced by the institution's status of the debit.
 */
export class OutgoingRecovery {
  constructor(
    private readonly store: OutgoingStore,
    private readonly outgoing: OutgoingPayments,
    private readonly settlement: OutgoingSettlement,
    private readonly coreBanking: CoreBanking,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: OutgoingRecoverySettings,
  ) {}

  /** One pass; every change it makes is audited with the cause `recovery`. A stop ends it between two items. */
  runOnce(stop?: AbortSignal): Promise<RecoveryReport> {
    return withAuditCause({ cause: 'recovery' }, () => this.#pass(stop));
  }

  async #pass(stop: AbortSignal | undefined): Promise<RecoveryReport> {
    const now = this.clock.now().getTime();
    const groups: Array<[readonly OutgoingState[], number]> = [
      [['REFUNDING', 'CONFIRMING'], this.settings.intentStaleAfterMs],
      // A prompt may be on its way for as long as the institution's calls may take: not prompted again sooner.
      [['COLLECTING'], Math.max(this.settings.intentStaleAfterMs, (this.coreBanking.capabilities.collectTakesUpToMs ?? 0) + 5_000)],
      [['AWAITING_DEBIT'], this.settings.callbackWaitMs],
      // A little beyond the switch's own limits, so that a call still running elsewhere is never
      // overtaken: an accept is one blocking call, an initiation up to two (transfer, conversion).
      [['ACCEPTING'], this.settings.transferTimeoutMs + 5_000],
      [['INITIATING'], 2 * this.settings.transferTimeoutMs + 5_000],
    ];
    const claimed: Payment[] = [];
    const leaseUntil = new Date(now + this.settings.leaseMs).toISOString();
    for (const [states, staleMs] of groups) {
      claimed.push(
        ...(await this.store.claimDue({
          states,
          now: new Date(now).toISOString(),
          staleBefore: new Date(now - staleMs).toISOString(),
          leaseUntil,
          limit: this.settings.batchSize,
        })),
      );
    }
    let finished = 0;
    let failed = 0;
    const left = await workWithinLease(claimed, leaseUntil, this.clock, async (payment) => {
      try {
        const after = await this.outgoing.exclusive(payment.homeTransactionId, () => this.recover(payment.homeTransactionId));
        if (isFinalOutgoing(after.state)) finished += 1;
        else if (after.attempts > 0) failed += 1;
      } catch (error) {
        failed += 1;
        this.logger.warn({ homeTransactionId: payment.homeTransactionId, state: payment.state, code: errorCodeOf(error) }, 'outgoing recovery attempt failed');
      }
    }, stop);
    if (left > 0 && stop?.aborted === true) {
      // Given back, so that the next start or another replica takes them at once.
      await this.store.releaseClaims(claimed.slice(claimed.length - left).map((payment) => payment.homeTransactionId), leaseUntil);
      this.logger.info({ left }, 'outgoing recovery pass ended by the stop; the items left are given back');
    }
    else if (left > 0) this.logger.warn({ left, leaseMs: this.settings.leaseMs }, 'outgoing recovery pass outlasted its lease; the items left go to the next pass');
    return { claimed: claimed.length, finished, failed };
  }

  /** One step on a payment, from its current stored state. */
  private async recover(homeTransactionId: string): Promise<Payment> {
    const payment = await this.settlement.reread(homeTransactionId);
    switch (payment.state) {
      case 'INITIATING':
        return this.interruptedInitiation(payment);
      case 'COLLECTING':
      case 'AWAITING_DEBIT':
        return this.askInstitution(payment);
      case 'ACCEPTING': {
        // The accept was sent, or was about to be, by a process that is gone: only the switch knows.
        const confirming = await this.settlement.move(payment, ['ACCEPTING'], 'CONFIRMING', { lastError: 'accept interrupted; asking the switch' });
        // Claimed only once ACCEPTING is older than the switch's limit: the accept is lost if the switch still waits.
        return confirming.state === 'CONFIRMING' ? this.settlement.confirm(confirming, { acceptLost: true }) : confirming;
      }
      case 'CONFIRMING': {
        // The accept (sent just before the payment entered CONFIRMING) has had all the time the
        // switch may take on it: a switch still waiting for the acceptance never received it.
        const confirmingSinceMs = this.clock.now().getTime() - Date.parse(payment.updatedAt);
        return this.settlement.confirm(payment, { acceptLost: confirmingSinceMs >= this.settings.transferTimeoutMs + 5_000 });
      }
      case 'REFUNDING':
        return this.settlement.refund(payment);
      case 'QUOTED':
      case 'COMPLETED':
      case 'REFUNDED':
      case 'ABORTED':
      case 'FAILED':
        return payment;
    }
  }

  /**
   * An initiation cut off by a crash: whether the switch created a transfer is unknown, and it
   * cannot be asked without the transferId. No money has moved and nobody will accept the
   * switch's transfer, which its own timeout aborts, so the payment ends as failed.
   */
  private async interruptedInitiation(payment: Payment): Promise<Payment> {
    if (this.outgoing.isInitiating(payment.homeTransactionId)) return payment;
    const error = new ConnectorError('SdkTimeout', 'initiation interrupted; no money moved, start again with a new homeTransactionId');
    return this.settlement.move(payment, ['INITIATING'], 'FAILED', { errorName: error.errorName, errorMessage: error.message, lastError: error.message });
  }

  /** No callback in time (or a collection cut off): the institution's status of the debit decides. */
  private async askInstitution(payment: Payment): Promise<Payment> {
    if (payment.transferId === null) return payment;
    let status;
    try {
      status = await this.coreBanking.transactionStatus(payment.transferId);
    } catch (error) {
      return this.settlement.recordFailure(payment, error);
    }
    this.logger.info({ transferId: payment.transferId, state: payment.state, institutionStatus: status }, 'asked the institution about the debit');
    if (status === 'not-found' && payment.state === 'COLLECTING') return this.collectAgain(payment);
    return this.settlement.applyDebitStatus(payment, status);
  }

  /** The prompt never reached the institution: prompt again while the quote holds, else abort. */
  private async collectAgain(payment: Payment): Promise<Payment> {
    const expired = payment.quoteExpiration === null || this.clock.now().toISOString() >= payment.quoteExpiration;
    if (expired) {
      const error = new ConnectorError('QuoteExpired', `the quote expired at ${payment.quoteExpiration ?? 'unknown'} before the debit; nothing was debited`);
      return this.settlement.abort(payment, ['COLLECTING'], error, { acceptQuote: false });
    }
    return (await this.settlement.collect(payment, { repeat: true, held: true })).payment;
  }
}
