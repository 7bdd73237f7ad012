import { withAuditCause, type AuditCause } from '../audit/audit-cause.js';
import { ConnectorError, assert } from '../domain/errors.js';
import { canTransition, type InboundTransferState } from '../domain/inbound-transfer.js';
import { canTransitionOutgoing, type OutgoingState } from '../domain/outgoing-payment.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { OutgoingPaymentRecord, OutgoingStore } from '../ports/outgoing-store.js';
import type { InboundStore, TransferRecord } from '../ports/store.js';
import type { SwitchConnector } from '../ports/switch-connector.js';
import type { OutgoingPayments } from './outgoing-payments.js';
import { refundHeldBack, type OutgoingSettlement } from './outgoing-settlement.js';

export type OperatorSubject = 'incoming_transfer' | 'outgoing_payment';

/** Who acts and why; the reason (and, for a manual resolution, the evidence) goes into the audit trail. */
export interface OperatorRequest {
  readonly operator: string;
  readonly reason: string;
  readonly evidence?: string;
}

/** States the recovery worker can be asked to try again now. ACCEPTING and INITIATING are left out: their call may still be running. */
const RETRYABLE_INCOMING: readonly InboundTransferState[] = ['RECEIVED', 'RESERVED', 'COMMITTING', 'RELEASING'];
const RETRYABLE_OUTGOING: readonly OutgoingState[] = ['COLLECTING', 'AWAITING_DEBIT', 'CONFIRMING', 'REFUNDING'];

/**
 * What an operator may record as done when the institution confirms it out of band, by state:
 * the credit or the release of an incoming transfer, the refund of an outgoing payment, or a
 * collection the institution says never debited anyone. A CONFIRMING payment, whose outcome only
 * the hub knows, is settled by applySwitchOutcome while the switch answers, and by
 * #resolveConfirming on the hub's word when it cannot.
 */
const MANUAL_OUTCOMES_INCOMING: Readonly<Partial<Record<InboundTransferState, InboundTransferState>>> = {
  COMMITTING: 'COMMITTED',
  RELEASING: 'ABORTED',
};
const MANUAL_OUTCOMES_OUTGOING: Readonly<Partial<Record<OutgoingState, OutgoingState>>> = {
  REFUNDING: 'REFUNDED',
  COLLECTING: 'ABORTED',
  AWAITING_DEBIT: 'ABORTED',
};
/**
 * Final states an item may still be flagged in (a contradicting notification, a debit confirmed
 * after an abort, a hold that could not be released): resolved to the same state, the flag is
 * cleared, with the operator's evidence that it was settled out of band; nothing else changes.
 */
const FINAL_INCOMING: readonly InboundTransferState[] = ['COMMITTED', 'ABORTED', 'REJECTED'];
const FINAL_OUTGOING: readonly OutgoingState[] = ['COMPLETED', 'REFUNDED', 'ABORTED', 'FAILED'];

export interface OperatorActionsDeps {
  readonly inboundStore: InboundStore;
  readonly outgoingStore: OutgoingStore;
  readonly outgoing: OutgoingPayments;
  readonly outgoingSettlement: OutgoingSettlement;
  readonly switchConnector: SwitchConnector;
  readonly clock: Clock;
  readonly logger: Logger;
  /** An accept younger than this may still be running: its payment is not taken over. */
  readonly acceptRunsForMs: number;
  /** Asks the recovery loops for a pass soon. */
  readonly wakeRecovery: () => void;
  /** The embedded sandbox institution's payment prompts (CBS_ADAPTER=sandbox only). */
  readonly prompts?: PaymentPrompts | undefined;
}

/**
 * Payment prompts an operator may answer for the customer: the sandbox's, whose customers have
 * no phone. TransferNotFound for no collection under the reference, TransferStateConflict once
 * it was answered or expired.
 */
export interface PaymentPrompts {
  answerPrompt(reference: string, approved: boolean): Promise<{ readonly state: 'pending' | 'succeeded' | 'failed' }>;
}

/**
 * The operators' actions. Each runs with the operator's name and reason as the audit cause, and
 * through the same compare-and-set transitions as the connector's own work: an operator who
 * races the recovery worker (or another operator) either wins the compare-and-set or is told
 * the record moved on. No action calls the institution to move money a second time.
 */
export class OperatorActions {
  constructor(private readonly deps: OperatorActionsDeps) {}

  /** Makes a stuck item due now; the recovery worker takes it on its next pass, which is asked for at once. */
  async retryNow(subject: OperatorSubject, id: string, request: OperatorRequest): Promise<{ readonly state: string }> {
    const now = this.deps.clock.now().toISOString();
    return this.#as(request, 'retry', subject, id, async () => {
      if (subject === 'incoming_transfer') {
        const transfer = await this.#transfer(id);
        if (!RETRYABLE_INCOMING.includes(transfer.state)) throw refused(`an incoming transfer in ${transfer.state} has nothing to retry`);
        if (!(await this.deps.inboundStore.scheduleTransferNow(id, transfer.state, now))) throw busy(await this.#transfer(id), transfer.state);
        this.deps.wakeRecovery();
        return { state: transfer.state };
      }
      const payment = await this.#payment(id);
      if (!RETRYABLE_OUTGOING.includes(payment.state)) throw refused(`an outgoing payment in ${payment.state} has nothing to retry`);
      if (!(await this.deps.outgoingStore.scheduleNow(payment.homeTransactionId, payment.state, now))) throw busy(await this.#payment(id), payment.state);
      this.deps.wakeRecovery();
      return { state: payment.state };
    });
  }

  /**
   * An outgoing payment whose accept was answered with no outcome: the switch is asked now, and
   * its answer is applied only if it is the final state the operator expects (COMPLETED, or
   * ABORTED, which refunds the customer once, under the refund's own reference). A switch that
   * answers otherwise, or not at all, changes nothing: an ACCEPTING payment is taken over (moved
   * to CONFIRMING) only once the switch has reported the expected outcome.
   */
  async applySwitchOutcome(id: string, expected: 'COMPLETED' | 'ABORTED', request: OperatorRequest): Promise<OutgoingPaymentRecord> {
    const found = await this.#payment(id);
    return this.#as(request, 'apply-switch-outcome', 'outgoing_payment', id, () =>
      this.deps.outgoing.exclusive(found.homeTransactionId, async () => {
        const payment = await this.#payment(id);
        if (payment.state === 'ACCEPTING') {
          const runningMs = this.deps.clock.now().getTime() - Date.parse(payment.updatedAt);
          if (runningMs < this.deps.acceptRunsForMs) throw refused(`the accept was sent ${Math.floor(runningMs / 1000)} s ago and may still be running; try again after ${Math.ceil(this.deps.acceptRunsForMs / 1000)} s`);
        } else if (payment.state !== 'CONFIRMING') throw refused(`the payment is ${payment.state}; only ACCEPTING or CONFIRMING waits for the switch's outcome`);
        assert(payment.transferId !== null, `payment ${payment.homeTransactionId} in ${payment.state} without a transferId`);
        const status = await this.deps.switchConnector.getTransfer(payment.transferId);
        const reported = status.currentState ?? 'UNSPECIFIED';
        if (reported !== expected) throw refused(`the switch reports ${reported}, not ${expected}; nothing changed`);
        let confirming = payment;
        if (payment.state === 'ACCEPTING') {
          // Compare-and-set: an accept that finished meanwhile (on any replica) wins.
          const moved = await this.deps.outgoingSettlement.tryMove(payment, ['ACCEPTING'], 'CONFIRMING', { lastError: `accept taken over by an operator; the switch reports ${reported}` });
          if (moved === undefined) throw busy(await this.#payment(id), 'ACCEPTING');
          confirming = moved;
        }
        // Applies the switch's final state. ABORTED starts the refund and tries it once, here; the
        // recovery worker retries a failed one.
        return this.deps.outgoingSettlement.confirm(confirming);
      }),
    );
  }

  /**
   * Records an outcome the institution confirmed out of band (evidence required): only for a
   * flagged item in a state listed above, and only while no worker holds it.
   */
  async resolve(subject: OperatorSubject, id: string, outcome: string, request: OperatorRequest): Promise<TransferRecord | OutgoingPaymentRecord> {
    if (request.evidence === undefined || request.evidence.trim() === '') throw new ConnectorError('MissingElement', 'evidence is required to resolve an item by hand (what the institution confirmed, and its reference)');
    const now = this.deps.clock.now().toISOString();
    const changes: OperatorChanges = { attempts: 0, nextAttemptAt: null, lastError: null, needsAttention: false, errorCode: 'RESOLVED_BY_OPERATOR' };
    return this.#as(request, 'resolve', subject, id, async () => {
      if (subject === 'incoming_transfer') {
        const transfer = await this.#transfer(id);
        if (FINAL_INCOMING.includes(transfer.state) && outcome === transfer.state) {
          if (!transfer.needsAttention) throw refused(`the transfer is ${transfer.state} and not flagged; there is nothing to resolve`);
          if (!(await this.deps.inboundStore.recordTransferAttempt(id, transfer.state, changes))) throw busy(await this.#transfer(id), transfer.state);
          return this.#transfer(id);
        }
        const allowed = MANUAL_OUTCOMES_INCOMING[transfer.state];
        if (allowed === undefined || allowed !== outcome) throw refused(manualRefusal(transfer.state, outcome, allowed));
        if (!transfer.needsAttention) throw refused('only an item flagged for attention is resolved by hand; the connector is still finishing this one');
        assert(canTransition(transfer.state, allowed), `${transfer.state} -> ${allowed} is not a transition`);
        const moved = await this.deps.inboundStore.transitionTransfer(id, [transfer.state], allowed, changes, { now });
        if (moved === undefined) throw busy(await this.#transfer(id), transfer.state);
        return moved;
      }
      const payment = await this.#payment(id);
      if (FINAL_OUTGOING.includes(payment.state) && outcome === payment.state) {
        if (!payment.needsAttention) throw refused(`the payment is ${payment.state} and not flagged; there is nothing to resolve`);
        const cleared = await this.deps.outgoing.exclusive(payment.homeTransactionId, () => this.deps.outgoingStore.recordAttempt(payment.homeTransactionId, payment.state, changes));
        if (!cleared) throw busy(await this.#payment(id), payment.state);
        return this.#payment(id);
      }
      if (payment.state === 'CONFIRMING') return this.#resolveConfirming(payment, outcome, changes, now);
      if (payment.state === 'REFUNDING' && outcome === 'COMPLETED') return this.#resolveHeldRefund(payment, changes, now);
      const allowed = MANUAL_OUTCOMES_OUTGOING[payment.state];
      if (allowed === undefined || allowed !== outcome) throw refused(manualRefusal(payment.state, outcome, allowed));
      if (!payment.needsAttention) throw refused('only an item flagged for attention is resolved by hand; the connector is still finishing this one');
      assert(canTransitionOutgoing(payment.state, allowed), `${payment.state} -> ${allowed} is not a transition`);
      const moved = await this.deps.outgoing.exclusive(payment.homeTransactionId, () =>
        this.deps.outgoingStore.transition(payment.homeTransactionId, [payment.state], allowed, changes, { now }),
      );
      if (moved === undefined) throw busy(await this.#payment(id), payment.state);
      return moved;
    });
  }

  /**
   * A flagged CONFIRMING payment the switch cannot settle (its GET /transfers fails, or never
   * gives a final state), resolved on the hub's own word, which the operator took out of band (the
   * hub operator's portal or settlement report; the evidence names it). COMPLETED records the
   * transfer done and moves no money. ABORTED moves the payment to REFUNDING and pays the customer
   * back through the institution under the refund's own reference, once: tried at once, then by
   * the recovery worker. Both under the same compare-and-set as every other move, so a worker or
   * the switch's late answer that moved the payment first wins, and the operator is told.
   */
  async #resolveConfirming(payment: OutgoingPaymentRecord, outcome: string, changes: OperatorChanges, now: string): Promise<OutgoingPaymentRecord> {
    if (outcome !== 'COMPLETED' && outcome !== 'ABORTED') {
      throw refused(`a CONFIRMING payment is resolved by hand to the hub's outcome, COMPLETED or ABORTED, not ${outcome}`);
    }
    if (!payment.needsAttention) throw refused('only an item flagged for attention is resolved by hand; the connector is still finishing this one');
    const home = payment.homeTransactionId;
    return this.deps.outgoing.exclusive(home, async () => {
      if (outcome === 'COMPLETED') {
        const completed = await this.deps.outgoingStore.transition(home, ['CONFIRMING'], 'COMPLETED', changes, { now });
        if (completed === undefined) throw busy(await this.#payment(home), 'CONFIRMING');
        return completed;
      }
      const refunding = await this.deps.outgoingStore.transition(
        home,
        ['CONFIRMING'],
        'REFUNDING',
        {
          ...changes,
          // What the channel is told, as when the switch itself reports the abort.
          errorName: 'SdkClientError',
          errorMessage: 'the switch did not complete the transfer (the hub aborted it, on an operator\'s word); the customer is refunded',
          lastError: 'an operator recorded the hub\'s abort',
        },
        { now },
      );
      if (refunding === undefined) throw busy(await this.#payment(home), 'CONFIRMING');
      return this.deps.outgoingSettlement.refund(refunding);
    });
  }

  /**
   * A refund the switch's later COMPLETED held back (outgoing-settlement.ts, refundHeldBack):
   * the transfer completed, so the payment ends COMPLETED and the customer is not refunded; the
   * evidence says that the institution shows no refund under the refund's reference (one that
   * was paid after all is resolved to REFUNDED instead). Refused for any other REFUNDING payment,
   * whose refund the switch's own word called for.
   */
  async #resolveHeldRefund(payment: OutgoingPaymentRecord, changes: OperatorChanges, now: string): Promise<OutgoingPaymentRecord> {
    if (!refundHeldBack(payment)) throw refused('a REFUNDING payment is resolved by hand to REFUNDED; COMPLETED only for a refund held back because the switch reported the transfer completed');
    const home = payment.homeTransactionId;
    const completed = await this.deps.outgoing.exclusive(home, () => this.deps.outgoingStore.transition(home, ['REFUNDING'], 'COMPLETED', { ...changes, switchState: 'COMPLETED' }, { now }));
    if (completed === undefined) throw busy(await this.#payment(home), 'REFUNDING');
    return completed;
  }

  /** Whether payment prompts can be answered here (the sandbox institution). */
  get answersPrompts(): boolean {
    return this.deps.prompts !== undefined;
  }

  /**
   * Answers a sandbox payment prompt for the customer (`reference` is the transferId the
   * collection was made under), then moves the payment waiting for it on the institution's word
   * at once, as a confirmed callback would: approved and debited -> accepted with the switch;
   * declined (or short of funds by then) -> ABORTED, nothing debited. A payment not waiting (yet)
   * is left to the callback or the recovery worker, which ask the institution.
   */
  async answerPrompt(reference: string, outcome: 'approve' | 'decline', request: OperatorRequest): Promise<{ readonly collection: string; readonly payment: OutgoingPaymentRecord | null }> {
    const prompts = this.deps.prompts;
    if (prompts === undefined) throw new ConnectorError('UnknownRoute', 'payment prompts are answered only with the sandbox institution');
    return this.#as(request, `answer-prompt ${outcome}`, 'outgoing_payment', reference, async () => {
      const answered = await prompts.answerPrompt(reference, outcome === 'approve');
      const found = await this.deps.outgoingStore.findByTransferId(reference);
      if (found === undefined) return { collection: answered.state, payment: null };
      const payment = await this.deps.outgoing.exclusive(found.homeTransactionId, async () => {
        const current = await this.deps.outgoingSettlement.reread(found.homeTransactionId);
        if (current.state !== 'AWAITING_DEBIT') return current;
        return this.deps.outgoingSettlement.applyDebitStatus(current, answered.state);
      });
      return { collection: answered.state, payment: (await this.deps.outgoingStore.findByHomeTransactionId(payment.homeTransactionId)) ?? null };
    });
  }

  async #as<T>(request: OperatorRequest, action: string, subject: OperatorSubject, id: string, work: () => Promise<T>): Promise<T> {
    const cause: AuditCause = {
      cause: 'operator',
      operator: request.operator,
      reason: `${action}: ${request.reason}`,
      ...(request.evidence === undefined ? {} : { evidence: request.evidence }),
    };
    const result = await withAuditCause(cause, work);
    this.deps.logger.warn({ operator: request.operator, action, subject, id }, 'operator action applied');
    return result;
  }

  async #transfer(id: string): Promise<TransferRecord> {
    const transfer = await this.deps.inboundStore.findTransfer(id);
    if (transfer === undefined) throw new ConnectorError('TransferNotFound', `no incoming transfer ${id}`);
    return transfer;
  }

  async #payment(id: string): Promise<OutgoingPaymentRecord> {
    const payment = (await this.deps.outgoingStore.findByHomeTransactionId(id)) ?? (await this.deps.outgoingStore.findByTransferId(id));
    if (payment === undefined) throw new ConnectorError('TransferNotFound', `no outgoing payment ${id}`);
    return payment;
  }
}

/** What every manual resolution writes: the retry bookkeeping cleared, the flag down, the audit's code. */
interface OperatorChanges {
  readonly attempts: 0;
  readonly nextAttemptAt: null;
  readonly lastError: null;
  readonly needsAttention: false;
  readonly errorCode: 'RESOLVED_BY_OPERATOR';
}

function refused(detail: string): ConnectorError {
  return new ConnectorError('OperatorActionRefused', detail);
}

/** The compare-and-set lost: the record moved on, or a worker holds it right now. */
function busy(current: { readonly state: string }, expected: string): ConnectorError {
  if (current.state !== expected) return refused(`the item moved from ${expected} to ${current.state} meanwhile; nothing changed`);
  return refused(`the recovery worker is working on this item now; nothing changed, look again in a moment`);
}

function manualRefusal(state: string, outcome: string, allowed: string | undefined): string {
  if (allowed === undefined && (FINAL_INCOMING as readonly string[]).concat(FINAL_OUTGOING).includes(state)) return `an item in ${state} can only be resolved by hand to ${state} (clearing its flag), not ${outcome}`;
  if (allowed === undefined) return `an item in ${state} cannot be resolved by hand`;
  return `an item in ${state} can only be resolved by hand to ${allowed}, not ${outcome}`;
}
