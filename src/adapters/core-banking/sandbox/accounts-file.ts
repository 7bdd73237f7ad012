import { isCurrencyCode } from '../../../domain/currencies.js';
import { ConnectorError } from '../../../domain/errors.js';
import { identifierFormatProblem, isPartyIdType } from '../../../domain/identifiers.js';
import { POSTAL_ADDRESS_KEYS, type PostalAddress } from '../../../domain/iso20022.js';
import { fitsMinorUnits, isAmount } from '../../../domain/money.js';
import type { AccountStatus } from '../../../ports/core-banking.js';
import type { SandboxAccounts, SandboxCustomerSeed } from './sandbox-accounts.js';

/**
 * Reads a sandbox accounts file (format in README.md). Every problem is listed at once, with
 * where it is, so whoever edits the file fixes it in one pass; unknown fields are problems too,
 * since a misspelt optional field would otherwise vanish without a word.
 */
export function parseSandboxAccountsFile(text: string): SandboxAccounts {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConnectorError('MalformedSyntax', 'the sandbox accounts file is not JSON', { cause: error });
  }
  const problems: string[] = [];
  const draft = readDraft(value, problems);
  if (draft !== undefined) problems.push(...crossProblems(draft));
  const accounts = draft === undefined ? undefined : complete(draft);
  if (accounts === undefined || problems.length > 0) {
    throw new ConnectorError('ValidationFailed', `the sandbox accounts file has ${problems.length} problem(s): ${problems.join('; ')}`);
  }
  return accounts;
}

/** Checks what holds across fields (uniqueness, amounts in the currency, identifier formats). */
export function sandboxAccountsProblems(accounts: SandboxAccounts): string[] {
  return crossProblems({ currency: accounts.currency, floatAccountId: accounts.float.accountId, floatBalance: accounts.float.balance, customers: accounts.customers });
}

/** The file as read so far: fields that failed to read are undefined, customers keep their index. */
interface Draft {
  readonly currency: string | undefined;
  readonly floatAccountId: string | undefined;
  readonly floatBalance: string | undefined;
  readonly customers: ReadonlyArray<SandboxCustomerSeed | undefined>;
}

function complete(draft: Draft): SandboxAccounts | undefined {
  const { currency, floatAccountId, floatBalance } = draft;
  const customers = draft.customers.filter((customer): customer is SandboxCustomerSeed => customer !== undefined);
  if (currency === undefined || floatAccountId === undefined || floatBalance === undefined || customers.length !== draft.customers.length) {
    return undefined;
  }
  return { currency, float: { accountId: floatAccountId, balance: floatBalance }, customers };
}

function crossProblems(draft: Draft): string[] {
  const problems: string[] = [];
  const currency = draft.currency;
  const currencyKnown = currency !== undefined && isCurrencyCode(currency);
  if (currency !== undefined && !currencyKnown) problems.push(`currency: "${currency}" is not an ISO 4217 code`);
  const amountProblem = (where: string, amount: string): void => {
    if (!isAmount(amount)) problems.push(`${where}: "${amount}" is not an amount (digits, optional decimals, no leading zeros)`);
    else if (currencyKnown && !fitsMinorUnits(amount, currency)) problems.push(`${where}: "${amount}" has more decimals than ${currency} allows`);
  };
  if (draft.floatBalance !== undefined) amountProblem('float.balance', draft.floatBalance);
  const accountIds = new Set([draft.floatAccountId]);
  const identifiers = new Set<string>();
  draft.customers.forEach((customer, index) => {
    if (customer === undefined) return;
    const where = `customers[${index}]`;
    amountProblem(`${where}.balance`, customer.balance);
    if (accountIds.has(customer.accountId)) problems.push(`${where}.accountId: "${customer.accountId}" is taken by another account`);
    accountIds.add(customer.accountId);
    const identifier = `${customer.idType}/${customer.idValue}/${customer.idSubValue ?? ''}`;
    if (identifiers.has(identifier)) problems.push(`${where}: identifier ${identifier} is used twice`);
    identifiers.add(identifier);
    // The institution's own records: a PERSONAL_ID needs its kind, a DEVICE its reference.
    const format = identifierFormatProblem(customer.idType, customer.idValue, customer.idSubValue, true);
    if (format !== null) problems.push(`${where}.idValue: ${format}`);
  });
  problems.push(...payerIdClashes(draft.customers));
  return problems;
}

/**
 * A payerId is an account id or an identifier value without sub-value (payer-lookup.ts): one
 * customer's account id that is another's identifier value would name both, so is refused here
 * rather than at the first payment.
 */
function payerIdClashes(customers: ReadonlyArray<SandboxCustomerSeed | undefined>): string[] {
  const byValue = new Map<string, number[]>();
  customers.forEach((customer, index) => {
    if (customer === undefined || customer.idSubValue !== undefined) return;
    byValue.set(customer.idValue, [...(byValue.get(customer.idValue) ?? []), index]);
  });
  const problems: string[] = [];
  customers.forEach((owner, ownerIndex) => {
    if (owner === undefined) return;
    for (const otherIndex of byValue.get(owner.accountId) ?? []) {
      const other = customers[otherIndex];
      if (other === undefined || other.accountId === owner.accountId) continue;
      problems.push(
        `customers[${ownerIndex}].accountId: "${owner.accountId}" is also the ${other.idType} identifier value of customers[${otherIndex}] (account "${other.accountId}"), so a payerId "${owner.accountId}" would name two customers`,
      );
    }
  });
  return problems;
}

type Fields = Record<string, unknown>;

const TOP_KEYS = ['currency', 'float', 'customers'];
const FLOAT_KEYS = ['accountId', 'balance'];
const CUSTOMER_KEYS = [
  'accountId', 'idType', 'idValue', 'idSubValue', 'firstName', 'middleName', 'lastName', 'displayName',
  'dateOfBirth', 'status', 'balance', 'postalAddress', 'countryOfResidence', 'kycInformation',
];
const STATUSES: readonly AccountStatus[] = ['active', 'barred', 'blocked', 'closed'];

function readDraft(value: unknown, problems: string[]): Draft | undefined {
  const top = asFields(value, '(top level)', TOP_KEYS, problems);
  if (top === undefined) return undefined;
  const currency = required(top, 'currency', 'currency', 3, problems);
  const floatFields = asFields(top['float'], 'float', FLOAT_KEYS, problems);
  const floatAccountId = floatFields && required(floatFields, 'accountId', 'float.accountId', 128, problems);
  const floatBalance = floatFields && required(floatFields, 'balance', 'float.balance', 40, problems);
  const list: unknown = top['customers'];
  if (!Array.isArray(list)) problems.push('customers: must be an array');
  const items: unknown[] = Array.isArray(list) ? list : [];
  const customers = items.map((item, index) => readCustomer(item, `customers[${index}]`, problems));
  return { currency, floatAccountId, floatBalance, customers };
}

function readCustomer(value: unknown, where: string, problems: string[]): SandboxCustomerSeed | undefined {
  const fields = asFields(value, where, CUSTOMER_KEYS, problems);
  if (fields === undefined) return undefined;
  const before = problems.length;
  const idType = required(fields, 'idType', `${where}.idType`, 32, problems);
  if (idType !== undefined && !isPartyIdType(idType)) problems.push(`${where}.idType: "${idType}" is not an identifier type`);
  const status = required(fields, 'status', `${where}.status`, 16, problems);
  const knownStatus = STATUSES.find((candidate) => candidate === status);
  if (status !== undefined && knownStatus === undefined) problems.push(`${where}.status: must be one of ${STATUSES.join(', ')}`);
  const texts = {
    accountId: required(fields, 'accountId', `${where}.accountId`, 128, problems),
    idValue: required(fields, 'idValue', `${where}.idValue`, 128, problems),
    firstName: required(fields, 'firstName', `${where}.firstName`, 128, problems),
    lastName: required(fields, 'lastName', `${where}.lastName`, 128, problems),
    balance: required(fields, 'balance', `${where}.balance`, 40, problems),
  };
  const optional = readOptionalCustomerFields(fields, where, problems);
  if (problems.length > before || idType === undefined || !isPartyIdType(idType) || knownStatus === undefined) return undefined;
  const { accountId, idValue, firstName, lastName, balance } = texts;
  if (accountId === undefined || idValue === undefined || firstName === undefined || lastName === undefined || balance === undefined) return undefined;
  return { accountId, idType, idValue, firstName, lastName, status: knownStatus, balance, ...optional };
}

type OptionalCustomerFields = Pick<
  SandboxCustomerSeed,
  'idSubValue' | 'middleName' | 'displayName' | 'dateOfBirth' | 'postalAddress' | 'countryOfResidence' | 'kycInformation'
>;

function readOptionalCustomerFields(fields: Fields, where: string, problems: string[]): OptionalCustomerFields {
  const result: { -readonly [K in keyof OptionalCustomerFields]: OptionalCustomerFields[K] } = {};
  const idSubValue = optionalText(fields, 'idSubValue', `${where}.idSubValue`, 128, problems);
  if (idSubValue !== undefined) result.idSubValue = idSubValue;
  const middleName = optionalText(fields, 'middleName', `${where}.middleName`, 128, problems);
  if (middleName !== undefined) result.middleName = middleName;
  const displayName = optionalText(fields, 'displayName', `${where}.displayName`, 128, problems);
  if (displayName !== undefined) result.displayName = displayName;
  const dateOfBirth = optionalText(fields, 'dateOfBirth', `${where}.dateOfBirth`, 10, problems);
  if (dateOfBirth !== undefined && !isCalendarDate(dateOfBirth)) problems.push(`${where}.dateOfBirth: must be a date YYYY-MM-DD`);
  else if (dateOfBirth !== undefined) result.dateOfBirth = dateOfBirth;
  const country = optionalText(fields, 'countryOfResidence', `${where}.countryOfResidence`, 2, problems);
  if (country !== undefined && !/^[A-Z]{2}$/.test(country)) problems.push(`${where}.countryOfResidence: must be an ISO 3166 alpha-2 code`);
  else if (country !== undefined) result.countryOfResidence = country;
  const kyc = optionalText(fields, 'kycInformation', `${where}.kycInformation`, 2048, problems);
  if (kyc !== undefined) result.kycInformation = kyc;
  const address = readPostalAddress(fields['postalAddress'], `${where}.postalAddress`, problems);
  if (address !== undefined) result.postalAddress = address;
  return result;
}

/** ISO 20022 limits the longest address element (AdrLine) to 70 characters. */
const ADDRESS_ELEMENT_MAX = 70;

function readPostalAddress(value: unknown, where: string, problems: string[]): PostalAddress | undefined {
  if (value === undefined) return undefined;
  const keys = POSTAL_ADDRESS_KEYS.map(([key]) => key);
  const fields = asFields(value, where, keys, problems);
  if (fields === undefined) return undefined;
  const address: { -readonly [K in keyof PostalAddress]: PostalAddress[K] } = {};
  for (const key of keys) {
    const element = optionalText(fields, key, `${where}.${key}`, ADDRESS_ELEMENT_MAX, problems);
    if (element !== undefined) address[key] = element;
  }
  if (Object.keys(address).length === 0) problems.push(`${where}: must have at least one element`);
  return address;
}

function asFields(value: unknown, where: string, allowed: readonly string[], problems: string[]): Fields | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${where}: must be an object`);
    return undefined;
  }
  const fields: Fields = { ...value };
  for (const key of Object.keys(fields)) if (!allowed.includes(key)) problems.push(`${where}: unknown field "${key}"`);
  return fields;
}

function required(fields: Fields, key: string, where: string, maxLength: number, problems: string[]): string | undefined {
  if (fields[key] === undefined) {
    problems.push(`${where}: is required`);
    return undefined;
  }
  return optionalText(fields, key, where, maxLength, problems);
}

function optionalText(fields: Fields, key: string, where: string, maxLength: number, problems: string[]): string | undefined {
  const value = fields[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    problems.push(`${where}: must be a string of 1-${maxLength} characters`);
    return undefined;
  }
  return value;
}

function isCalendarDate(text: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00.000Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}
