import { ConnectorError } from '../domain/errors.js';
import { isPayerKey, type ExtensionItem } from '../domain/iso20022.js';

export interface PayerPolicy {
  /** Every one of these keys must be present. */
  readonly requiredPayerKeys: readonly string[];
  /** At least one of these keys must be present; an empty list sets no such rule. */
  readonly anyOfPayerKeys: readonly string[];
}

/** Payer keys present (with a value) in any of the given extension lists, sorted and unique. */
export function payerKeysOf(...lists: ReadonlyArray<readonly ExtensionItem[] | undefined>): string[] {
  const keys = new Set<string>();
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
