/**
 * ISO 4217 currencies with the number of minor-unit digits (the "exponent").
 * Codes absent from the exception lists below use two digits.
 */
const ZERO_DIGIT = new Set([
  'BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV',
  'XAF', 'XOF', 'XPF',
]);
const THREE_DIGIT = new Set(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);
const FOUR_DIGIT = new Set(['CLF', 'UYW']);

/** Active ISO 4217 codes, plus the few the Mojaloop API also lists (GGP, IMP, JEP, SPL, TVD). */
const CODES = new Set(
  (
    'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP ' +
    'BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB ' +
    'EUR FJD FKP GBP GEL GGP GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS IMP INR IQD IRR ISK ' +
    'JEP JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK ' +
    'MNT MOP MRO MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN ' +
    'PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SPL SRD SSP STD STN SVC SYP SZL ' +
    'THB TJS TMT TND TOP TRY TTD TVD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VEF VES VND VUV WST ' +
    'XAF XCD XDR XOF XPF XSU XTS XUA XXX YER ZAR ZMW ZWD ZWL'
  ).split(' '),
);

export function isCurrencyCode(code: string): boolean {
  return CODES.has(code);
}

/** Number of minor-unit digits of an ISO 4217 currency. Throws for an unknown code. */
export function minorUnitDigits(currency: string): number {
  if (!CODES.has(currency)) throw new RangeError(`unknown ISO 4217 currency: ${currency}`);
  if (ZERO_DIGIT.has(currency)) return 0;
  if (THREE_DIGIT.has(currency)) return 3;
  if (FOUR_DIGIT.has(currency)) return 4;
  return 2;
}
