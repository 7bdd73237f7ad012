import type { Clock } from '../../ports/clock.js';
import type { Logger } from '../../ports/logger.js';
import type { FxStore } from '../store/fx-store.js';
import type { FxConversions } from './fx-conversions.js';
import { withAuditCause } from '../../audit/audit-cause.js';

export interface FxRecoverySettings {
  readonly batchSize: number;
  readonly leaseMs: number;
}

/**
 * Finishes what a request could not: a commit or release cut off by an outage or a crash is
 * repeated (the exchange is idempotent on the reference). A reservation is not: RESERVED is an
 * answer to the switch connector's POST, and one the worker completed would reach nobody (the
 * hub, told of a failure, never commits or aborts it), so a RESERVING conversion is left to the
 * switch connector's retries until its expiration, then released: never answered RESERVED, the
 * hub cannot commit it. A RESERVED conversion past its expiration is never released on that timer alone:
 * once the hub has our RESERVED it may still commit, so it is flagged for an operator and kept
 * until the switch connector's notification says COMMITTED or ABORTED.
 */
export class FxRecovery {
  constructor(
    private readonly store: FxStore,
    private readonly conversions: FxConversions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: FxRecoverySettings,
  ) {}

  /**
   * One pass; every change it makes is audited with the cause `recovery`. A stop ends it between
   * two conversions, the one under way finished; the lease of each one left is given back.
   */
  runOnce(stop?: AbortSignal): Promise<{ claimed: number; finished: number; failed: number; flagged: number }> {
    return withAuditCause({ cause: 'recovery' }, () => this.#pass(stop));
  }

  async #pass(stop: AbortSignal | undefined): Promise<{ claimed: number; finished: number; failed: number; flagged: number }> {
    const due = await this.store.claimDue(this.settings.batchSize, this.settings.leaseMs);
    let finished = 0;
    let failed = 0;
    let flagged = 0;
    for (const [index, claimed] of due.entries()) {
      if (stop?.aborted === true) {
        for (const left of due.slice(index)) await this.store.releaseLease(left);
        this.logger.info({ left: due.length - index }, 'conversion recovery pass ended by the stop; the conversions left are given back');
        break;
      }
      const id = claimed.commitRequestId;
      try {
        const outcome = await this.conversions.serially(id, async () => {
          const conversion = await this.store.findConversion(id);
          if (conversion === undefined) return 'gone';
          const expired = Date.parse(conversion.expiration) <= this.clock.now().getTime();
          switch (conversion.state) {
            case 'RESERVING':
              if (!expired) {
                // Looked at again when it expires (a retried POST may reserve it meanwhile).
                await this.store.note(id, 'RESERVING', { nextAttemptAt: conversion.expiration });
                return 'gone';
              }
              {
                // Only if it is still RESERVING: a retried POST may have reserved it meanwhile.
                const releasing = await this.store.transition(id, ['RESERVING'], 'RELEASING', { lastError: 'never answered RESERVED before expiration' });
                if (releasing === undefined) return 'gone';
                await this.conversions.finishRelease(releasing);
                return 'finished';
              }
            case 'COMMITTING':
              await this.conversions.finishCommit(conversion);
              return 'finished';
            case 'RELEASING':
              await this.conversions.finishRelease(conversion);
              return 'finished';
            case 'RESERVED':
              if (!expired || conversion.needsAttention) return 'gone';
              this.logger.error({ commitRequestId: id, expiration: conversion.expiration }, 'conversion reserved past its expiration without a notification: kept held; an operator must confirm the hub\'s outcome');
              await this.store.note(id, 'RESERVED', { needsAttention: true, lastError: 'no commit or abort notification by the expiration; held until the hub\'s word arrives' });
              return 'flagged';
            default:
              return 'gone';
          }
        });
        if (outcome === 'finished') finished += 1;
        if (outcome === 'flagged') flagged += 1;
      } catch (error) {
        failed += 1;
        this.logger.warn({ commitRequestId: id, err: error }, 'conversion recovery attempt failed');
      } finally {
        await this.store.releaseLease(claimed);
      }
    }
    return { claimed: due.length, finished, failed, flagged };
  }
}
