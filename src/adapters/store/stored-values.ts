import { AssertionFailed } from '../../domain/errors.js';
import { isPartyIdType, type PartyIdType } from '../../domain/identifiers.js';

/** Reads of stored words back into their types; anything else means the row was not ours. */

export function amountTypeOf(text: string): 'SEND' | 'RECEIVE' {
  if (text === 'SEND' || text === 'RECEIVE') return text;
  throw new AssertionFailed(`stored amount type ${text}`);
}

export function idTypeOf(text: string): PartyIdType {
  if (isPartyIdType(text)) return text;
  throw new AssertionFailed(`stored identifier type ${text}`);
}
