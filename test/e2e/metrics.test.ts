import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { notification, quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { reserveIncoming, startHarness, type Harness } from '../support/sandbox-harness.js';

/** GET /metrics after scripted flows: exact counts, no ids or personal data in any label. */

let h: Harness | undefined;
let postgres: TestDatabase | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await postgres?.drop();
  postgres = undefined;
});

async function scrape(url: string): Promise<string> {
  const answer = await request(`${url}/metrics`);
  expect(answer.statusCode).toBe(200);
  expect(answer.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return answer.body.text();
}

/** The sample lines of one metric, without HELP and TYPE. */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe('Prometheus metrics', () => {
  it('count requests, institution calls and transfers by state after one payee lifecycle and one refused quote', async () => {
    h = await startHarness();
    const quoteBody = quoteRequest({ payeeMsisdn: '260971000001', amount: '100' });
    const quoted = await h.call('POST', '/quoterequests', quoteBody);
    expect(quoted.status).toBe(200);
    const transfer = transferRequest(quoteBody, quoted.body as Record<string, unknown>);
    expect((await h.call('POST', '/transfers', transfer)).status).toBe(200);
    expect((await h.call('PUT', `/transfers/${String(transfer['transferId'])}`, notification('COMPLETED'))).status).toBe(200);
    expect((await h.call('POST', '/quoterequests', quoteRequest({ payeeMsisdn: '260971000003', amount: '5' }))).status).toBe(422);

    const text = await scrape(h.incomingUrl);
    expect(samples(text, 'connector_http_requests_total')).toEqual([
      'connector_http_requests_total{server="incoming",route="/quoterequests",method="POST",status="200"} 1',
      'connector_http_requests_total{server="incoming",route="/transfers",method="POST",status="200"} 1',
      'connector_http_requests_total{server="incoming",route="/transfers/:transferId",method="PUT",status="200"} 1',
      'connector_http_requests_total{server="incoming",route="/quoterequests",method="POST",status="422"} 1',
    ]);
    // The start-up health check, then the payee looked up by each quote and by the transfer.
    expect(samples(text, 'connector_institution_calls_total')).toEqual([
      'connector_institution_calls_total{operation="health",outcome="ok"} 1',
      'connector_institution_calls_total{operation="lookupParty",outcome="ok"} 3',
      'connector_institution_calls_total{operation="reserve",outcome="ok"} 1',
      'connector_institution_calls_total{operation="commit",outcome="ok"} 1',
    ]);
    expect(samples(text, 'connector_incoming_transfers')).toEqual(['connector_incoming_transfers{state="COMMITTED"} 1']);
    expect(samples(text, 'connector_items_needing_attention')).toEqual([
      'connector_items_needing_attention{kind="incoming_transfer"} 0',
      'connector_items_needing_attention{kind="outgoing_payment"} 0',
    ]);
    expect(samples(text, 'connector_http_request_duration_seconds_count')).toContain('connector_http_request_duration_seconds_count{server="incoming",route="/transfers"} 1');
    // No identifier, transfer id or amount in any label.
    expect(text).not.toMatch(/260971|[0-9a-f]{8}-[0-9a-f]{4}-|amount/);
    // Both servers serve the same registry.
    expect(samples(await scrape(h.outgoingUrl), 'connector_incoming_transfers')).toEqual(['connector_incoming_transfers{state="COMMITTED"} 1']);
  });
});

describe('Prometheus metrics of the outgoing side', () => {
  it('count switch calls by operation and outcome, and identifiers by registration state', async () => {
    h = await startHarness();
    const consent = { by: 'customer', at: '2026-11-23T09:00:00.000Z', channel: 'app' };
    expect((await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000001', consent })).status).toBe(200);
    h.fakeSwitch.refuseIdentifier('MSISDN/260971000002', { statusCode: '3003', message: 'taken' });
    expect((await h.callOutgoing('POST', '/identifiers', { idType: 'MSISDN', idValue: '260971000002', consent })).status).toBe(200);
    const text = await scrape(h.outgoingUrl);
    expect(samples(text, 'connector_switch_calls_total')).toEqual(['connector_switch_calls_total{operation="registerIdentifiers",outcome="answered"} 2']);
    expect(samples(text, 'connector_identifiers')).toEqual(['connector_identifiers{state="FAILED"} 1', 'connector_identifiers{state="REGISTERED"} 1']);
    expect(samples(text, 'connector_switch_call_duration_seconds_count')).toEqual(['connector_switch_call_duration_seconds_count{operation="registerIdentifiers"} 2']);
  });
});

describe('the figures read from the database', () => {
  /** The gauges read from the store: on PostgreSQL each reading counts the tables. */
  const storeFigures = (text: string): string[] =>
    text.split('\n').filter((line) => /^connector_(identifiers|incoming_transfers|outgoing_payments|items_needing_attention)[{ ]/.test(line));

  it.each(['sqlite', 'postgres'] as const)('are read once for concurrent scrapes on every server, and not again within METRICS_DATABASE_INTERVAL_MS (%s)', async (dialect) => {
    postgres = dialect === 'postgres' ? await createTestDatabase() : undefined;
    h = await startHarness({ env: { METRICS_DATABASE_INTERVAL_MS: '1000', ...(postgres === undefined ? {} : { DATABASE_URL: postgres.url }) } });
    const harness = h;
    await reserveIncoming(harness, '100');
    const statements = (): number => harness.app.database.work().statements;
    // Three readings by state and two of the attention indexes: five statements per reading.
    const before = statements();
    const texts = await Promise.all(Array.from({ length: 30 }, (_, i) => scrape([harness.incomingUrl, harness.outgoingUrl, harness.operationsUrl][i % 3] ?? '')));
    expect(statements() - before).toBe(5);
    const expected = [
      'connector_incoming_transfers{state="RESERVED"} 1',
      'connector_items_needing_attention{kind="incoming_transfer"} 0',
      'connector_items_needing_attention{kind="outgoing_payment"} 0',
    ];
    expect(new Set(texts.map((text) => storeFigures(text).join('\n')))).toEqual(new Set([expected.join('\n')]));

    // Within the interval a scrape sends no statement, though the figures changed meanwhile.
    const transferId = await reserveIncoming(harness, '5');
    const afterWrite = statements();
    expect(storeFigures(await scrape(harness.outgoingUrl))).toEqual(expected);
    expect(statements()).toBe(afterWrite);

    // Once the interval has passed, one scrape reads them again.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(storeFigures(await scrape(harness.incomingUrl))).toEqual([
      'connector_incoming_transfers{state="RESERVED"} 2',
      'connector_items_needing_attention{kind="incoming_transfer"} 0',
      'connector_items_needing_attention{kind="outgoing_payment"} 0',
    ]);
    expect(statements() - afterWrite).toBe(5);
    expect(transferId).not.toBe('');
  });
});

describe('the sample Grafana dashboard (docs/grafana-dashboard.json)', () => {
  it('queries only metrics the connector exports', async () => {
    const { readFile } = await import('node:fs/promises');
    const dashboard = JSON.parse(await readFile('docs/grafana-dashboard.json', 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const used = new Set(dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => target.expr.match(/connector_[a-z_]+/g) ?? [])));
    const { createConnectorMetrics } = await import('../../src/metrics/connector-metrics.js');
    const fake = {} as Parameters<typeof createConnectorMetrics>[0];
    const exported = new Set([...createConnectorMetrics(fake, 'dfsp').registry.getMetricsAsArray(), ...createConnectorMetrics(fake, 'fxp').registry.getMetricsAsArray()].map((metric) => metric.name));
    const histogramSeries = (name: string): string => name.replace(/_(bucket|count|sum)$/, '');
    expect([...used].map(histogramSeries).filter((name) => !exported.has(name))).toEqual([]);
    expect(used.size).toBe(12);
  });
});
