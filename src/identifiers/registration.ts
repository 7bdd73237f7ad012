import { ConnectorError, isConnectorError } from '../domain/errors.js';
import { checkIdentifier, segmentWarning, type Segment } from '../domain/identifier-rules.js';
import { isPartyIdType } from '../domain/identifiers.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking } from '../ports/core-banking.js';
import type { Logger } from '../ports/logger.js';
import { platformKey, type PlatformAnswer, type SwitchConnector } from '../ports/switch-connector.js';
import { forEachConcurrently } from '../shared/bounded.js';
import { KeyedSerializer } from '../shared/keyed-serializer.js';
import type { Consent, IdentifierKey, IdentifierRecord, IdentifierStore } from './identifier-store.js';
import { withAuditCause } from '../audit/audit-cause.js';

/** How long a bulk job's identifiers wait for the job's own batches before the recovery pass may send them. */
const DEFERRED_MS = 300_000;
/** FSPIOP codes by which the platform refuses a removal because it holds no such identifier (generic ID not found, party not found). */
const NOT_HELD_CODES: ReadonlySet<string> = new Set(['3200', '3204']);
/** Identifiers of one batch settled (or their leases released) at once: their writes commit in groups. */
const SETTLE_CONCURRENCY = 32;

export interface RegistrationSettings {
  /** The segments the institution serves (IDENTIFIER_SEGMENTS): a type outside them is registered with a warning. */
  readonly segments: readonly Segment[];
  readonly baseBackoffMs: number;
  readonly maxBackoffMs: number;
  /** At most this many identifiers per POST /accounts, per currency (the switch connector's own batch limit). */
  readonly batchSize: number;
  /** How long one request's own platform call holds its identifier (the switch call's timeout and a margin). */
  readonly leaseMs: number;
}

/** An identifier as a caller names it, before its type's rule is applied. */
export interface IdentifierInput {
  readonly idType: string;
  readonly idValue: string;
  readonly idSubValue?: string;
}

/**
 * Opt-in and opt-out of customer identifiers with the platform (the switch connector's
 * POST /accounts and DELETE /accounts/...). An identifier is registered only when its type's
 * rule holds and the institution confirms it belongs to an active customer who consented; a
 * closed or barred account is opted out instead. Every step is recorded first, so a crash or a
 * platform outage leaves a REQUESTED or OPTING_OUT row that the recovery pass finishes, and a
 * repeat never registers or removes anything twice.
 */
export class IdentifierRegistration {
  /** Requests on one identifier take turns in this process; across replicas the registry's compare-and-set decides. */
  readonly #serial = new KeyedSerializer();

  constructor(
    private readonly store: IdentifierStore,
    private readonly coreBanking: CoreBanking,
    private readonly switchConnector: SwitchConnector,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: RegistrationSettings,
  ) {}

  /** The identifier in its type's normal form, or a ValidationFailed naming the rule broken. */
  parse(input: IdentifierInput): IdentifierKey {
    if (!isPartyIdType(input.idType)) throw new ConnectorError('ValidationFailed', `idType ${input.idType.slice(0, 32)} is not an identifier type`);
    const check = checkIdentifier(input.idType, input.idValue, input.idSubValue, true);
    if (!check.ok) throw new ConnectorError('ValidationFailed', `${input.idType} ${check.problem}`);
    return { idType: input.idType, idValue: check.value, ...(check.subValue === undefined ? {} : { idSubValue: check.subValue }) };
  }

  /**
   * Opt-in: records the request with its consent, confirms with the institution, then asks the
   * platform (unless `deferPlatform`, for bulk: the job sends its batches, sendJob). Answers the
   * record as it stands.
   */
  async register(input: IdentifierInput, consent: Consent, options: { readonly jobId?: string; readonly deferPlatform?: boolean } = {}): Promise<IdentifierRecord> {
    const key = this.parse(input);
    return this.#serial.run(platformKey(key), () => this.#register(key, consent, options));
  }

  async #register(key: IdentifierKey, consent: Consent, options: { readonly jobId?: string; readonly deferPlatform?: boolean }): Promise<IdentifierRecord> {
    const warning = segmentWarning(this.settings.segments, key.idType);
    if (warning !== undefined) this.logger.warn({ idType: key.idType }, `identifier registration: ${warning}`);
    const existing = await this.store.find(key);
    if (existing?.state === 'REGISTERED' || existing?.state === 'REQUESTED') return existing;
    // An opt-in now would be lost: the removal on its way settles the identifier DEREGISTERED.
    if (existing?.state === 'OPTING_OUT') {
      throw new ConnectorError('IdentifierOptOutPending', 'opt in again once the platform has confirmed its removal (DEREGISTERED)');
    }
    const eligibility = await this.#eligibility(key);
    if (eligibility.status !== 'active') throw new ConnectorError('PayerRejected', `the account is ${eligibility.status}: only active accounts are registered`);
    if (eligibility.consent !== 'given') throw new ConnectorError('PayerRejected', 'the customer has not consented to the registration');
    // A bulk job sends its own batches: the recovery pass takes its identifiers only if the job stops.
    const due = new Date(this.clock.now().getTime() + (options.deferPlatform === true ? DEFERRED_MS : 0)).toISOString();
    const changes = { accountId: eligibility.accountId, consent, jobId: options.jobId ?? null, nextAttemptAt: due, attempts: 0, platformCode: null, platformMessage: null, lastError: null };
    const inserted = existing === undefined ? await this.store.insert(key, eligibility.currency, 'REQUESTED', changes) : false;
    if (!inserted) {
      const moved = await this.store.transition(key, ['FAILED', 'DEREGISTERED', 'OPT_OUT_FAILED'], 'REQUESTED', changes);
      if (moved === undefined) return (await this.store.find(key)) ?? this.#vanished(key);
    }
    if (options.deferPlatform !== true) await this.#sendNow(key, 'REQUESTED');
    return (await this.store.find(key)) ?? this.#vanished(key);
  }

  /**
   * Sends one identifier's call at once, holding it meanwhile: a worker that holds it already
   * (a bulk batch, the recovery pass, another replica) makes the call instead.
   */
  async #sendNow(key: IdentifierKey, state: 'REQUESTED' | 'OPTING_OUT'): Promise<void> {
    const held = await this.store.lease(key, state, this.settings.leaseMs);
    if (held === undefined) return;
    try {
      await this.send([held], this.settings.leaseMs);
    } finally {
      await this.store.releaseLease(held);
    }
  }

  /** Opt-out: records it, then asks the platform to remove the identifier. */
  async deregister(input: IdentifierInput, consent: Consent, options: { readonly jobId?: string; readonly deferPlatform?: boolean } = {}): Promise<IdentifierRecord> {
    const key = this.parse(input);
    return this.#serial.run(platformKey(key), () => this.#deregister(key, consent, options));
  }

  async #deregister(key: IdentifierKey, consent: Consent, options: { readonly jobId?: string; readonly deferPlatform?: boolean }): Promise<IdentifierRecord> {
    const existing = await this.store.find(key);
    if (existing === undefined) throw new ConnectorError('PartyNotFound', 'this identifier is not in the registry');
    if (existing.state === 'DEREGISTERED' || existing.state === 'OPTING_OUT') return existing;
    if (existing.state === 'FAILED') {
      // The platform refused the registration: it holds nothing of ours to remove.
      const removed = await this.store.transition(key, ['FAILED'], 'DEREGISTERED', { consent, jobId: options.jobId ?? existing.jobId, platformCode: null, platformMessage: null, lastError: null });
      return removed ?? (await this.store.find(key)) ?? this.#vanished(key);
    }
    const now = this.clock.now().toISOString();
    // A registration under way (a bulk batch, the recovery pass, another replica) may land at the
    // platform after a removal sent now: the removal waits for it. Its holder sends the removal
    // once its own call is answered (send), or, should it die, the recovery pass once its lease lapses.
    const underWay = existing.leaseUntil > now;
    const due = underWay ? existing.leaseUntil : new Date(this.clock.now().getTime() + (options.deferPlatform === true ? DEFERRED_MS : 0)).toISOString();
    const moved = await this.store.transition(key, ['REGISTERED', 'REQUESTED', 'OPT_OUT_FAILED'], 'OPTING_OUT', { consent, jobId: options.jobId ?? existing.jobId, nextAttemptAt: due, attempts: 0, lastError: null });
    if (moved === undefined) return (await this.store.find(key)) ?? this.#vanished(key);
    if (options.deferPlatform !== true && !underWay) await this.#sendNow(key, 'OPTING_OUT');
    return (await this.store.find(key)) ?? this.#vanished(key);
  }

  async status(input: IdentifierInput): Promise<IdentifierRecord> {
    const key = this.parse(input);
    const found = await this.store.find(key);
    if (found === undefined) throw new ConnectorError('PartyNotFound', 'this identifier is not in the registry');
    return found;
  }

  /**
   * Sends the platform what `records` (held by the caller until their `leaseUntil`) ask for:
   * registrations in batches of at most batchSize per currency, removals one by one, each removal's
   * hold renewed for `leaseMs` just before it is sent (a batch of removals takes longer than one
   * lease; one whose hold another worker took meanwhile is left to it). Each answer moves each
   * record once (compare-and-set); an outage or an unknown outcome leaves them for a later attempt
   * (a repeated registration is an update at the platform, a repeated removal a no-op). A
   * registration answered after its identifier was opted out is removed again at once.
   */
  async send(records: readonly IdentifierRecord[], leaseMs: number, stop?: AbortSignal): Promise<number> {
    let moved = 0;
    const removals = records.filter((candidate) => candidate.state === 'OPTING_OUT');
    const registrations = records.filter((record) => record.state === 'REQUESTED');
    const byCurrency = new Map<string, IdentifierRecord[]>();
    for (const record of registrations) {
      const group = byCurrency.get(record.currency);
      if (group === undefined) byCurrency.set(record.currency, [record]);
      else group.push(record);
    }
    for (const group of byCurrency.values()) {
      for (let start = 0; start < group.length; start += this.settings.batchSize) {
        // A stop ends the work between two platform calls; what is left is due at the next pass.
        if (stop?.aborted === true) return moved;
        const batch = group.slice(start, start + this.settings.batchSize);
        const answer = await this.#platformCall('registerIdentifiers')(batch.map((record) => ({ ...keyOf(record), currency: record.currency })));
        // Each identifier's own compare-and-set, several in flight so that they commit in groups.
        await forEachConcurrently(batch, SETTLE_CONCURRENCY, async (record) => {
          const settled = await this.#settle(record, answer, 'REQUESTED', 'REGISTERED');
          if (settled === 'moved') moved += 1;
          if (settled !== 'left') return;
          const removal = await this.#optedOutMeanwhile(record, answer);
          if (removal !== undefined) removals.push(removal);
        });
      }
    }
    for (const record of removals) {
      if (stop?.aborted === true) return moved;
      const held = await this.store.lease(record, 'OPTING_OUT', leaseMs, record.leaseUntil);
      if (held === undefined) continue;
      try {
        const answer = await this.#platformCall('deregisterIdentifier')(keyOf(held));
        if ((await this.#settle(held, answer, 'OPTING_OUT', 'DEREGISTERED')) === 'moved') moved += 1;
      } finally {
        await this.store.releaseLease(held);
      }
    }
    return moved;
  }

  /**
   * A registration whose identifier was opted out while the call was under way: the platform may
   * hold it now. An OPTING_OUT identifier is removed by this holder, now that its call is answered;
   * one removed meanwhile (its removal sent by another worker after this one's lease lapsed) is
   * opted out again, unless the platform refused the registration.
   */
  async #optedOutMeanwhile(record: IdentifierRecord, answer: PlatformAnswer): Promise<IdentifierRecord | undefined> {
    const now = await this.store.find(record);
    if (now?.state === 'OPTING_OUT') return { ...now, leaseUntil: record.leaseUntil };
    if (now?.state !== 'DEREGISTERED') return undefined;
    if (answer.outcome === 'answered' && answer.refusals.has(platformKey(record))) return undefined;
    const again = await this.store.transition(record, ['DEREGISTERED'], 'OPTING_OUT', { nextAttemptAt: this.clock.now().toISOString(), attempts: 0, lastError: null });
    return again === undefined ? undefined : { ...again, leaseUntil: record.leaseUntil };
  }

  /**
   * Moves the identifier as the platform answered: 'moved'; 'kept' in `from` when there was no
   * answer (retried later); 'left' when it had left `from` meanwhile.
   */
  async #settle(record: IdentifierRecord, answer: PlatformAnswer, from: 'REQUESTED' | 'OPTING_OUT', to: 'REGISTERED' | 'DEREGISTERED'): Promise<'moved' | 'kept' | 'left'> {
    if (answer.outcome !== 'answered') {
      const attempts = record.attempts + 1;
      const backoff = Math.min(this.settings.baseBackoffMs * 2 ** Math.min(attempts - 1, 20), this.settings.maxBackoffMs);
      const reason = answer.outcome === 'failed' ? `platform refused the call: HTTP ${answer.httpStatus} ${answer.message}` : `platform did not answer: ${answer.reason}`;
      const noted = await this.store.note(record, from, { attempts, nextAttemptAt: new Date(this.clock.now().getTime() + backoff).toISOString(), lastError: reason.slice(0, 500) });
      this.logger.warn({ idType: record.idType, state: from, attempts }, `identifier ${from === 'REQUESTED' ? 'registration' : 'removal'} not confirmed; retried later`);
      return noted ? 'kept' : 'left';
    }
    const refusal = answer.refusals.get(platformKey(record));
    let moved;
    if (refusal === undefined) {
      moved = await this.store.transition(record, [from], to, { platformCode: null, platformMessage: null, lastError: null });
    } else if (from === 'REQUESTED') {
      moved = await this.store.transition(record, [from], 'FAILED', { platformCode: refusal.statusCode, platformMessage: refusal.message });
    } else {
      // The platform not holding the identifier is what the removal asked for; any other refusal
      // may leave it registered there, which the customer asked not to be: a failure to report.
      const removed = NOT_HELD_CODES.has(refusal.statusCode);
      moved = await this.store.transition(record, [from], removed ? 'DEREGISTERED' : 'OPT_OUT_FAILED', { platformCode: refusal.statusCode, platformMessage: refusal.message, lastError: null });
    }
    return moved === undefined ? 'left' : 'moved';
  }

  /** The switch connector's registration call, or NotSupported when its client has none. */
  #platformCall<K extends 'registerIdentifiers' | 'deregisterIdentifier'>(operation: K): NonNullable<SwitchConnector[K]> {
    const call = this.switchConnector[operation];
    if (call === undefined) throw new ConnectorError('NotSupported', `the switch connector client has no ${operation}`);
    return call.bind(this.switchConnector) as NonNullable<SwitchConnector[K]>;
  }

  async #eligibility(key: IdentifierKey): Promise<{ accountId: string; currency: string; status: string; consent: string }> {
    if (this.coreBanking.identifierEligibility === undefined) {
      throw new ConnectorError('NotSupported', `CBS_ADAPTER=${this.coreBanking.name} cannot confirm that a customer consented to the registration of an identifier`);
    }
    try {
      return await this.coreBanking.identifierEligibility(key);
    } catch (error) {
      if (isConnectorError(error, 'PartyNotFound')) throw new ConnectorError('PartyNotFound', 'no customer of the institution has this identifier');
      throw error;
    }
  }

  #vanished(key: IdentifierKey): never {
    throw new ConnectorError('Internal', `identifier ${key.idType} vanished from the registry`);
  }

  /**
   * Compares the registry with the institution's records: identifiers registered (or being
   * registered) whose account is no longer active, whose customer withdrew consent or is gone;
   * and identifiers of active, consenting customers that were never registered. An identifier
   * its customer opted out of is left alone.
   */
  async reconcile(): Promise<Reconciliation> {
    if (this.coreBanking.listIdentifiers === undefined) {
      throw new ConnectorError('NotSupported', `CBS_ADAPTER=${this.coreBanking.name} cannot list its customers' identifiers for reconciliation`);
    }
    // The institution's records in the registry's normal form (an e-mail domain lower-cased, an
    // IBAN without spaces): compared as written, a registered identifier was removed and registered
    // again at every run, and one its customer opted out of registered again. A record that breaks
    // its type's rule is reported, never registered.
    const known = new Map<string, IdentifierKey & { readonly status: string; readonly consent: string }>();
    const invalidAtInstitution: Array<IdentifierKey & { readonly problem: string }> = [];
    for (const entry of await this.coreBanking.listIdentifiers()) {
      try {
        const key = this.parse(entry);
        known.set(platformKey(key), { ...key, status: entry.status, consent: entry.consent });
      } catch (error) {
        if (!isConnectorError(error, 'ValidationFailed')) throw error;
        invalidAtInstitution.push({ ...keyOf(entry), problem: error.message });
      }
    }
    const inRegistry = new Set<string>();
    const registeredButIneligible: Array<IdentifierKey & { readonly state: string; readonly reason: string }> = [];
    let after: IdentifierKey | undefined;
    for (;;) {
      const page = await this.store.inKeyOrder(500, after);
      if (page.length === 0) break;
      for (const record of page) {
        inRegistry.add(platformKey(record));
        if (record.state !== 'REGISTERED' && record.state !== 'REQUESTED') continue;
        const entry = known.get(platformKey(record));
        const reason = entry === undefined ? 'no customer has it any more' : entry.status !== 'active' ? `the account is ${entry.status}` : entry.consent !== 'given' ? 'the customer withdrew consent' : undefined;
        if (reason !== undefined) registeredButIneligible.push({ ...keyOf(record), state: record.state, reason });
      }
      after = page[page.length - 1];
    }
    const eligibleNotRegistered = [...known.values()]
      .filter((entry) => entry.status === 'active' && entry.consent === 'given' && !inRegistry.has(platformKey(entry)))
      .map((entry) => keyOf(entry));
    return { registeredButIneligible, eligibleNotRegistered, invalidAtInstitution };
  }

  /** Applies a reconciliation: opts out what must not stay registered, registers what should be. */
  async fixReconciliation(): Promise<{ optedOut: number; registered: number; problems: string[] }> {
    const found = await this.reconcile();
    const consent: Consent = { by: 'institution records', at: this.clock.now().toISOString(), channel: 'reconciliation' };
    const problems: string[] = [];
    let optedOut = 0;
    let registered = 0;
    for (const item of found.registeredButIneligible) {
      try {
        const record = await this.deregister(item, consent);
        if (record.state === 'DEREGISTERED') optedOut += 1;
      } catch (error) {
        problems.push(`${identifierName(item)}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    for (const item of found.eligibleNotRegistered) {
      try {
        const record = await this.register(item, consent);
        if (record.state === 'REGISTERED') registered += 1;
      } catch (error) {
        problems.push(`${identifierName(item)}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return { optedOut, registered, problems };
  }

  /** Sends a job's waiting identifiers, a leased batch at a time (never alongside the recovery pass). */
  async sendJob(jobId: string, leaseMs: number, stop?: AbortSignal): Promise<void> {
    for (;;) {
      if (stop?.aborted === true) return;
      const claimed = await this.store.claimJob(jobId, this.settings.batchSize, leaseMs);
      if (claimed.length === 0) return;
      let moved: number;
      try {
        moved = await this.send(claimed, leaseMs, stop);
      } finally {
        await this.#releaseLeases(claimed);
      }
      // A batch the platform did not answer stays waiting, with its backoff: leave it to the next pass.
      if (moved === 0) return;
    }
  }

  #releaseLeases(records: readonly IdentifierRecord[]): Promise<void> {
    return forEachConcurrently(records, SETTLE_CONCURRENCY, (record) => this.store.releaseLease(record));
  }

  /** The recovery pass: sends what is due (outages, crashes mid-batch), a batch at a time. */
  /** One pass; every change it makes is audited with the cause `recovery`. */
  runOnce(leaseMs: number, stop?: AbortSignal): Promise<{ claimed: number }> {
    return withAuditCause({ cause: 'recovery' }, () => this.#pass(leaseMs, stop));
  }

  async #pass(leaseMs: number, stop: AbortSignal | undefined): Promise<{ claimed: number }> {
    if (stop?.aborted === true) return { claimed: 0 };
    const due = await this.store.claimDue(this.settings.batchSize, leaseMs);
    try {
      if (due.length > 0) await this.send(due, leaseMs, stop);
    } finally {
      await this.#releaseLeases(due);
    }
    return { claimed: due.length };
  }
}

export interface Reconciliation {
  readonly registeredButIneligible: ReadonlyArray<IdentifierKey & { readonly state: string; readonly reason: string }>;
  readonly eligibleNotRegistered: readonly IdentifierKey[];
  /** The institution's records that break their type's rule (as it wrote them, with the rule broken): left for it to correct. */
  readonly invalidAtInstitution: ReadonlyArray<IdentifierKey & { readonly problem: string }>;
}

/** An identifier as people read it: `Type/ID[/SubId]`. */
function identifierName(id: IdentifierKey): string {
  return id.idSubValue === undefined ? `${id.idType}/${id.idValue}` : `${id.idType}/${id.idValue}/${id.idSubValue}`;
}

function keyOf(id: IdentifierKey): IdentifierKey {
  return { idType: id.idType, idValue: id.idValue, ...(id.idSubValue === undefined ? {} : { idSubValue: id.idSubValue }) };
}
