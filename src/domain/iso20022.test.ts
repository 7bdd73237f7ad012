import { describe, expect, it } from 'vitest';
import { PARTY_EXTENSION_KEYS, PAYER_BIRTH_KEYS, fitExtensionList, partyExtensionList } from './iso20022.js';

const P = 'Rpt.UpdtdPtyAndAcctId';

describe('party extension keys', () => {
  it('are exactly the spec keys', () => {
    expect([...PARTY_EXTENSION_KEYS].sort()).toEqual(
      [
        `${P}.Agt.FinInstnId.LEI`,
        `${P}.Pty.PstlAdr.AdrTp.Cd`,
        `${P}.Pty.PstlAdr.Dept`,
        `${P}.Pty.PstlAdr.SubDept`,
        `${P}.Pty.PstlAdr.StrtNm`,
        `${P}.Pty.PstlAdr.BldgNb`,
        `${P}.Pty.PstlAdr.BldgNm`,
        `${P}.Pty.PstlAdr.Flr`,
        `${P}.Pty.PstlAdr.PstBx`,
        `${P}.Pty.PstlAdr.Room`,
        `${P}.Pty.PstlAdr.PstCd`,
        `${P}.Pty.PstlAdr.TwnNm`,
        `${P}.Pty.PstlAdr.TwnLctnNm`,
        `${P}.Pty.PstlAdr.DstrctNm`,
        `${P}.Pty.PstlAdr.CtrySubDvsn`,
        `${P}.Pty.PstlAdr.Ctry`,
        `${P}.Pty.PstlAdr.AdrLine`,
        `${P}.Pty.CtryOfRes`,
      ].sort(),
    );
  });

  it('payer birth keys are the spec keys', () => {
    expect(Object.values(PAYER_BIRTH_KEYS)).toEqual([
      'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt',
      'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.PrvcOfBirth',
      'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CityOfBirth',
      'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CtryOfBirth',
    ]);
  });
});

describe('partyExtensionList', () => {
  it('always carries the LEI, then country of residence, then address keys that have values', () => {
    const built = partyExtensionList({ lei: 'LEI1', countryOfResidence: 'ZM', postalAddress: { TwnNm: 'Lusaka', Ctry: 'ZM' } });
    expect(built).toEqual({
      items: [
        { key: `${P}.Agt.FinInstnId.LEI`, value: 'LEI1' },
        { key: `${P}.Pty.CtryOfRes`, value: 'ZM' },
        { key: `${P}.Pty.PstlAdr.Ctry`, value: 'ZM' },
        { key: `${P}.Pty.PstlAdr.TwnNm`, value: 'Lusaka' },
      ],
      droppedKeys: [],
    });
    expect(partyExtensionList({ lei: 'LEI1' }).items).toEqual([{ key: `${P}.Agt.FinInstnId.LEI`, value: 'LEI1' }]);
  });

  it('keeps to 16 items, dropping the lowest-priority address keys', () => {
    const address = {
      AdrTpCd: 'HOME', Dept: 'd', SubDept: 's', StrtNm: 'st', BldgNb: '1', BldgNm: 'b', Flr: '2', PstBx: 'p', Room: 'r',
      PstCd: '10101', TwnNm: 't', TwnLctnNm: 'tl', DstrctNm: 'dn', CtrySubDvsn: 'cs', Ctry: 'ZM', AdrLine: 'al',
    };
    const built = partyExtensionList({ lei: 'LEI1', countryOfResidence: 'ZM', postalAddress: address });
    expect(built.items).toHaveLength(16);
    expect(built.droppedKeys).toEqual([`${P}.Pty.PstlAdr.Dept`, `${P}.Pty.PstlAdr.SubDept`]);
  });

  it('drops a value longer than 128 characters rather than truncating it', () => {
    const built = fitExtensionList([{ key: 'a', value: 'x'.repeat(129) }, { key: 'b', value: 'y' }]);
    expect(built).toEqual({ items: [{ key: 'b', value: 'y' }], droppedKeys: ['a'] });
  });
});
