import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * The operators' API takes each query parameter once, as one string of bounded length: a
 * repeated one arrives as an array, and reached the store as one (a 500 and a fatal log line).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('query strings of the operations routes', () => {
  it.each([
    ['/operations/items?id=a&id=b', 'querystring/id must be string'],
    ['/operations/items?subject=outgoing_payment&id=a&id=b', 'querystring/id must be string'],
    ['/operations/items?state=COMMITTED&state=ABORTED', 'querystring/state must be string'],
    ['/operations/items?subject=incoming_transfer&subject=outgoing_payment', 'querystring/subject must be string'],
    ['/operations/items?from=2026-11-01&from=2026-11-02', 'querystring/from must be string'],
    ['/operations/items?attention=true&attention=true', 'querystring/attention must be string'],
    ['/operations/items?attention=yes', 'querystring/attention must be equal to one of the allowed values'],
    [`/operations/items?id=${'x'.repeat(129)}`, 'querystring/id must NOT have more than 128 characters'],
    ['/operations/audit?subject=a&subject=b', 'querystring/subject must be string'],
    ['/operations/audit?since=2026-11-01&since=2026-11-02', 'querystring/since must be string'],
    ['/operations/reconciliation?date=2026-11-23&date=2026-11-22', 'querystring/date must be string'],
    ['/operations/reconciliation?from=2026-11-01&from=2026-11-02&to=2026-11-03', 'querystring/from must be string'],
    ['/operations/reconciliation?date=2026-11-23&format=csv&format=csv', 'querystring/format must be string'],
    ['/operations/reconciliation?date=2026-11-23&format=xml', 'querystring/format must be equal to one of the allowed values'],
  ])('GET %s: 400', async (path, message) => {
    const answer = await h.callOperations('GET', path);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: { statusCode: '3100', message: `Generic validation error: ${message}` } });
  });

  it('one value each is served as before, and an unknown parameter is ignored', async () => {
    expect(await h.callOperations('GET', '/operations/items?id=a&subject=outgoing_payment&attention=false&cachebust=1')).toMatchObject({ status: 200, body: { items: [], truncated: false } });
    expect(await h.callOperations('GET', '/operations/items?id=&state=')).toMatchObject({ status: 200, body: { items: [], truncated: false } });
    expect((await h.callOperations('GET', '/operations/audit?subject=incoming_transfer')).status).toBe(200);
    expect((await h.callOperations('GET', '/operations/reconciliation?date=2026-11-23&format=json')).status).toBe(200);
  });
});
