import { errorCodeOf } from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { InboundStore, TransferRecord } from '../ports/store.js';
import type { SwitchConnector } from '../ports/switch-connector.js';
import type { IncomingPayments } from './incoming-payments.js';
import type { InboundSettlement } from './inbound-settlement.js';
import { withAuditCause } from '../audit/audit-cause.js';

export interface RecoverySettings {
  readonly batchSize: number;
  /** A reservation with no notification after this long is looked up at the switch. */
  readonly reservationQueryAfterMs: number;
  /** Intents (COMMITTING, RELEASING) untouched this long are taken over from a crashed request. */
  readonly intentStaleAfterMs: number;
  readonly leaseMs: number;
}

export interface RecoveryReport {
  readonly claimed: number;
  readonly finished: number;
  readonly failed: number;
}

/**
 * The items of a pass are worked one after the other under one lease. Once the lease is over
 * another replica may claim them, so the pass takes no further item then: the ones left wait for
 * the next pass, of this replica or another. A stop (the signal) also ends the pass between two
 * items, the one under way finished: the caller gives the items left back (their claims released),
 * for the next start or another replica. Answers how many were left, the last of `items`.
 */
export async function workWithinLease<T>(
  items: readonly T[],
  leaseUntil: string,
  clock: Clock,
  work: (item: T) => Promise<void>,
  stop?: AbortSignal,
): Promise<number> {
  for (const [index, item] of items.entries()) {
    if (stop?.aborted === true || clock.now().toISOString() >= leaseUntil) return items.length - index;
    await work(item);
  }
  return 0;
}

/**
 * Finishes incoming transfers that a crash, an institution outage or a lost notification left
 * unfinished. Credits and releases are retried with backoff. A reservation is never released
 * on a timer alone: the switch is asked, and only its explicit answer decides.
 */
export class InboundRecovery {
  constructor(
    private readonly store: InboundStore,
    private readonly incoming: IncomingPayments,
    private readonly settlement: InboundSettlement,
    private readonly switchConnector: SwitchConnector,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: RecoverySettings,
  ) {}

  /** One pass; every change it makes is audited with the cause `recovery`. A stop ends it between two items. */
  runOnce(stop?: AbortSignal): Promise<RecoveryReport> {
    return withAuditCause({ cause: 'recovery' }, () => this.#pass(stop));
  }

  async #pass(stop: AbortSignal | undefined): Promise<RecoveryReport> {
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + this.settings.leaseMs).toISOString();
    const intents = await this.store.claimDueTransfers({
      states: ['COMMITTING', 'RELEASING'],
      now: now.toISOString(),
      staleBefore: new Date(now.getTime() - this.settings.intentStaleAfterMs).toISOString(),
      leaseUntil,
      limit: this.settings.batchSize,
    });
    const unnotified = await this.store.claimDueTransfers({
      states: ['RECEIVED', 'RESERVED'],
      now: now.toISOString(),
      staleBefore: new Date(now.getTime() - this.settings.reservationQueryAfterMs).toISOString(),
      leaseUntil,
      limit: this.settings.batchSize,
    });
    let finished = 0;
    let failed = 0;
    const claimed = [...intents, ...unnotified];
    const left = await workWithinLease(claimed, leaseUntil, this.clock, async (transfer) => {
      try {
        if (await this.recover(transfer)) finished += 1;
      } catch (error) {
        failed += 1;
        this.logger.warn({ transferId: transfer.transferId, state: transfer.state, code: errorCodeOf(error) }, 'recovery attempt failed');
      }
    }, stop);
    if (left > 0 && stop?.aborted === true) {
      // Given back, so that the next start or another replica takes them at once.
      await this.store.releaseTransferClaims(claimed.slice(claimed.length - left).map((transfer) => transfer.transferId), leaseUntil);
      this.logger.info({ left }, 'recovery pass ended by the stop; the items left are given back');
    }
    else if (left > 0) this.logger.warn({ left, leaseMs: this.settings.leaseMs }, 'recovery pass outlasted its lease; the items left go to the next pass');
    return { claimed: intents.length + unnotified.length, finished, failed };
  }

  /** Returns true when the transfer reached a final state. */
  private async recover(transfer: TransferRecord): Promise<boolean> {
    switch (transfer.state) {
      case 'COMMITTING':
        await this.settlement.commit(transfer);
        return true;
      case 'RELEASING':
        await this.settlement.release(transfer);
        return true;
      case 'RECEIVED':
      case 'RESERVED':
        return this.askSwitch(transfer);
      case 'REJECTED':
      case 'COMMITTED':
      case 'ABORTED':
        return true;
    }
  }

  private async askSwitch(transfer: TransferRecord): Promise<boolean> {
    let answer;
    try {
      answer = await this.switchConnector.getTransfer(transfer.transferId);
    } catch (error) {
      await this.settlement.recordFailure(transfer, error);
      throw error;
    }
    this.logger.info({ transferId: transfer.transferId, state: transfer.state, switchState: answer.currentState }, 'asked switch about unnotified transfer');
    switch (answer.currentState) {
      case 'COMPLETED':
        await this.incoming.finishCommit(transfer, 'COMPLETED');
        return true;
      case 'ABORTED':
        await this.incoming.finishRelease(transfer, 'ABORTED');
        return true;
      case 'NOT_AT_HUB':
        // The hub has no such transfer: it will never commit one it never prepared.
        await this.incoming.finishRelease(transfer, 'ABORTED');
        return true;
      case 'UNKNOWN':
      case 'ERROR_OCCURRED':
      case 'WAITING_FOR_PARTY_ACCEPTANCE':
      case 'WAITING_FOR_QUOTE_ACCEPTANCE':
      case 'WAITING_FOR_CONVERSION_ACCEPTANCE':
        await this.settlement.recordFailure(transfer, new Error(`switch says ${answer.currentState}`));
        return false;
    }
  }
}

/** Runs recovery on an interval until stopped; one pass at a time. */
export class RecoveryLoop {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #stop = new AbortController();

  constructor(
    /** One pass; it ends between two items once `stop` is aborted. */
    private readonly pass: (stop: AbortSignal) => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.#stopped = false;
    if (this.#stop.signal.aborted) this.#stop = new AbortController();
    this.#schedule();
  }

  /** Runs the next pass soon instead of at the end of the interval (an operator asked for a retry). */
  wake(): void {
    if (this.#stopped || this.#timer === undefined || this.#running !== undefined) return;
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  /** Whether a pass is under way. */
  get busy(): boolean {
    return this.#running !== undefined;
  }

  #schedule(delayMs: number = this.intervalMs): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.pass(this.#stop.signal)
        .then(() => undefined)
        .catch((error: unknown) => {
          this.logger.error({ code: errorCodeOf(error), err: error }, 'recovery pass failed');
        })
        .finally(() => {
          this.#running = undefined;
          this.#schedule();
        });
    }, delayMs);
    this.#timer.unref();
  }

  /** No further pass; the one under way ends after the item it is working on. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stop.abort();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#running;
  }
}
