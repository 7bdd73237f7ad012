import type { PartyId } from '../domain/identifiers.js';
import type { PostalAddress } from '../domain/iso20022.js';
import type { Money } from '../domain/money.js';

/**
 * The core-banking port: what the connector needs from an institution's own systems.
 * One adapter per institution implements it (src/adapters/core-banking/<institution>/).
 *
 * Rules every adapter follows:
 * - Every money-moving call carries `reference`, derived from a switch id, and is idempotent on
 *   it: the same call with the same reference moves money at most once and answers the same.
 * - Failures are ConnectorErrors: a business decline keeps its catalogue name (PartyNotFound,
 *   PayeeInsufficientLiquidity, PayerInsufficientFunds, ...); an outage is InstitutionUnavailable;
 *   a timeout is InstitutionTimeout, which means "outcome unknown", never "failed".
 * - An operation the institution cannot do throws NotSupported.
 * - Adapters keep no state of their own; state and retries belong to the aggregate and store.
 */

export type AccountStatus = 'active' | 'barred' | 'blocked' | 'closed';

export interface PartyDetails extends PartyId {
  /** The institution's own account reference; opaque to the connector. */
  readonly accountId: string;
  readonly currency: string;
  readonly status: AccountStatus;
  readonly displayName: string;
  readonly firstName?: string;
  readonly middleName?: string;
  readonly lastName?: string;
  /** YYYY-MM-DD */
  readonly dateOfBirth?: string;
  readonly postalAddress?: PostalAddress;
  /** ISO 3166 alpha-2 */
  readonly countryOfResidence?: string;
  readonly kycInformation?: string;
}

/** How the outgoing payment's customer debit happens (spec: Outgoing-payments rules 2 and 3). */
export type OutgoingFlow = 'bank' | 'mobile-operator';

export interface CoreBankingCapabilities {
  readonly outgoingFlow: OutgoingFlow;
  /** True when the institution holds funds natively; false when a reservation is a float check. */
  readonly nativeHolds: boolean;
  /**
   * True only when the institution's debit callbacks are signed evidence the connector can verify
   * (none of the adapters here). Otherwise a callback, even with the callback secret, is a hint:
   * the connector asks transactionStatus and the institution's answer decides.
   */
  readonly signedCallbacks?: boolean;
  /**
   * The longest one collect (payment prompt) can run, from the adapter's own timeouts: its
   * calls' connect and answer times summed. A COLLECTING payment younger than this may still
   * have its prompt on the way, so neither the recovery worker nor a retried accept on another
   * replica prompts again before then (two prompts could both be approved). Unset for an
   * institution answered in-process.
   */
  readonly collectTakesUpToMs?: number;
}

export interface ReserveRequest {
  readonly reference: string;
  readonly amount: Money;
  readonly payeeAccountId: string;
}

export interface CommitRequest {
  readonly reference: string;
  readonly amount: Money;
  readonly payeeAccountId: string;
}

export interface CollectRequest {
  readonly reference: string;
  readonly amount: Money;
  /** The payer's identifier at the institution (payer.payerId of the channel request). */
  readonly payerId: string;
  readonly description?: string;
}

export interface RefundRequest {
  readonly reference: string;
  /** Reference of the original debit or collection being refunded. */
  readonly originalReference: string;
  readonly amount: Money;
  readonly payerId: string;
}

/**
 * What the institution says of an identifier about to be registered with the platform: whose
 * account it is, the account's status, and whether the customer consented to the registration.
 */
export interface IdentifierEligibility {
  readonly accountId: string;
  readonly currency: string;
  readonly status: AccountStatus;
  readonly consent: 'given' | 'withdrawn';
}

/** Where an institution says a transaction of ours stands. Unknown is never guessed into another value. */
export type InstitutionTransactionStatus = 'succeeded' | 'failed' | 'pending' | 'unknown' | 'not-found';

export interface CollectResult {
  readonly status: InstitutionTransactionStatus;
  /** The institution's own id for the collection, for support staff. */
  readonly institutionReference?: string;
}

/**
 * Why an institution is not healthy, as /health and the start-up log report it:
 * - credentials-refused: it answers, but refuses our credentials (401/403, bad tenant);
 * - unreachable: no answer (refused connection, DNS, timeout);
 * - unavailable: it answers with 5xx or nonsense;
 * - misconfigured: it answers and accepts us, but a configured resource is missing or wrong
 *   (the float account, a payment type): no payment can succeed until the settings change.
 */
export type InstitutionHealthCause = 'credentials-refused' | 'unreachable' | 'unavailable' | 'misconfigured';

/** Thrown by `health` and `verifySetup` to say which cause; any other error counts as 'unavailable'. */
export class InstitutionHealthError extends Error {
  readonly healthCause: InstitutionHealthCause;

  constructor(healthCause: InstitutionHealthCause, detail: string, options?: { cause?: unknown }) {
    super(`${healthCause}: ${detail}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'InstitutionHealthError';
    this.healthCause = healthCause;
  }
}

/**
 * One movement of a customer's money the institution booked under one of our references, for
 * reconciliation: a credit (an incoming transfer's payee, a refund) or a debit (a collection).
 */
export interface InstitutionMovement {
  readonly reference: string;
  readonly direction: 'customer-credit' | 'customer-debit';
  readonly amount: Money;
  /** When the institution booked it (ISO 8601; a date-only institution gives midnight UTC). */
  readonly bookedAt: string;
  /** The institution's own id of the transaction, for support staff. */
  readonly institutionId: string;
}

/** A period of time, from `from` (included) to `to` (excluded), ISO 8601 instants. */
export interface Period {
  readonly from: string;
  readonly to: string;
}

export interface CoreBanking {
  readonly name: string;
  readonly capabilities: CoreBankingCapabilities;
  /** Party details by identifier; PartyNotFound when unknown. */
  lookupParty(id: PartyId): Promise<PartyDetails>;
  /** Reserves `amount` from the prefunded float for a payee; PayeeInsufficientLiquidity when short. */
  reserve(request: ReserveRequest): Promise<void>;
  /** Credits the payee from the reservation made under the same reference. */
  commit(request: CommitRequest): Promise<void>;
  /**
   * Releases the reservation under `reference`; a no-op when there is none or it is released.
   * `amount` is the reserved amount, for institutions that find a reservation by repeating its
   * idempotent hold (Fineract); others need only the reference.
   */
  release(reference: string, amount: Money): Promise<void>;
  /** Mobile-operator flow: asks the customer to approve a debit (payment prompt). */
  collect(request: CollectRequest): Promise<CollectResult>;
  /** Returns money debited from a customer for an outgoing payment that failed. */
  refund(request: RefundRequest): Promise<void>;
  /** Status of a collection, refund or other transaction by our reference. */
  transactionStatus(reference: string): Promise<InstitutionTransactionStatus>;
  /**
   * Identifier registration: confirms the identifier belongs to a customer of the institution,
   * with the account's status and the customer's consent. PartyNotFound when nobody has it.
   * Adapters whose institution cannot confirm consent leave it out: registration then answers
   * NotSupported naming the adapter.
   */
  identifierEligibility?(id: PartyId): Promise<IdentifierEligibility>;
  /**
   * Every identifier of the institution's customers with its eligibility, for reconciliation
   * with the registry. Adapters whose institution cannot list them leave it out.
   */
  listIdentifiers?(): Promise<ReadonlyArray<PartyId & IdentifierEligibility>>;
  /**
   * The movements the institution booked under our references in `period`, for reconciliation.
   * Adapters whose institution cannot list them leave it out: reconciliation then answers
   * NotSupported naming the adapter.
   */
  listMovements?(period: Period): Promise<readonly InstitutionMovement[]>;
  /** Throws when the institution cannot serve payments now; an InstitutionHealthError says why. */
  health(): Promise<void>;
  /**
   * Checks once, at start-up, that the settings name things the institution has (the float
   * account, payment types...). Throws InstitutionHealthError('misconfigured') when it answers
   * that they are wrong: the connector then refuses to start. Other failures are logged and the
   * connector starts (the institution may come back). Adapters with nothing to check leave it out.
   */
  verifySetup?(): Promise<void>;
  /** Releases connections; adapters that hold none may leave it out. Called once, at shutdown. */
  close?(): Promise<void>;
}
