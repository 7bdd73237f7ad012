import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flaggedPayments } from '../support/outgoing-rows.js';
import { reserveIncoming, startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * GET /operations/items shows at most 200 items, newest first, and says when there were more
 * (`truncated`), whether one kind fills the list or the two together do.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

interface Items {
  items: Array<{ subject: string; id: string }>;
  truncated: boolean;
}

async function list(query: string): Promise<{ count: number; first: string | undefined; last: string | undefined; truncated: boolean }> {
  const answer = await h.callOperations('GET', `/operations/items?${query}`);
  expect(answer.status).toBe(200);
  const body = answer.body as Items;
  return { count: body.items.length, first: body.items[0]?.id, last: body.items.at(-1)?.id, truncated: body.truncated };
}

describe('the list of items, at most 200', () => {
  it('says it was cut when one kind alone has more than 200 matching items, and not when it has 200', async () => {
    await flaggedPayments(h.app.database, 0, 200);
    expect(await list('subject=outgoing_payment&attention=true')).toEqual({ count: 200, first: 'home-0199', last: 'home-0000', truncated: false });
    expect(await list('attention=true')).toEqual({ count: 200, first: 'home-0199', last: 'home-0000', truncated: false });

    await flaggedPayments(h.app.database, 200, 1);
    expect(await list('subject=outgoing_payment&attention=true')).toEqual({ count: 200, first: 'home-0200', last: 'home-0001', truncated: true });
    expect(await list('attention=true')).toEqual({ count: 200, first: 'home-0200', last: 'home-0001', truncated: true });
    expect(await list('subject=incoming_transfer&attention=true')).toEqual({ count: 0, first: undefined, last: undefined, truncated: false });

    // An incoming transfer, the newest item, flagged: the two kinds together, still cut.
    const transferId = await reserveIncoming(h, '10');
    await sql`update inbound_transfers set needs_attention = 1 where transfer_id = ${transferId}`.execute(h.app.database.reader());
    expect(await list('attention=true')).toEqual({ count: 200, first: transferId, last: 'home-0002', truncated: true });
    expect(await list('subject=incoming_transfer&attention=true')).toEqual({ count: 1, first: transferId, last: transferId, truncated: false });
  }, 60_000);
});
