import type { PartyIdType } from '../../../domain/identifiers.js';
import type { PostalAddress } from '../../../domain/iso20022.js';
import type { AccountStatus } from '../../../ports/core-banking.js';

/**
 * What the sandbox institution starts with: one currency, its float and its customers. Read
 * from demo-accounts.ts or from the JSON file named by SANDBOX_ACCOUNTS_FILE (see README.md).
 * Amounts are decimal strings in the currency.
 */
export interface SandboxAccounts {
  readonly currency: string;
  readonly float: { readonly accountId: string; readonly balance: string };
  readonly customers: readonly SandboxCustomerSeed[];
}

export interface SandboxCustomerProfile {
  readonly accountId: string;
  readonly idType: PartyIdType;
  readonly idValue: string;
  readonly idSubValue?: string;
  readonly firstName: string;
  readonly middleName?: string;
  readonly lastName: string;
  readonly displayName?: string;
  /** YYYY-MM-DD */
  readonly dateOfBirth?: string;
  readonly status: AccountStatus;
  readonly postalAddress?: PostalAddress;
  /** ISO 3166 alpha-2 */
  readonly countryOfResidence?: string;
  readonly kycInformation?: string;
}

export interface SandboxCustomerSeed extends SandboxCustomerProfile {
  /** Opening balance, funded from outside the books. */
  readonly balance: string;
}

/** A customer as the ledger knows it: the profile and its account's currency. */
export interface SandboxCustomer extends SandboxCustomerProfile {
  readonly currency: string;
}
