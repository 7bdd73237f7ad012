import { describe, expect, it } from 'vitest';
import { isSwitchId } from '../domain/identifiers.js';
import { refundReference } from './outgoing-references.js';

describe('refundReference', () => {
  it('is a stable version-5 UUID per transferId, distinct from the transferId', () => {
    const transferId = '01JDV6M3AZ6XK1B0SPZ8Q4W2RA';
    const reference = refundReference(transferId);
    expect(reference).toBe(refundReference(transferId));
    expect(reference).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isSwitchId(reference)).toBe(true);
    expect(refundReference('01JDV6M3AZ6XK1B0SPZ8Q4W2RB')).not.toBe(reference);
  });
});
