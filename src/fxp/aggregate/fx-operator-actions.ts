import { withAuditCause } from '../../audit/audit-cause.js';
import { ConnectorError } from '../../domain/errors.js';
import type { Clock } from '../../ports/clock.js';
import type { Logger } from '../../ports/logger.js';
import type { OperatorRequest } from '../../aggregate/operator-actions.js';
import type { ConversionRecord, ConversionState, FxStore } from '../store/fx-store.js';
import type { FxConversions } from './fx-conversions.js';

/** The hub's outcomes an operator can settle a conversion by; FAILED only clears a FAILED conversion's flag. */
export type FxOutcome = 'COMMITTED' | 'ABORTED' | 'FAILED';

const FINAL: readonly ConversionState[] = ['COMMITTED', 'ABORTED', 'FAILED'];

/**
 * What an FX provider's operator can do about a conversion the connector flagged, with the
 * evidence of the hub's outcome (its settlement report, the switch operator's word):
 * - RESERVED past its expiration (the hub's notification never came, and the switch connector
 *   has no way to ask for it), never before it, while the hub may still commit or abort it:
 *   COMMITTED commits it at the exchange (source credited, held target paid out), ABORTED
 *   releases the held target. Through the same compare-and-set
 *   transitions and exchange calls as the hub's own notification, so a notification that lands
 *   meanwhile either wins or finds the work done; the exchange's calls are idempotent on the
 *   commitRequestId.
 * - A final state flagged for a contradiction: resolved to that same state, the flag is cleared.
 * Every action runs with the operator's name, reason and evidence as the audit cause. Anything
 * not flagged, or still being worked on (RESERVING, COMMITTING, RELEASING), is refused (409).
 */
export class FxOperatorActions {
  constructor(
    private readonly deps: {
      readonly store: FxStore;
      readonly conversions: FxConversions;
      readonly clock: Clock;
      readonly logger: Logger;
    },
  ) {}

  async resolve(id: string, outcome: FxOutcome, request: OperatorRequest): Promise<ConversionRecord> {
    const cause = { cause: 'operator' as const, operator: request.operator, reason: `resolve: ${request.reason}`, ...(request.evidence === undefined ? {} : { evidence: request.evidence }) };
    const resolved = await withAuditCause(cause, () => this.deps.conversions.serially(id, () => this.#resolve(id, outcome)));
    this.deps.logger.warn({ operator: request.operator, action: 'resolve', commitRequestId: id, outcome, state: resolved.state }, 'operator action applied');
    return resolved;
  }

  async #resolve(id: string, outcome: FxOutcome): Promise<ConversionRecord> {
    const conversion = await this.#find(id);
    if (!conversion.needsAttention) throw refused(`the conversion is ${conversion.state} and not flagged: nothing to resolve`);
    if (FINAL.includes(conversion.state)) {
      if (conversion.state !== outcome) throw refused(`the conversion is ${conversion.state}: it can only be resolved to ${conversion.state} (clearing its flag), not ${outcome}`);
      await this.deps.store.note(id, conversion.state, { needsAttention: false, lastError: null });
      return this.#find(id);
    }
    if (conversion.state !== 'RESERVED') throw refused(`the conversion is ${conversion.state}: the recovery worker retries its step; resolve it once it ends`);
    if (outcome === 'FAILED') throw refused('a RESERVED conversion is resolved to COMMITTED or ABORTED, the hub\'s outcome');
    // Before its expiration the hub may still commit or abort it: an operator's ABORTED would
    // release a hold the hub can still commit. (A doubtful notification flags it early.)
    if (Date.parse(conversion.expiration) > this.deps.clock.now().getTime()) {
      throw refused(`the hub may still settle it until its expiration at ${conversion.expiration}: resolve it after that`);
    }
    // The exchange's failure leaves the intent recorded: the recovery worker retries it.
    const moved = outcome === 'COMMITTED' ? await this.deps.conversions.commitReserved(id) : await this.deps.conversions.releaseReserved(id);
    if (!moved) throw refused('the conversion moved on from RESERVED meanwhile; nothing changed, look again');
    return this.#find(id);
  }

  async #find(id: string): Promise<ConversionRecord> {
    const conversion = await this.deps.store.findConversion(id);
    if (conversion === undefined) throw new ConnectorError('FxConversionNotFound', `no conversion ${id}`);
    return conversion;
  }
}

function refused(detail: string): ConnectorError {
  return new ConnectorError('OperatorActionRefused', detail);
}
