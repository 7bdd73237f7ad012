import { ConnectorError } from '../domain/errors.js';

/**
 * An operator's reason or evidence, which goes into the audit trail with the action: one of
 * spaces only says nothing and is refused as a bad field (400 3100), as an absent one is refused
 * by the body's schema. The text is kept as the operator wrote it.
 */
export function statedText(text: string, field: 'reason' | 'evidence'): string {
  if (text.trim() === '') throw new ConnectorError('ValidationFailed', `body/${field} is blank; say ${field === 'reason' ? 'why (it goes into the audit trail)' : 'what the institution or the hub confirmed, and its reference'}`);
  return text;
}
