/**
 * ISO 20022 element paths carried as extensionList keys, and the limits of the backend API's
 * extension lists. Key lists here are exactly the spec's.
 */

export interface ExtensionItem {
  readonly key: string;
  readonly value: string;
}

/** The switch connector's extension lists: at most 16 items, values 1-128 characters. */
export const EXTENSION_LIST_MAX_ITEMS = 16;
export const EXTENSION_VALUE_MAX_LENGTH = 128;
/** FSPIOP peers reject extension keys longer than this. */
export const FSPIOP_EXTENSION_KEY_MAX_LENGTH = 32;
/**
 * The longest extension key accepted in ISO 20022 mode, where keys are element paths: the
 * longest the spec names has 54 characters; this leaves room for deeper paths the switch
 * connector derives from the ISO message, and still bounds what is stored and echoed.
 */
export const ISO20022_EXTENSION_KEY_MAX_LENGTH = 128;

export type ApiType = 'fspiop' | 'iso20022';

const PARTY = 'Rpt.UpdtdPtyAndAcctId';

export const PARTY_LEI_KEY = `${PARTY}.Agt.FinInstnId.LEI`;
export const PARTY_COUNTRY_OF_RESIDENCE_KEY = `${PARTY}.Pty.CtryOfRes`;

/** Postal address fields of a party, by their ISO 20022 element names. */
export interface PostalAddress {
  readonly AdrTpCd?: string;
  readonly Dept?: string;
  readonly SubDept?: string;
  readonly StrtNm?: string;
  readonly BldgNb?: string;
  readonly BldgNm?: string;
  readonly Flr?: string;
  readonly PstBx?: string;
  readonly Room?: string;
  readonly PstCd?: string;
  readonly TwnNm?: string;
  readonly TwnLctnNm?: string;
  readonly DstrctNm?: string;
  readonly CtrySubDvsn?: string;
  readonly Ctry?: string;
  readonly AdrLine?: string;
}

/**
 * Address keys in the order they are emitted. The list has more entries than an extension list
 * may hold, so the order is also the priority: the most identifying elements come first.
 */
export const POSTAL_ADDRESS_KEYS: ReadonlyArray<readonly [keyof PostalAddress, string]> = [
  ['Ctry', `${PARTY}.Pty.PstlAdr.Ctry`],
  ['TwnNm', `${PARTY}.Pty.PstlAdr.TwnNm`],
  ['StrtNm', `${PARTY}.Pty.PstlAdr.StrtNm`],
  ['BldgNb', `${PARTY}.Pty.PstlAdr.BldgNb`],
  ['PstCd', `${PARTY}.Pty.PstlAdr.PstCd`],
  ['AdrLine', `${PARTY}.Pty.PstlAdr.AdrLine`],
  ['CtrySubDvsn', `${PARTY}.Pty.PstlAdr.CtrySubDvsn`],
  ['DstrctNm', `${PARTY}.Pty.PstlAdr.DstrctNm`],
  ['TwnLctnNm', `${PARTY}.Pty.PstlAdr.TwnLctnNm`],
  ['BldgNm', `${PARTY}.Pty.PstlAdr.BldgNm`],
  ['PstBx', `${PARTY}.Pty.PstlAdr.PstBx`],
  ['AdrTpCd', `${PARTY}.Pty.PstlAdr.AdrTp.Cd`],
  ['Flr', `${PARTY}.Pty.PstlAdr.Flr`],
  ['Room', `${PARTY}.Pty.PstlAdr.Room`],
  ['Dept', `${PARTY}.Pty.PstlAdr.Dept`],
  ['SubDept', `${PARTY}.Pty.PstlAdr.SubDept`],
];

/** Every party key of the spec, for reference and tests. */
export const PARTY_EXTENSION_KEYS: readonly string[] = [
  PARTY_LEI_KEY,
  ...POSTAL_ADDRESS_KEYS.map(([, key]) => key),
  PARTY_COUNTRY_OF_RESIDENCE_KEY,
];

export interface PartyExtensionSource {
  readonly lei: string;
  readonly postalAddress?: PostalAddress;
  readonly countryOfResidence?: string;
}

export interface BuiltExtensionList {
  readonly items: ExtensionItem[];
  /** Keys left out because a value was too long or the list was full; for a log line. */
  readonly droppedKeys: string[];
}

/**
 * The party lookup's ISO 20022 extension list: LEI always first, then country of residence,
 * then the address keys that have a value, in priority order, up to the 16-item limit.
 */
export function partyExtensionList(source: PartyExtensionSource): BuiltExtensionList {
  const candidates: ExtensionItem[] = [{ key: PARTY_LEI_KEY, value: source.lei }];
  if (source.countryOfResidence !== undefined) {
    candidates.push({ key: PARTY_COUNTRY_OF_RESIDENCE_KEY, value: source.countryOfResidence });
  }
  for (const [field, key] of POSTAL_ADDRESS_KEYS) {
    const value = source.postalAddress?.[field];
    if (value !== undefined) candidates.push({ key, value });
  }
  return fitExtensionList(candidates);
}

/** Keeps items whose value fits the API's limits, up to the item limit, in the given order. */
export function fitExtensionList(candidates: readonly ExtensionItem[]): BuiltExtensionList {
  const items: ExtensionItem[] = [];
  const droppedKeys: string[] = [];
  for (const item of candidates) {
    const fits = item.value.length >= 1 && item.value.length <= EXTENSION_VALUE_MAX_LENGTH;
    if (fits && items.length < EXTENSION_LIST_MAX_ITEMS) items.push(item);
    else droppedKeys.push(item.key);
  }
  return { items, droppedKeys };
}

/** The payer's name in an ISO 20022 credit transfer. */
export const PAYER_NAME_KEY = 'CdtTrfTxInf.Dbtr.Nm';

/** Payer birth data keys of the spec, for the outbound transfer's from.extensionList. */
export const PAYER_BIRTH_KEYS = {
  BirthDt: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.BirthDt',
  PrvcOfBirth: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.PrvcOfBirth',
  CityOfBirth: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CityOfBirth',
  CtryOfBirth: 'CdtTrfTxInf.Dbtr.PrvtId.DtAndPlcOfBirth.CtryOfBirth',
} as const;

/** The ISO-exact paths (with the Id element) that newer switch versions expect. */
export const PAYER_BIRTH_KEYS_ISO_EXACT = {
  BirthDt: 'CdtTrfTxInf.Dbtr.Id.PrvtId.DtAndPlcOfBirth.BirthDt',
  PrvcOfBirth: 'CdtTrfTxInf.Dbtr.Id.PrvtId.DtAndPlcOfBirth.PrvcOfBirth',
  CityOfBirth: 'CdtTrfTxInf.Dbtr.Id.PrvtId.DtAndPlcOfBirth.CityOfBirth',
  CtryOfBirth: 'CdtTrfTxInf.Dbtr.Id.PrvtId.DtAndPlcOfBirth.CtryOfBirth',
} as const;

/** Extension keys that describe the payer (debtor, its account and its agent). */
export function isPayerKey(key: string): boolean {
  return key.startsWith('CdtTrfTxInf.Dbtr');
}
