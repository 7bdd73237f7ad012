import { createHash } from 'node:crypto';

/**
 * A name-based UUID (RFC 9562 version 5 layout: SHA-1 of the name, version and variant bits
 * set): the same name always gives the same id, so every replica, attempt and restart derives it
 * alike.
 */
export function nameBasedUuid(name: string): string {
  const bytes = createHash('sha1').update(name).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The refund's reference at the institution: a name-based UUID derived from the transferId, so
 * that every attempt, by any replica and after any restart, carries the same reference and the
 * institution refunds at most once. The collection uses the transferId itself (the callback names
 * the transfer by it), so the two never collide.
 */
export function refundReference(transferId: string): string {
  return nameBasedUuid(`core-connector:refund:${transferId}`);
}
