import type { Selectable } from 'kysely';
import { AssertionFailed } from '../../../domain/errors.js';
import { queryTemplate, type Slots } from '../../store/query-template.js';
import { isPartyIdType, type PartyId } from '../../../domain/identifiers.js';
import { POSTAL_ADDRESS_KEYS, type PostalAddress } from '../../../domain/iso20022.js';
import { accountStatusOf } from './ledger-book.js';
import type { SandboxCustomer, SandboxCustomerProfile } from './sandbox-accounts.js';
import type { CustomersTable, SandboxDb } from './sandbox-schema.js';

/** Customer rows: the profile behind an identifier, stored next to its account. */

export async function insertCustomer(trx: SandboxDb, profile: SandboxCustomerProfile): Promise<void> {
  await trx
    .insertInto('sandbox_customers')
    .values({
      account_id: profile.accountId,
      id_type: profile.idType,
      id_value: profile.idValue,
      id_sub_value: profile.idSubValue ?? '',
      first_name: profile.firstName,
      middle_name: profile.middleName ?? null,
      last_name: profile.lastName,
      display_name: profile.displayName ?? null,
      date_of_birth: profile.dateOfBirth ?? null,
      postal_address: profile.postalAddress === undefined ? null : JSON.stringify(profile.postalAddress),
      country_of_residence: profile.countryOfResidence ?? null,
      kyc_information: profile.kycInformation ?? null,
    })
    .execute();
}

/** The customer behind an identifier; a sub-value must match exactly, absent matching absent. */
export async function findCustomer(db: SandboxDb, id: PartyId): Promise<SandboxCustomer | undefined> {
  const row = await FIND_CUSTOMER.first(db, { idType: id.idType, idValue: id.idValue, idSubValue: id.idSubValue ?? '' });
  return row === undefined ? undefined : customerFromRow(row);
}

const FIND_CUSTOMER = queryTemplate('find sandbox customer', (db: SandboxDb, p: Slots<{ idType: string; idValue: string; idSubValue: string }>) =>
  db
    .selectFrom('sandbox_customers')
    .innerJoin('sandbox_accounts', 'sandbox_accounts.account_id', 'sandbox_customers.account_id')
    .selectAll('sandbox_customers')
    .select(['sandbox_accounts.currency', 'sandbox_accounts.status'])
    .where('id_type', '=', p.idType)
    .where('id_value', '=', p.idValue)
    .where('id_sub_value', '=', p.idSubValue),
);

/** Every customer, in identifier order: for identifier reconciliation. */
export async function listCustomers(db: SandboxDb): Promise<SandboxCustomer[]> {
  const rows = await db
    .selectFrom('sandbox_customers')
    .innerJoin('sandbox_accounts', 'sandbox_accounts.account_id', 'sandbox_customers.account_id')
    .selectAll('sandbox_customers')
    .select(['sandbox_accounts.currency', 'sandbox_accounts.status'])
    .orderBy('id_type')
    .orderBy('id_value')
    .orderBy('id_sub_value')
    .execute();
  return rows.map(customerFromRow);
}

type CustomerRow = Selectable<CustomersTable> & { readonly currency: string; readonly status: string };

function customerFromRow(row: CustomerRow): SandboxCustomer {
  if (!isPartyIdType(row.id_type)) throw new AssertionFailed(`sandbox: stored identifier type "${row.id_type}"`);
  const optional: { -readonly [K in keyof SandboxCustomer]?: SandboxCustomer[K] } = {};
  if (row.id_sub_value !== '') optional.idSubValue = row.id_sub_value;
  if (row.middle_name !== null) optional.middleName = row.middle_name;
  if (row.display_name !== null) optional.displayName = row.display_name;
  if (row.date_of_birth !== null) optional.dateOfBirth = row.date_of_birth;
  if (row.postal_address !== null) optional.postalAddress = postalAddressOf(row.postal_address);
  if (row.country_of_residence !== null) optional.countryOfResidence = row.country_of_residence;
  if (row.kyc_information !== null) optional.kycInformation = row.kyc_information;
  return {
    ...optional,
    accountId: row.account_id,
    idType: row.id_type,
    idValue: row.id_value,
    firstName: row.first_name,
    lastName: row.last_name,
    status: accountStatusOf(row.status),
    currency: row.currency,
  };
}

/** Reads back the address JSON the ledger wrote, keeping only the ISO element names. */
function postalAddressOf(text: string): PostalAddress {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null) throw new AssertionFailed('sandbox: stored postal address is not an object');
  const stored: Record<string, unknown> = { ...parsed };
  const address: { -readonly [K in keyof PostalAddress]: PostalAddress[K] } = {};
  for (const [key] of POSTAL_ADDRESS_KEYS) {
    const value = stored[key];
    if (typeof value === 'string') address[key] = value;
  }
  return address;
}
