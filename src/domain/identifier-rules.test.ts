import { describe, expect, it } from 'vitest';
import { checkIdentifier, countryCallingCode, segmentWarning } from './identifier-rules.js';

describe('MSISDN (E.164)', () => {
  it('accepts international numbers with a country code in service, with or without +', () => {
    expect(checkIdentifier('MSISDN', '260971000001')).toEqual({ ok: true, value: '260971000001' });
    expect(checkIdentifier('MSISDN', '+254700000001')).toEqual({ ok: true, value: '+254700000001' });
    expect(checkIdentifier('MSISDN', '14155550123')).toEqual({ ok: true, value: '14155550123' });
    expect(checkIdentifier('MSISDN', '260971000008', 'savings')).toEqual({ ok: true, value: '260971000008', subValue: 'savings' });
    expect(checkIdentifier('MSISDN', '260971000008', 'a\u0007')).toEqual({ ok: false, problem: 'sub-identifier has a control character U+0007 at character 2' });
    expect(countryCallingCode('4915112345678')).toBe('49');
    expect(countryCallingCode('2609')).toBe('260');
  });

  it('refuses national formats, unknown codes, wrong lengths and other characters, saying which', () => {
    expect(checkIdentifier('MSISDN', '0971000001')).toEqual({ ok: false, problem: 'must be an E.164 number in international format, without a leading 0 or 00' });
    expect(checkIdentifier('MSISDN', '2801234567')).toEqual({ ok: false, problem: 'must start with a country calling code in service (280... is not one)' });
    expect(checkIdentifier('MSISDN', '2609710')).toEqual({ ok: false, problem: 'must be an E.164 number of 8 to 15 digits (has 7)' });
    expect(checkIdentifier('MSISDN', '2609710000011234')).toEqual({ ok: false, problem: 'must be an E.164 number of 8 to 15 digits (has 16)' });
    expect(checkIdentifier('MSISDN', '+26 0971000001')).toEqual({ ok: false, problem: 'must be an E.164 number: digits with an optional leading +' });
    expect(checkIdentifier('MSISDN', '')).toEqual({ ok: false, problem: 'the value must be 1-128 characters' });
  });
});

describe('EMAIL (RFC 3696)', () => {
  it('accepts dot-atoms and quoted local parts, and lower-cases the domain only', () => {
    expect(checkIdentifier('EMAIL', 'Jane.Doe+pay@Example.ORG')).toEqual({ ok: true, value: 'Jane.Doe+pay@example.org' });
    expect(checkIdentifier('EMAIL', '"jane doe"@bank.co.zm')).toEqual({ ok: true, value: '"jane doe"@bank.co.zm' });
    expect(checkIdentifier('EMAIL', "o'brien@x-y.example")).toEqual({ ok: true, value: "o'brien@x-y.example" });
  });

  it('refuses what RFC 3696 does not allow', () => {
    expect(checkIdentifier('EMAIL', 'jane..doe@example.org')).toMatchObject({ ok: false, problem: expect.stringMatching(/^must have a local part/) });
    expect(checkIdentifier('EMAIL', '.jane@example.org')).toMatchObject({ ok: false });
    expect(checkIdentifier('EMAIL', 'jane@localhost')).toEqual({ ok: false, problem: 'must have a domain with a top-level label (example.org)' });
    expect(checkIdentifier('EMAIL', 'jane@-bank.org')).toMatchObject({ ok: false, problem: expect.stringMatching(/labels of letters, digits and inner hyphens/) });
    expect(checkIdentifier('EMAIL', 'jane@10.0.0.1')).toEqual({ ok: false, problem: 'must have a top-level domain that is not all digits' });
    expect(checkIdentifier('EMAIL', `${'a'.repeat(65)}@example.org`)).toEqual({ ok: false, problem: 'must have a local part of at most 64 characters' });
    expect(checkIdentifier('EMAIL', 'no-at-sign')).toEqual({ ok: false, problem: 'must be an e-mail address: local-part@domain' });
  });
});

describe('IBAN (ISO 13616)', () => {
  it('accepts registered countries with their length and agreeing check digits, normalised', () => {
    expect(checkIdentifier('IBAN', 'GB82 WEST 1234 5698 7654 32')).toEqual({ ok: true, value: 'GB82WEST12345698765432' });
    expect(checkIdentifier('IBAN', 'DE89370400440532013000')).toEqual({ ok: true, value: 'DE89370400440532013000' });
    expect(checkIdentifier('IBAN', 'fr1420041010050500013m02606')).toEqual({ ok: true, value: 'FR1420041010050500013M02606' });
    expect(checkIdentifier('IBAN', 'NO9386011117947')).toEqual({ ok: true, value: 'NO9386011117947' });
  });

  it('refuses a wrong check digit, a wrong length, an unregistered country and other characters', () => {
    expect(checkIdentifier('IBAN', 'GB82WEST12345698765433')).toEqual({ ok: false, problem: 'must have IBAN check digits that agree (MOD 97-10)' });
    expect(checkIdentifier('IBAN', 'DE8937040044053201300')).toEqual({ ok: false, problem: 'must be 22 characters for DE (has 21)' });
    expect(checkIdentifier('IBAN', 'ZM8937040044053201300')).toEqual({ ok: false, problem: 'must be an IBAN of a country in the IBAN registry (ZM is not)' });
    expect(checkIdentifier('IBAN', 'GB82-WEST-1234')).toMatchObject({ ok: false, problem: expect.stringMatching(/^must be an IBAN: country code/) });
  });
});

describe('the other types', () => {
  it('PERSONAL_ID needs its kind in the sub-identifier; DEVICE its device reference', () => {
    expect(checkIdentifier('PERSONAL_ID', '123456/10/1', 'NRC')).toEqual({ ok: true, value: '123456/10/1', subValue: 'NRC' });
    expect(checkIdentifier('PERSONAL_ID', '123456/10/1')).toEqual({ ok: false, problem: 'needs its kind in the sub-identifier (PartySubIdOrType), e.g. NATIONAL_ID or PASSPORT' });
    expect(checkIdentifier('PERSONAL_ID', '#12', 'NRC')).toMatchObject({ ok: false });
    expect(checkIdentifier('DEVICE', 'shop-42', 'POS-7')).toEqual({ ok: true, value: 'shop-42', subValue: 'POS-7' });
    expect(checkIdentifier('DEVICE', 'shop-42')).toEqual({ ok: false, problem: 'needs the device reference in the sub-identifier (PartySubIdOrType)' });
  });

  it('BUSINESS, ACCOUNT_ID and ALIAS are free format: 1-128 characters without control characters', () => {
    expect(checkIdentifier('ALIAS', 'jane_d')).toEqual({ ok: true, value: 'jane_d' });
    expect(checkIdentifier('ACCOUNT_ID', '0012-3456/7', 'branch 4')).toEqual({ ok: true, value: '0012-3456/7', subValue: 'branch 4' });
    expect(checkIdentifier('BUSINESS', 'x'.repeat(128))).toMatchObject({ ok: true });
    expect(checkIdentifier('BUSINESS', 'x'.repeat(129))).toEqual({ ok: false, problem: 'the value must be 1-128 characters' });
    expect(checkIdentifier('ALIAS', 'jane\u0000')).toEqual({ ok: false, problem: 'the value has a control character U+0000 at character 5' });
    expect(checkIdentifier('ALIAS', 'jane', '')).toEqual({ ok: false, problem: 'sub-identifier must be 1-128 characters' });
  });
});

describe('segment recommendations', () => {
  it('warns when a type is outside the segments an institution serves', () => {
    expect(segmentWarning(['retail'], 'MSISDN')).toBeUndefined();
    expect(segmentWarning(['retail'], 'IBAN')).toBe('IBAN is not recommended for retail (recommended: MSISDN, EMAIL, PERSONAL_ID, ALIAS)');
    expect(segmentWarning(['corporates', 'agents'], 'DEVICE')).toBeUndefined();
    expect(segmentWarning([], 'IBAN')).toBeUndefined();
  });
});
