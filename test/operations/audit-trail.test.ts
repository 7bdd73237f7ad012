import { afterEach, describe, expect, it } from 'vitest';
import { FaultyCoreBanking } from '../support/faulty-core-banking.js';
import type { AuditEvent } from '../../src/adapters/store/audit-trail.js';
import { refundReference } from '../../src/domain/outgoing-references.js';
import { auditSubjectId } from '../../src/identifiers/identifier-store.js';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { PAYER_MSISDN, acceptRefusedBySwitch, initiate, sendMoneyBody, type Body } from '../support/outgoing-bodies.js';
import { customerWith, reserveIncoming, startHarness, type Harness } from '../support/sandbox-harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

/** The rows as [event, from, to, cause, attempt, errorCode, needsAttention], the parts that vary. */
function steps(events: readonly AuditEvent[]): Array<[string, string | null, string, string, number, string | null, boolean]> {
  return events.map((event) => [event.event, event.fromState, event.toState, event.cause, event.attempt, event.errorCode, event.needsAttention]);
}


describe('audit trail', () => {
  it('records every transition of an incoming transfer, in order, with the cause and the institution reference', async () => {
    h = await startHarness();
    const transferId = await reserveIncoming(h, '100');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(200);
    const history = await h.app.audit.history('incoming_transfer', transferId);
    expect(steps(history)).toEqual([
      ['created', null, 'RECEIVED', 'request', 0, null, false],
      ['transition', 'RECEIVED', 'RESERVED', 'request', 0, null, false],
      ['transition', 'RESERVED', 'COMMITTING', 'request', 0, null, false],
      ['transition', 'COMMITTING', 'COMMITTED', 'request', 0, null, false],
    ]);
    expect(history.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    expect(new Set(history.map((event) => event.institutionReference))).toEqual(new Set([transferId]));
    expect(new Set(history.map((event) => event.at))).toEqual(new Set(['2026-11-23T10:00:00.000Z']));
    expect(history.every((event) => event.operator === null && event.reason === null && event.evidence === null)).toBe(true);
  });

  it('records a failed attempt with its error code, and the recovery worker finishing it as recovery', async () => {
    h = await startHarness({ overrides: { wrapCoreBanking: (inner) => new FaultyCoreBanking(inner, { operations: ['commit'], failures: 1, kind: 'unavailable' }) } });
    const transferId = await reserveIncoming(h, '50');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'))).status).toBe(503);
    h.clock.advance(1_001);
    expect(await h.app.recovery.runOnce()).toEqual({ claimed: 1, finished: 1, failed: 0 });
    const history = await h.app.audit.history('incoming_transfer', transferId);
    expect(steps(history)).toEqual([
      ['created', null, 'RECEIVED', 'request', 0, null, false],
      ['transition', 'RECEIVED', 'RESERVED', 'request', 0, null, false],
      ['transition', 'RESERVED', 'COMMITTING', 'request', 0, null, false],
      ['attempt', 'COMMITTING', 'COMMITTING', 'request', 1, '2003', false],
      ['transition', 'COMMITTING', 'COMMITTED', 'recovery', 0, null, false],
    ]);
    expect(history.map((event) => event.at)).toEqual([
      '2026-11-23T10:00:00.000Z',
      '2026-11-23T10:00:00.000Z',
      '2026-11-23T10:00:00.000Z',
      '2026-11-23T10:00:00.000Z',
      '2026-11-23T10:00:01.001Z',
    ]);
  });

  it('records an aborted transfer and a declined reservation with its error name', async () => {
    h = await startHarness();
    const transferId = await reserveIncoming(h, '30');
    expect((await h.call('PUT', `/transfers/${transferId}`, notification('ABORTED'))).status).toBe(422);
    expect(steps(await h.app.audit.history('incoming_transfer', transferId))).toEqual([
      ['created', null, 'RECEIVED', 'request', 0, null, false],
      ['transition', 'RECEIVED', 'RESERVED', 'request', 0, null, false],
      ['transition', 'RESERVED', 'RELEASING', 'request', 0, null, false],
      ['transition', 'RELEASING', 'ABORTED', 'request', 0, null, false],
    ]);

    const payee = customerWith((c) => c.status === 'active');
    const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount: '100000000' });
    const quote = await h.call('POST', '/quoterequests', quoteBody);
    const body = transferRequest(quoteBody, quote.body as Body);
    expect((await h.call('POST', '/transfers', body)).status).toBe(422);
    expect(steps(await h.app.audit.history('incoming_transfer', String(body['transferId'])))).toEqual([
      ['created', null, 'RECEIVED', 'request', 0, null, false],
      ['transition', 'RECEIVED', 'REJECTED', 'request', 0, 'PayeeInsufficientLiquidity', false],
    ]);
  });

  it('records an outgoing payment from initiation to refund, the refund under its own reference', async () => {
    h = await startHarness();
    const { home, transferId } = await acceptRefusedBySwitch(h);
    const history = await h.app.audit.history('outgoing_payment', home);
    expect(steps(history)).toEqual([
      ['created', null, 'INITIATING', 'request', 0, null, false],
      ['attempt', 'INITIATING', 'INITIATING', 'request', 0, null, false],
      ['transition', 'INITIATING', 'QUOTED', 'request', 0, null, false],
      ['transition', 'QUOTED', 'ACCEPTING', 'request', 0, null, false],
      ['transition', 'ACCEPTING', 'REFUNDING', 'request', 0, 'SdkClientError', false],
      ['transition', 'REFUNDING', 'REFUNDED', 'request', 0, null, false],
    ]);
    expect(history.map((event) => event.institutionReference)).toEqual([null, transferId, transferId, transferId, refundReference(transferId), refundReference(transferId)]);
  });

  it('records an identifier registration and opt-out under a digest of the identifier, not the number', async () => {
    h = await startHarness();
    const body = { idType: 'MSISDN', idValue: '260971000001', consent: { by: 'customer 260971000001', at: '2026-11-23T09:58:00.000Z', channel: 'app' } };
    expect((await h.callOutgoing('POST', '/identifiers', body)).body).toMatchObject({ state: 'REGISTERED' });
    expect((await h.callOutgoing('POST', '/identifiers/opt-out', body)).body).toMatchObject({ state: 'DEREGISTERED' });
    const subjectId = auditSubjectId({ idType: 'MSISDN', idValue: '260971000001' });
    expect(subjectId).toMatch(/^sha256:[0-9a-f]{40}$/);
    const history = await h.app.audit.history('identifier', subjectId);
    expect(history.map((event) => [event.event, event.fromState, event.toState, event.cause])).toEqual([
      ['created', null, 'REQUESTED', 'request'],
      ['transition', 'REQUESTED', 'REGISTERED', 'request'],
      ['transition', 'REGISTERED', 'OPTING_OUT', 'request'],
      ['transition', 'OPTING_OUT', 'DEREGISTERED', 'request'],
    ]);
    expect(JSON.stringify(history)).not.toContain('260971000001');
  });

  it('holds no personal data: no identifier, name or account of the payer or payee appears in any row', async () => {
    h = await startHarness();
    const transferId = await reserveIncoming(h, '100');
    await h.call('PUT', `/transfers/${transferId}`, notification('COMPLETED'));
    const body = sendMoneyBody();
    await initiate(h, body);
    const text = JSON.stringify(await h.app.audit.recent({ limit: 100 }));
    const payee = customerWith((c) => c.status === 'active');
    for (const personal of [payee.idValue, payee.accountId, '254700000001', 'Payer Person', PAYER_MSISDN, 'Natasha', '265991234567', 'Chanda']) {
      expect(text).not.toContain(personal);
    }
    // Four rows of the incoming transfer, three of the outgoing payment (created, transferId learnt, QUOTED).
    expect(JSON.parse(text)).toHaveLength(7);
  });
});
