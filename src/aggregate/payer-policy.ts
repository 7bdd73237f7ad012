import { ConnectorError } from '../domain/errors.js';
import { isPayerKey, PAYER_BIRTH_KEYS, PAYER_BIRTH_KEYS_ISO_EXACT, PAYER_NAME_KEY, type ExtensionItem } from '../domain/iso20022.js';

export interface PayerPolicy {
  /** Every one of these keys must be present. */
  readonly requiredPayerKeys: readonly string[];
  /** At least one of these keys must be present; an empty list sets no such rule. */
  readonly anyOfPayerKeys: readonly string[];
}

/** The payer's regular fields, where the switch connector in iso20022 mode puts what the ISO message said. */
export interface PayerFields {
  readonly displayName?: string | undefined;
  readonly firstName?: string | undefined;
  readonly middleName?: string | undefined;
  readonly lastName?: string | undefined;
  readonly dateOfBirth?: string | undefined;
  readonly extensionList?: readonly ExtensionItem[] | undefined;
}

/**
 * The ISO 20022 payer keys a request carries, sorted and unique: read from the payer's regular
 * fields (a name in displayName, firstName, middleName or lastName is CdtTrfTxInf.Dbtr.Nm; a
 * dateOfBirth is the birth-date key, under both its spellings) and from every extension list
 * given (entries with a value whose key starts with CdtTrfTxInf.Dbtr).
 */
export function payerKeysOf(payer: PayerFields, ...lists: ReadonlyArray<readonly ExtensionItem[] | undefined>): string[] {
  const keys = new Set<string>();
  const given = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';
  if ([payer.displayName, payer.firstName, payer.middleName, payer.lastName].some(given)) keys.add(PAYER_NAME_KEY);
  if (given(payer.dateOfBirth)) {
    keys.add(PAYER_BIRTH_KEYS.BirthDt);
    keys.add(PAYER_BIRTH_KEYS_ISO_EXACT.BirthDt);
  }
  lists = [payer.extensionList, ...lists];
  for (const list of lists) {
    for (const item of list ?? []) if (isPayerKey(item.key) && item.value !== '') keys.add(item.key);
  }
  return [...keys].sort();
}

/** ISO 20022 mode, quote time: the payer information the institution's policy asks for. */
export function checkPayerPolicy(policy: PayerPolicy, presentKeys: readonly string[]): void {
  const present = new Set(presentKeys);
  const missing = policy.requiredPayerKeys.filter((key) => !present.has(key));
  if (missing.length > 0) throw new ConnectorError('PayerInformationMissing', `missing ${missing.join(', ')}`);
  if (policy.anyOfPayerKeys.length > 0 && !policy.anyOfPayerKeys.some((key) => present.has(key))) {
    throw new ConnectorError('PayerInformationMissing', `needs one of ${policy.anyOfPayerKeys.join(', ')}`);
  }
}

/** ISO 20022 mode, transfer time: at least the payer information given at quote time. */
export function checkSamePayerInformation(quoteKeys: readonly string[], transferKeys: readonly string[]): void {
  const present = new Set(transferKeys);
  const missing = quoteKeys.filter((key) => !present.has(key));
  if (missing.length > 0) {
    throw new ConnectorError('PayerInformationMissing', `less payer information than at quote time: missing ${missing.join(', ')}`);
  }
}
