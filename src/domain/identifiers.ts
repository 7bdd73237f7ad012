import { checkIdentifier } from './identifier-rules.js';
/** Customer identifier types of the platform (spec: Customer identifiers). */
export const PARTY_ID_TYPES = [
  'MSISDN',
  'EMAIL',
  'PERSONAL_ID',
  'BUSINESS',
  'DEVICE',
  'ACCOUNT_ID',
  'IBAN',
  'ALIAS',
] as const;
export type PartyIdType = (typeof PARTY_ID_TYPES)[number];

export function isPartyIdType(value: string): value is PartyIdType {
  return (PARTY_ID_TYPES as readonly string[]).includes(value);
}

export interface PartyId {
  readonly idType: PartyIdType;
  readonly idValue: string;
  readonly idSubValue?: string;
}

/** Lowercase UUID or uppercase ULID: the two id formats the switch connector sends. */
export const SWITCH_ID_PATTERN =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[1-7][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$|^[0-9A-HJKMNP-TV-Z]{26}$/;

export function isSwitchId(value: string): boolean {
  return SWITCH_ID_PATTERN.test(value);
}

/**
 * Checks an identifier against its type's rule (src/domain/identifier-rules.ts); returns a reason
 * or null. Without `idSubValue`, types whose kind or device reference lives in the
 * sub-identifier are checked on their value alone unless `requireSubValue` (registration).
 */
export function identifierFormatProblem(idType: PartyIdType, idValue: string, idSubValue?: string, requireSubValue = false): string | null {
  const check = checkIdentifier(idType, idValue, idSubValue, requireSubValue);
  return check.ok ? null : check.problem;
}
