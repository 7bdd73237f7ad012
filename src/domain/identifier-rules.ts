import type { PartyIdType } from './identifiers.js';
import { textProblem } from './text.js';

/**
 * The rule of every customer identifier type of the platform (spec: Customer identifiers), one
 * function per type, each answering the identifier in its normal form or the reason it is not
 * one. Normalisation only where the standard allows it: spaces and letter case in an IBAN
 * (ISO 13616 prints it in groups), the case of an e-mail domain (RFC 3696: domains are case
 * insensitive, local parts are not).
 */

export type IdentifierCheck =
  | { readonly ok: true; readonly value: string; readonly subValue?: string }
  | { readonly ok: false; readonly problem: string };

const MAX_LENGTH = 128;

function refuse(problem: string): IdentifierCheck {
  return { ok: false, problem };
}

function accept(value: string, subValue?: string): IdentifierCheck {
  return subValue === undefined ? { ok: true, value } : { ok: true, value, subValue };
}

/** 1-128 characters, no control characters or lone surrogates: every value and sub-value. */
function plainTextProblem(text: string, what: string): string | undefined {
  if (text.length === 0 || text.length > MAX_LENGTH) return `${what} must be 1-${MAX_LENGTH} characters`;
  const problem = textProblem(text);
  return problem === undefined ? undefined : `${what} ${problem}`;
}

/**
 * ITU-T E.164 country calling codes in service (ITU-T E.164 annex list): 1 to 3 digits, no
 * code a prefix of another.
 */
const COUNTRY_CODES: ReadonlySet<string> = new Set(
  (
    '1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98 ' +
    '211 212 213 216 218 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 247 248 249 ' +
    '250 251 252 253 254 255 256 257 258 260 261 262 263 264 265 266 267 268 269 290 291 297 298 299 ' +
    '350 351 352 353 354 355 356 357 358 359 370 371 372 373 374 375 376 377 378 379 380 381 382 383 385 386 387 389 ' +
    '420 421 423 500 501 502 503 504 505 506 507 508 509 590 591 592 593 594 595 596 597 598 599 ' +
    '670 672 673 674 675 676 677 678 679 680 681 682 683 685 686 687 688 689 690 691 692 ' +
    '800 808 850 852 853 855 856 870 878 880 881 882 883 886 888 ' +
    '960 961 962 963 964 965 966 967 968 970 971 972 973 974 975 976 977 979 992 993 994 995 996 998'
  ).split(' '),
);

/** The country calling code an international number starts with, or undefined. */
export function countryCallingCode(digits: string): string | undefined {
  for (const length of [1, 2, 3]) {
    const code = digits.slice(0, length);
    if (COUNTRY_CODES.has(code)) return code;
  }
  return undefined;
}

/**
 * MSISDN (ITU-T E.164): an optional leading +, then only digits: a country calling code in
 * service and a national number, 8 to 15 digits in all. Kept as given (with or without +): the
 * platform compares identifiers as registered.
 */
export function checkMsisdn(value: string): IdentifierCheck {
  const match = /^(\+?)([0-9]+)$/.exec(value);
  if (match === null) return refuse('must be an E.164 number: digits with an optional leading +');
  const digits = match[2] ?? '';
  if (digits.startsWith('0')) return refuse('must be an E.164 number in international format, without a leading 0 or 00');
  if (digits.length < 8 || digits.length > 15) return refuse(`must be an E.164 number of 8 to 15 digits (has ${digits.length})`);
  const code = countryCallingCode(digits);
  if (code === undefined) return refuse(`must start with a country calling code in service (${digits.slice(0, 3)}... is not one)`);
  return accept(value);
}

const ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-";
const DOT_ATOM = new RegExp(`^[${ATEXT}]+(\\.[${ATEXT}]+)*$`);
const QUOTED = /^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * EMAIL (RFC 3696 section 3): a local part of at most 64 characters (a dot-atom of the allowed
 * characters, or a quoted string), @, a domain of at most 255 characters made of labels of
 * letters, digits and inner hyphens, 1 to 63 each, with a top-level label that is not all
 * digits; at most 254 characters in all (RFC 3696 errata 1690). The domain is lower-cased.
 */
export function checkEmail(value: string): IdentifierCheck {
  if (value.length > 254) return refuse('must be an e-mail address of at most 254 characters');
  const at = value.lastIndexOf('@');
  if (at <= 0) return refuse('must be an e-mail address: local-part@domain');
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.length > 64) return refuse('must have a local part of at most 64 characters');
  if (!DOT_ATOM.test(local) && !QUOTED.test(local)) return refuse('must have a local part of letters, digits and !#$%&\'*+/=?^_`{|}~- separated by single dots, or a quoted string');
  if (domain.length === 0 || domain.length > 255) return refuse('must have a domain of 1 to 255 characters');
  const labels = domain.split('.');
  if (labels.length < 2) return refuse('must have a domain with a top-level label (example.org)');
  if (!labels.every((label) => LABEL.test(label))) return refuse('must have a domain of labels of letters, digits and inner hyphens, 1 to 63 characters each');
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return refuse('must have a top-level domain that is not all digits');
  return accept(`${local}@${domain.toLowerCase()}`);
}

/** IBAN length per country (ISO 13616 registry, SWIFT release of the IBAN registry). */
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27,
  GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20,
  LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24, PL: 28,
  PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28,
  TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

/** ISO 7064 MOD 97-10 over an IBAN moved into check position: 1 when the check digits agree. */
function ibanRemainder(iban: string): number {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of moved) {
    const digits = /[0-9]/.test(char) ? char : String(char.charCodeAt(0) - 55);
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder;
}

/**
 * IBAN (ISO 13616): spaces removed and letters upper-cased (the printed form groups by four),
 * then a registered country code, two check digits, a length that is that country's, only
 * letters and digits, and MOD 97-10 equal to 1.
 */
export function checkIban(value: string): IdentifierCheck {
  const iban = value.replace(/ /g, '').toUpperCase();
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]+$/.test(iban)) return refuse('must be an IBAN: country code, 2 check digits, then letters and digits (at most 34)');
  const country = iban.slice(0, 2);
  const length = IBAN_LENGTHS[country];
  if (length === undefined) return refuse(`must be an IBAN of a country in the IBAN registry (${country} is not)`);
  if (iban.length !== length) return refuse(`must be ${length} characters for ${country} (has ${iban.length})`);
  if (ibanRemainder(iban) !== 1) return refuse('must have IBAN check digits that agree (MOD 97-10)');
  return accept(iban);
}

/**
 * PERSONAL_ID: the number, and its kind (NATIONAL_ID, PASSPORT, DRIVING_LICENSE...) in the
 * sub-identifier, required unless the caller's API has no field for it (`requireSubValue` false).
 */
export function checkPersonalId(value: string, subValue: string | undefined, requireSubValue = true): IdentifierCheck {
  if (!/^[A-Za-z0-9][A-Za-z0-9 ./-]*$/.test(value)) return refuse('must be letters and digits, with spaces, dots, slashes or hyphens inside');
  if (subValue === undefined) return requireSubValue ? refuse('needs its kind in the sub-identifier (PartySubIdOrType), e.g. NATIONAL_ID or PASSPORT') : accept(value);
  const kind = plainTextProblem(subValue, 'kind');
  return kind === undefined ? accept(value, subValue) : refuse(kind);
}

/** DEVICE: the business the device belongs to, and the device reference in the sub-identifier. */
export function checkDevice(value: string, subValue: string | undefined, requireSubValue = true): IdentifierCheck {
  if (subValue === undefined) return requireSubValue ? refuse('needs the device reference in the sub-identifier (PartySubIdOrType)') : accept(value);
  const reference = plainTextProblem(subValue, 'device reference');
  return reference === undefined ? accept(value, subValue) : refuse(reference);
}

/** BUSINESS, ACCOUNT_ID, ALIAS: free format, 1-128 characters, an optional sub-identifier. */
export function checkFreeFormat(value: string, subValue: string | undefined): IdentifierCheck {
  if (subValue === undefined) return accept(value);
  const problem = plainTextProblem(subValue, 'sub-identifier');
  return problem === undefined ? accept(value, subValue) : refuse(problem);
}

/**
 * The rule of `idType`, after the checks every identifier shares. Exhaustive over the types.
 * `requireSubValue` false where the caller's API carries no sub-identifier (the channel's payeeId).
 */
export function checkIdentifier(idType: PartyIdType, value: string, subValue?: string, requireSubValue = true): IdentifierCheck {
  const shared = plainTextProblem(value, 'the value');
  if (shared !== undefined) return refuse(shared);
  switch (idType) {
    case 'MSISDN':
      return withSubValue(checkMsisdn(value), subValue);
    case 'EMAIL':
      return withSubValue(checkEmail(value), subValue);
    case 'IBAN':
      return withSubValue(checkIban(value), subValue);
    case 'PERSONAL_ID':
      return checkPersonalId(value, subValue, requireSubValue);
    case 'DEVICE':
      return checkDevice(value, subValue, requireSubValue);
    case 'BUSINESS':
    case 'ACCOUNT_ID':
    case 'ALIAS':
      return checkFreeFormat(value, subValue);
  }
}

/** A checked value with the optional sub-identifier (which may disambiguate it) kept, when that is text. */
function withSubValue(check: IdentifierCheck, subValue: string | undefined): IdentifierCheck {
  if (!check.ok || subValue === undefined) return check;
  const problem = plainTextProblem(subValue, 'sub-identifier');
  return problem === undefined ? accept(check.value, subValue) : refuse(problem);
}

/** The spec's recommended types per customer segment (Customer identifiers, rule 3). */
export const SEGMENT_TYPES = {
  retail: ['MSISDN', 'EMAIL', 'PERSONAL_ID', 'ALIAS'],
  merchants: ['BUSINESS', 'DEVICE', 'ALIAS'],
  corporates: ['BUSINESS', 'ACCOUNT_ID', 'IBAN'],
  government: ['PERSONAL_ID', 'MSISDN'],
  agents: ['DEVICE', 'ACCOUNT_ID'],
} as const satisfies Record<string, readonly PartyIdType[]>;

export type Segment = keyof typeof SEGMENT_TYPES;

/** A warning when `idType` is not among the types recommended for any of `segments`; undefined otherwise. */
export function segmentWarning(segments: readonly Segment[], idType: PartyIdType): string | undefined {
  if (segments.length === 0) return undefined;
  const recommended = new Set<PartyIdType>(segments.flatMap((segment) => SEGMENT_TYPES[segment]));
  if (recommended.has(idType)) return undefined;
  return `${idType} is not recommended for ${segments.join(', ')} (recommended: ${[...recommended].join(', ')})`;
}

/** The consent kept with a registration, as every way in takes it (its registry columns hold no more). */
export const CONSENT_BY_MAX_LENGTH = 128;
export const CONSENT_CHANNEL_MAX_LENGTH = 64;
/** When consent was given: ISO 8601 to the second or millisecond, with Z or an offset (at most 29 characters). */
export const CONSENT_AT_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?(Z|[+-]\\d{2}:\\d{2})$';
const CONSENT_AT = new RegExp(CONSENT_AT_PATTERN);

/**
 * What is wrong with a consent (each field named as its caller names it), or undefined: the rules
 * of the individual API's schema, for the lines of a bulk file. A bulk line had only needed a date
 * Date.parse reads ("1", or Date's own 62-character text) and no length: PostgreSQL refused to
 * store it, and the line stopped its job at every pass.
 */
export function consentProblem(consent: { readonly by: string; readonly at: string; readonly channel: string }, names: { readonly by: string; readonly at: string; readonly channel: string }): string | undefined {
  if (consent.by.length === 0 || consent.by.length > CONSENT_BY_MAX_LENGTH) return `${names.by} must be 1-${CONSENT_BY_MAX_LENGTH} characters`;
  if (!CONSENT_AT.test(consent.at)) return `${names.at} must be an ISO 8601 date and time with its offset (2026-11-20T08:00:00Z)`;
  if (consent.channel.length === 0 || consent.channel.length > CONSENT_CHANNEL_MAX_LENGTH) return `${names.channel} must be 1-${CONSENT_CHANNEL_MAX_LENGTH} characters`;
  return undefined;
}
