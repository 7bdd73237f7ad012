import { ConnectorError, assert, errorCodeOf, isConnectorError } from '../domain/errors.js';
import { canTransition, type InboundTransferState } from '../domain/inbound-transfer.js';
import type { CoreBanking } from '../ports/core-banking.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { InboundStore, TransferChanges, TransferRecord } from '../ports/store.js';
import { contradictionNote, flagKept, isContradiction } from '../domain/contradiction.js';
import { heldWhile, type IntentHold } from '../shared/held-while.js';

export interface RetryPolicy {
  readonly baseBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly attentionAfterAttempts: number;
}

/**
 * The bookkeeping of the `attempts`-th failed attempt: the next one after a capped, doubling
 * backoff, flagged for manual attention once attempts run long or the institution declined.
 */
export function failedAttempt(
  retry: RetryPolicy,
  now: Date,
  attempts: number,
  error: unknown,
): { readonly attempts: number; readonly nextAttemptAt: string; readonly lastError: string; readonly needsAttention: boolean; readonly errorCode: string } {
  const backoffMs = Math.min(retry.baseBackoffMs * 2 ** Math.min(attempts - 1, 30), retry.maxBackoffMs);
  return {
    attempts,
    nextAttemptAt: new Date(now.getTime() + backoffMs).toISOString(),
    lastError: error instanceof Error ? error.message : 'unknown error',
    needsAttention: attempts >= retry.attentionAfterAttempts || isDecline(error),
    errorCode: errorCodeOf(error),
  };
}

/**
 * The money-moving steps of an incoming transfer, each a durable transition around one
 * institution call keyed by the transferId. Used by request handlers and the recovery worker
 * alike, so both finish work the same way.
 */
export class InboundSettlement {
  constructor(
    private readonly store: InboundStore,
    private readonly coreBanking: CoreBanking,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly retry: RetryPolicy,
    private readonly hold: IntentHold,
  ) {}

  /**
   * An intent's institution call, the intent held from the recovery workers while it runs, so that
   * a call slower than their staleness is not sent a second time beside itself.
   */
  private whileHeld(transfer: TransferRecord, call: () => Promise<void>): Promise<void> {
    const { transferId, state } = transfer;
    return heldWhile(
      this.hold.everyMs,
      () => this.store.holdTransfer(transferId, state, new Date(this.clock.now().getTime() + this.hold.forMs).toISOString()),
      (error) => this.logger.warn({ transferId, state, code: errorCodeOf(error) }, 'the hold on an intent could not be renewed; a recovery worker may take it over'),
      call,
    );
  }

  /** RECEIVED -> RESERVED (or REJECTED when the institution declines). */
  async reserve(transfer: TransferRecord): Promise<TransferRecord> {
    assert(transfer.state === 'RECEIVED', `reserve from ${transfer.state}`);
    try {
      await this.coreBanking.reserve({
        reference: transfer.transferId,
        amount: { amount: transfer.payeeReceiveAmount, currency: transfer.currency },
        payeeAccountId: transfer.payeeAccountId,
      });
    } catch (error) {
      if (isDecline(error)) {
        const rejected = await this.transition(transfer.transferId, ['RECEIVED'], 'REJECTED', {
          errorName: error.errorName,
          errorMessage: error.publicMessage,
        });
        this.logger.info({ transferId: transfer.transferId, code: error.code }, 'reservation declined');
        if (rejected === undefined) return this.reread(transfer.transferId);
        // An earlier attempt's outcome was never known (a timeout, a 5xx): it may have held the
        // amount before this one was declined (an institution that refuses a repeated reference,
        // say), and nothing else would ever give that hold back. Released by the transferId, which
        // releases nothing where nothing is held.
        if (transfer.attempts > 0) await this.releaseLateReservation(rejected, 'declined after an attempt whose outcome was unknown');
        throw error;
      }
      await this.recordFailure(transfer, error);
      throw error;
    }
    const reserved = await this.transition(transfer.transferId, ['RECEIVED'], 'RESERVED', {
      completedTimestamp: this.clock.now().toISOString(),
      attempts: 0,
      nextAttemptAt: null,
      lastError: null,
    });
    if (reserved !== undefined) return reserved;
    const current = await this.reread(transfer.transferId);
    if (current.state === 'RELEASING' || current.state === 'ABORTED') await this.releaseLateReservation(current, 'reservation landed after the abort');
    return current;
  }

  /**
   * A hold that may exist for a transfer that will not use it: an abort overtook the reservation
   * (its release may have found nothing to release while the reserve was still on its way), or a
   * decline followed an attempt whose outcome was unknown. It is given back by the transferId
   * (release is idempotent). If that fails, the transfer is flagged: float may still be held for it.
   */
  private async releaseLateReservation(transfer: TransferRecord, why: string): Promise<void> {
    try {
      await this.coreBanking.release(transfer.transferId, { amount: transfer.payeeReceiveAmount, currency: transfer.currency });
      this.logger.warn({ transferId: transfer.transferId, state: transfer.state }, `${why}; released again`);
    } catch (error) {
      const failed = { ...failedAttempt(this.retry, this.clock.now(), transfer.attempts + 1, error), needsAttention: true };
      await this.store.recordTransferAttempt(transfer.transferId, transfer.state, failed);
      this.logger.error({ transferId: transfer.transferId, state: transfer.state, code: errorCodeOf(error) }, `${why}, and the hold could not be released; release it by hand`);
    }
  }

  /** COMMITTING -> COMMITTED: credits the payee from the reservation. */
  async commit(transfer: TransferRecord): Promise<TransferRecord> {
    assert(transfer.state === 'COMMITTING', `commit from ${transfer.state}`);
    try {
      await this.whileHeld(transfer, () =>
        this.coreBanking.commit({
          reference: transfer.transferId,
          amount: { amount: transfer.payeeReceiveAmount, currency: transfer.currency },
          payeeAccountId: transfer.payeeAccountId,
        }),
      );
    } catch (error) {
      await this.recordFailure(transfer, error);
      throw error;
    }
    const committed = await this.transition(transfer.transferId, ['COMMITTING'], 'COMMITTED', { attempts: 0, nextAttemptAt: null, ...flagKept(transfer), keepContradiction: true });
    this.logger.info({ transferId: transfer.transferId, state: 'COMMITTED' }, 'payee credited');
    return committed ?? this.reread(transfer.transferId);
  }

  /** RELEASING -> ABORTED: returns the reservation to the float. */
  async release(transfer: TransferRecord): Promise<TransferRecord> {
    assert(transfer.state === 'RELEASING', `release from ${transfer.state}`);
    try {
      await this.whileHeld(transfer, () => this.coreBanking.release(transfer.transferId, { amount: transfer.payeeReceiveAmount, currency: transfer.currency }));
    } catch (error) {
      await this.recordFailure(transfer, error);
      throw error;
    }
    const aborted = await this.transition(transfer.transferId, ['RELEASING'], 'ABORTED', { attempts: 0, nextAttemptAt: null, ...flagKept(transfer), keepContradiction: true });
    this.logger.info({ transferId: transfer.transferId, state: 'ABORTED' }, 'reservation released');
    return aborted ?? this.reread(transfer.transferId);
  }

  /** Moves to an intent state (COMMITTING or RELEASING) from the states that lead there. */
  async intend(
    transfer: TransferRecord,
    from: readonly InboundTransferState[],
    to: 'COMMITTING' | 'RELEASING',
    notifiedState: string,
  ): Promise<TransferRecord> {
    const moved = await this.transition(transfer.transferId, from, to, { notifiedState });
    return moved ?? this.reread(transfer.transferId);
  }

  /** The same by id, without a record read first: undefined when the transfer was not in `from`. */
  tryIntend(transferId: string, from: InboundTransferState, to: 'COMMITTING' | 'RELEASING', notifiedState: string): Promise<TransferRecord | undefined> {
    return this.transition(transferId, [from], to, { notifiedState });
  }

  /** Schedules the next attempt with capped exponential backoff; flags long-failing work. */
  async recordFailure(transfer: TransferRecord, error: unknown): Promise<void> {
    const attempt = failedAttempt(this.retry, this.clock.now(), transfer.attempts + 1, error);
    // A contradiction the switch reported stays the transfer's flag and its last error.
    const failed = isContradiction(transfer.lastError) ? { ...attempt, lastError: transfer.lastError, needsAttention: true } : attempt;
    const bindings = { transferId: transfer.transferId, state: transfer.state, attempts: failed.attempts, code: errorCodeOf(error) };
    if (!(await this.store.recordTransferAttempt(transfer.transferId, transfer.state, { ...failed, keepContradiction: true }))) {
      // Another request or worker moved the transfer on meanwhile: its bookkeeping stands.
      this.logger.info(bindings, 'institution call failed after the transfer moved on; nothing recorded');
      return;
    }
    if (failed.needsAttention) this.logger.error(bindings, 'transfer needs manual attention; still retrying');
    else this.logger.warn(bindings, 'institution call failed; will retry');
  }

  /**
   * A notification whose word is doubtful moved nothing: the transfer is flagged for an operator
   * and made due at once, so the recovery worker asks the switch connector for the truth. A
   * transfer already finishing or finished is left as it is.
   */
  async flagDoubtfulNotification(transfer: TransferRecord, reason: string): Promise<void> {
    const bindings = { transferId: transfer.transferId, state: transfer.state, reason };
    if (transfer.state !== 'RECEIVED' && transfer.state !== 'RESERVED') {
      this.logger.warn(bindings, 'doubtful notification for a transfer already moving on; nothing changed');
      return;
    }
    const flagged = await this.store.recordTransferAttempt(transfer.transferId, transfer.state, {
      nextAttemptAt: this.clock.now().toISOString(),
      lastError: `doubtful notification: ${reason}`.slice(0, 256),
      needsAttention: true,
    });
    this.logger.error({ ...bindings, flagged }, 'doubtful notification: nothing moved; the switch connector will be asked');
  }

  /**
   * The switch reported a final outcome the transfer's own outcome contradicts (completed for a
   * transfer released or being released, aborted for one credited or being credited): no money
   * moves, but the payee and the hub's settlement now disagree, which only an operator can settle.
   * Flagged (needsAttention, the contradiction in lastError) and logged at error level, once; the
   * flag outlives the step's failed attempts and its end (flagKept), until an operator clears it.
   */
  async flagContradiction(transfer: TransferRecord, notifiedState: string): Promise<void> {
    const lastError = contradictionNote(notifiedState, 'transfer', transfer.state);
    const bindings = { transferId: transfer.transferId, state: transfer.state, notifiedState };
    if (transfer.needsAttention && transfer.lastError === lastError) return;
    const flagged = await this.store.recordTransferAttempt(transfer.transferId, transfer.state, { lastError, needsAttention: true });
    this.logger.error({ ...bindings, flagged }, `transfer needs manual attention: ${lastError}`);
  }

  /** A compare-and-set transition the state machine (src/domain/inbound-transfer.ts) allows. */
  private transition(
    transferId: string,
    from: readonly InboundTransferState[],
    to: InboundTransferState,
    changes: TransferChanges,
  ): Promise<TransferRecord | undefined> {
    assert(from.every((state) => canTransition(state, to)), `transfer ${transferId}: ${from.join('|')} -> ${to} is not a transition`);
    return this.store.transitionTransfer(transferId, from, to, changes);
  }

  async reread(transferId: string): Promise<TransferRecord> {
    const transfer = await this.store.findTransfer(transferId);
    assert(transfer !== undefined, `transfer ${transferId} vanished`);
    return transfer;
  }
}

/** A business decline (4xx class) as opposed to an outage or an unknown outcome. */
export function isDecline(error: unknown): error is ConnectorError {
  return isConnectorError(error) && (error.category === 'rejected' || error.category === 'invalid' || error.category === 'not-found' || error.category === 'conflict');
}
