import { ConnectorError } from '../../../domain/errors.js';
import type { PartyId } from '../../../domain/identifiers.js';
import type {
  IdentifierEligibility,
  InstitutionMovement,
  Period,
  CollectRequest,
  CollectResult,
  CommitRequest,
  CoreBanking,
  CoreBankingCapabilities,
  InstitutionTransactionStatus,
  OutgoingFlow,
  PartyDetails,
  RefundRequest,
  ReserveRequest,
} from '../../../ports/core-banking.js';
import type { SandboxLedger } from './ledger.js';
import type { SandboxCustomer } from './sandbox-accounts.js';

export interface SandboxCoreBankingOptions {
  /** 'bank' (default): the debit happens at once; 'mobile-operator': the customer approves on the phone. */
  readonly outgoingFlow?: OutgoingFlow;
}

/**
 * The embedded default institution: the core-banking port over the sandbox ledger, which holds
 * funds natively. It keeps no state of its own; everything lives in the ledger's tables.
 */
export class SandboxCoreBanking implements CoreBanking {
  readonly name = 'sandbox';
  readonly capabilities: CoreBankingCapabilities;
  readonly #ledger: SandboxLedger;

  constructor(ledger: SandboxLedger, options: SandboxCoreBankingOptions = {}) {
    this.#ledger = ledger;
    this.capabilities = { outgoingFlow: options.outgoingFlow ?? 'bank', nativeHolds: true };
  }

  async lookupParty(id: PartyId): Promise<PartyDetails> {
    const customer = await this.#ledger.findCustomer(id);
    if (customer === undefined) throw new ConnectorError('PartyNotFound');
    return partyDetailsOf(customer);
  }

  reserve(request: ReserveRequest): Promise<void> {
    return this.#ledger.reserve(request.reference, request.amount, request.payeeAccountId);
  }

  commit(request: CommitRequest): Promise<void> {
    return this.#ledger.commit(request.reference, request.amount, request.payeeAccountId);
  }

  release(reference: string): Promise<void> {
    return this.#ledger.release(reference);
  }

  async collect(request: CollectRequest): Promise<CollectResult> {
    const pending = this.capabilities.outgoingFlow === 'mobile-operator';
    const outcome = await this.#ledger.collect(request.reference, request.payerId, request.amount, { pending });
    return { status: outcome.state, institutionReference: `sandbox-collection-${request.reference}` };
  }

  refund(request: RefundRequest): Promise<void> {
    return this.#ledger.refund(request.reference, request.originalReference, request.amount, request.payerId);
  }

  transactionStatus(reference: string): Promise<InstitutionTransactionStatus> {
    return this.#ledger.transactionStatus(reference);
  }

  async identifierEligibility(id: PartyId): Promise<IdentifierEligibility> {
    const customer = await this.#ledger.findCustomer(id);
    if (customer === undefined) throw new ConnectorError('PartyNotFound');
    return { accountId: customer.accountId, currency: customer.currency, status: customer.status, consent: (await this.#ledger.consents(id)) ? 'given' : 'withdrawn' };
  }

  async listIdentifiers(): Promise<Array<PartyId & IdentifierEligibility>> {
    const customers = await this.#ledger.listCustomers();
    return Promise.all(
      customers.map(async (customer) => {
        const id: PartyId = { idType: customer.idType, idValue: customer.idValue, ...(customer.idSubValue === undefined ? {} : { idSubValue: customer.idSubValue }) };
        return { ...id, accountId: customer.accountId, currency: customer.currency, status: customer.status, consent: (await this.#ledger.consents(id)) ? ('given' as const) : ('withdrawn' as const) };
      }),
    );
  }

  async listMovements(period: Period): Promise<InstitutionMovement[]> {
    const movements = await this.#ledger.movements(period.from, period.to);
    return movements.map((movement) => ({
      reference: movement.reference,
      direction: movement.direction,
      amount: { amount: movement.amount, currency: movement.currency },
      bookedAt: movement.bookedAt,
      institutionId: movement.institutionId,
    }));
  }

  health(): Promise<void> {
    return this.#ledger.health();
  }
}

/** The party as the port describes it; a missing display name is "first last", as on the phone. */
export function partyDetailsOf(customer: SandboxCustomer): PartyDetails {
  return {
    idType: customer.idType,
    idValue: customer.idValue,
    ...(customer.idSubValue === undefined ? {} : { idSubValue: customer.idSubValue }),
    accountId: customer.accountId,
    currency: customer.currency,
    status: customer.status,
    displayName: customer.displayName ?? `${customer.firstName} ${customer.lastName}`,
    firstName: customer.firstName,
    ...(customer.middleName === undefined ? {} : { middleName: customer.middleName }),
    lastName: customer.lastName,
    ...(customer.dateOfBirth === undefined ? {} : { dateOfBirth: customer.dateOfBirth }),
    ...(customer.postalAddress === undefined ? {} : { postalAddress: customer.postalAddress }),
    ...(customer.countryOfResidence === undefined ? {} : { countryOfResidence: customer.countryOfResidence }),
    ...(customer.kycInformation === undefined ? {} : { kycInformation: customer.kycInformation }),
  };
}
