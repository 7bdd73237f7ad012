import { describe, expect, it } from 'vitest';
import { FSPIOP_EXTENSION_KEY_MAX_LENGTH, PAYER_BIRTH_KEYS, PAYER_BIRTH_KEYS_ISO_EXACT } from '../domain/iso20022.js';
import { birthExtensions, checkSendMoneyRequest, isoDateOfDayMonthYear, outboundTransferRequest, type RequestSettings } from './outgoing-request.js';
import type { SendMoneyRequest } from './outgoing-types.js';

const settings: RequestSettings = { supportedIdType: 'MSISDN', currency: 'ZMW', apiType: 'fspiop', birthKeys: 'spec' };
const request: SendMoneyRequest = {
  homeTransactionId: 'home-1',
  payeeId: '+265991234567',
  payeeIdType: 'MSISDN',
  sendAmount: '12.5',
  sendCurrency: 'ZMW',
  receiveCurrency: 'ZMW',
  transactionType: 'TRANSFER',
  payer: { name: 'Natasha Mulenga', payerId: '260971000002', DateAndPlaceOfBirth: { BirthDt: '31-12-1999', CityOfBirth: 'Ndola', CtryOfBirth: 'ZM' } },
};

describe('isoDateOfDayMonthYear', () => {
  it('reads real calendar days written DD-MM-YYYY', () => {
    expect(isoDateOfDayMonthYear('30-11-1995')).toBe('1995-11-30');
    expect(isoDateOfDayMonthYear('29-02-2000')).toBe('2000-02-29');
    expect(isoDateOfDayMonthYear('29-02-2024')).toBe('2024-02-29');
    expect(isoDateOfDayMonthYear('31-12-0001')).toBe('0001-12-31');
  });

  it('refuses days that do not exist and other layouts', () => {
    for (const text of ['31-02-1990', '29-02-1900', '29-02-2023', '31-04-2001', '00-01-2000', '01-13-2000', '01-00-2000', '01-01-0000', '1990-02-01', '1-2-1990', '01/02/1990', ' 01-02-1990']) {
      expect([text, isoDateOfDayMonthYear(text)]).toEqual([text, undefined]);
    }
  });
});

describe('checkSendMoneyRequest', () => {
  it('answers the identifier type, the canonical amount and the ISO date', () => {
    expect(checkSendMoneyRequest(request, 'SEND', settings)).toEqual({
      payeeIdType: 'MSISDN',
      payeeId: '+265991234567',
      payerId: '260971000002',
      sendAmount: '12.5',
      birthDate: '1999-12-31',
    });
  });

  it('answers the identifiers in their normal form (IBAN without spaces, upper case; e-mail domain lower case), which the switch is sent', () => {
    const printed = { ...request, payeeIdType: 'IBAN', payeeId: 'gb82 west 1234 5698 7654 32', payer: { ...request.payer, payerId: 'Natasha.Mulenga@Example.COM' } };
    const email = { ...settings, supportedIdType: 'EMAIL' } as const;
    const checked = checkSendMoneyRequest(printed, 'SEND', email);
    expect([checked.payeeId, checked.payerId]).toEqual(['GB82WEST12345698765432', 'Natasha.Mulenga@example.com']);
    const sent = outboundTransferRequest(printed, checked, 'SEND', email);
    expect([sent.to, sent.from.idValue]).toEqual([{ idType: 'IBAN', idValue: 'GB82WEST12345698765432' }, 'Natasha.Mulenga@example.com']);
  });

  it('names the field of each problem', () => {
    const problems = [
      [{ ...request, payeeIdType: 'PHONE' }, 'Generic validation error: payeeIdType is not an identifier type'],
      [{ ...request, payeeIdType: 'IBAN', payeeId: 'not an iban' }, 'Generic validation error: payeeId must be an IBAN: country code, 2 check digits, then letters and digits (at most 34)'],
      [{ ...request, payer: { ...request.payer, payerId: 'abc' } }, 'Generic validation error: payer.payerId must be an E.164 number: digits with an optional leading + (MSISDN)'],
      [{ ...request, sendAmount: '1.001' }, 'Generic validation error: sendAmount has more decimals than ZMW allows'],
      [{ ...request, sendCurrency: 'KWD', receiveCurrency: 'KWD' }, 'Unsupported currency: sendCurrency KWD (customers are debited in ZMW)'],
      [{ ...request, receiveCurrency: 'ABC' }, 'Generic validation error: receiveCurrency is not an ISO 4217 currency code'],
      [{ ...request, transactionType: 'PAYMENT' }, 'Generic validation error: transactionType must be TRANSFER'],
    ] as const;
    for (const [body, message] of problems) {
      expect(() => checkSendMoneyRequest(body, 'SEND', settings)).toThrow(message);
    }
  });

  it('refuses a merchant payment (RECEIVE) across currencies; send money (SEND) may convert', () => {
    const crossCurrency = { ...request, receiveCurrency: 'MWK' };
    expect(() => checkSendMoneyRequest(crossCurrency, 'RECEIVE', settings)).toThrow(
      'Unsupported currency: a cross-currency merchant payment is not offered (receiveCurrency MWK, sendCurrency ZMW)',
    );
    expect(checkSendMoneyRequest(crossCurrency, 'SEND', settings)).toMatchObject({ payeeIdType: 'MSISDN', sendAmount: '12.5' });
  });
});

describe('outboundTransferRequest', () => {
  it('maps the request to the switch body; fspiop mode carries the birth date as from.dateOfBirth only', () => {
    const checked = checkSendMoneyRequest({ ...request, sendAmount: '12.5' }, 'RECEIVE', settings);
    expect(outboundTransferRequest(request, checked, 'RECEIVE', settings)).toEqual({
      homeTransactionId: 'home-1',
      from: { idType: 'MSISDN', idValue: '260971000002', displayName: 'Natasha Mulenga', dateOfBirth: '1999-12-31' },
      to: { idType: 'MSISDN', idValue: '+265991234567' },
      amountType: 'RECEIVE',
      currency: 'ZMW',
      amount: '12.5',
      transactionType: 'TRANSFER',
    });
  });

  it('iso20022 mode carries the spec keys exactly (or the ISO-exact ones), none of which fits FSPIOP', () => {
    const birth = { BirthDt: '01-02-1990', PrvcOfBirth: 'Copperbelt', CityOfBirth: 'Ndola', CtryOfBirth: 'ZM' };
    expect(birthExtensions(birth, '1990-02-01', 'spec')).toEqual([
      { key: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt', value: '1990-02-01' },
      { key: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.PrvcOfBirth', value: 'Copperbelt' },
      { key: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CityOfBirth', value: 'Ndola' },
      { key: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CtryOfBirth', value: 'ZM' },
    ]);
    expect(birthExtensions(birth, '1990-02-01', 'iso-exact').map((item) => item.key)).toEqual(Object.values(PAYER_BIRTH_KEYS_ISO_EXACT));
    const keys = [...Object.values(PAYER_BIRTH_KEYS), ...Object.values(PAYER_BIRTH_KEYS_ISO_EXACT)];
    expect(keys.every((key) => key.length > FSPIOP_EXTENSION_KEY_MAX_LENGTH)).toBe(true);
    const iso = outboundTransferRequest(request, checkSendMoneyRequest(request, 'SEND', settings), 'SEND', { ...settings, apiType: 'iso20022' });
    expect(iso.from.dateOfBirth).toBeUndefined();
    expect(iso.from.extensionList?.map((item) => item.key)).toEqual([PAYER_BIRTH_KEYS.BirthDt, PAYER_BIRTH_KEYS.CityOfBirth, PAYER_BIRTH_KEYS.CtryOfBirth]);
  });
});
