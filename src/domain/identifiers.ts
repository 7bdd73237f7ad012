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

const MSISDN = /^\+?[1-9][0-9]{4,14}$/;
const IBAN = /^[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** Checks an identifier value against the format its type prescribes; returns a reason or null. */
export function identifierFormatProblem(idType: PartyIdType, idValue: string): string | null {
  if (idValue.length === 0 || idValue.length > 128) return 'must be 1-128 characters';
  switch (idType) {
    case 'MSISDN':
      return MSISDN.test(idValue) ? null : 'must be an E.164 number with an optional leading +';
    case 'IBAN':
      return IBAN.test(idValue) ? null : 'must be up to 34 alphanumeric characters without spaces';
    case 'EMAIL':
      return EMAIL.test(idValue) ? null : 'must be an e-mail address';
    case 'PERSONAL_ID':
    case 'BUSINESS':
    case 'DEVICE':
    case 'ACCOUNT_ID':
    case 'ALIAS':
      return null;
  }
}
