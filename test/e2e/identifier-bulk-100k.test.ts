import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * A 100,000-line registration file against a sandbox institution with 100,000 customers:
 * every line accounted for, batches of at most 10,000 per call, each identifier sent once.
 */

const LINES = Number(process.env['IDENTIFIER_BULK_LINES'] ?? '100000');

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function msisdn(index: number): string {
  return `2609${String(index).padStart(8, '0')}`;
}

describe(`bulk registration of ${LINES} identifiers`, () => {
  it('registers every active customer once, refuses every barred one, in batches of at most 10,000', async () => {
    const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'cc-bulk-'));
    const accounts = {
      currency: 'ZMW',
      float: { accountId: 'float-zmw', balance: '1000' },
      customers: Array.from({ length: LINES }, (_, index) => ({
        accountId: `acc-${index}`,
        idType: 'MSISDN',
        idValue: msisdn(index),
        firstName: 'Bulk',
        lastName: `Customer ${index}`,
        // One in fifty is barred: refused, never registered.
        status: index % 50 === 49 ? 'barred' : 'active',
        balance: '0',
      })),
    };
    const accountsFile = join(dir, 'accounts.json');
    writeFileSync(accountsFile, JSON.stringify(accounts));
    h = await startHarness({ env: { SANDBOX_ACCOUNTS_FILE: accountsFile } });
    const csv = ['idType,idValue,idSubValue,consentBy,consentAt,consentChannel', ...Array.from({ length: LINES }, (_, index) => `MSISDN,${msisdn(index)},,bulk,2026-11-20T08:00:00Z,branch`)].join('\n');
    const started = Date.now();
    const answer = await request(`${h.outgoingUrl}/identifiers/jobs?action=register`, { method: 'POST', headers: { 'content-type': 'text/csv', 'x-api-key': TEST_CHANNEL_API_KEY }, body: csv });
    expect(answer.statusCode).toBe(202);
    const jobId = String(((await answer.body.json()) as { jobId: string }).jobId);
    await h.app.identifierJobs.idle();
    const view = (await h.callOutgoing('GET', `/identifiers/jobs/${jobId}`)).body;
    const barred = Math.floor(LINES / 50);
    expect(view).toEqual({ jobId, action: 'register', state: 'DONE', total: LINES, processed: LINES, outcomes: { REGISTERED: LINES - barred, REFUSED: barred } });
    const batches = h.fakeSwitch.requests.filter((request) => request.method === 'POST' && request.path === '/accounts').map((request) => request.body as Array<{ idValue: string }>);
    expect(batches.map((batch) => batch.length)).toEqual(Array.from({ length: Math.ceil((LINES - barred) / 10_000) }, (_, index) => Math.min(10_000, LINES - barred - index * 10_000)));
    const sent = batches.flat().map((item) => item.idValue);
    expect(new Set(sent).size).toBe(sent.length);
    expect(h.fakeSwitch.registeredIdentifiers.size).toBe(LINES - barred);
    console.log(`bulk registration: ${LINES} lines in ${Math.round((Date.now() - started) / 1000)} s, ${batches.length} POST /accounts calls`);
  }, 600_000);
});
