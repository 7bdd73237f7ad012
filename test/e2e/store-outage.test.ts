import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { quoteRequest } from '../support/backend-bodies.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { customerWith } from '../support/sandbox-harness.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';

/**
 * PostgreSQL gone while the connector runs (the network to it cut through a relay): every request
 * needing it is answered 503, the outage logged once as an error (not a fatal "unexpected error"
 * per request), and the connector serves again once the database is back.
 */
describe('a database outage', () => {
  let database: TestDatabase;
  let relay: TcpRelay;
  let app: App;
  let incomingUrl = '';
  const lines: Array<Record<string, unknown>> = [];
  const dir = mkdtempSync(join(tmpdir(), 'cc-outage-'));

  beforeAll(async () => {
    database = await createTestDatabase();
    relay = await startTcpRelay(database.url);
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const config = loadConfig({ DATABASE_URL: relay.url, INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', HOST: '127.0.0.1', RECOVERY_INTERVAL_MS: '3600000' });
    app = await buildApp(config, pino({ level: 'warn' }, sink));
    ({ incomingUrl } = await app.start());
  });

  afterAll(async () => {
    await app.stop();
    await relay.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const quote = async (): Promise<{ status: number; body: unknown }> => {
    const payee = customerWith((c) => c.status === 'active');
    const answer = await request(`${incomingUrl}/quoterequests`, { method: 'POST', body: JSON.stringify(quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' })), headers: { 'content-type': 'application/json' } });
    return { status: answer.statusCode, body: await answer.body.json() };
  };

  it('answers 503 while it lasts, logs it once as an error, and serves again once the database is back', async () => {
    expect((await quote()).status).toBe(200);
    relay.cut();
    const during = [];
    for (let index = 0; index < 5; index += 1) during.push(await quote());
    expect(during).toEqual(Array.from({ length: 5 }, () => ({ status: 503, body: { statusCode: '2003', message: 'Service currently unavailable: the database cannot be reached; retry later' } })));
    expect(lines.filter((line) => line['level'] === 60)).toEqual([]);
    const outage = lines.filter((line) => line['msg'] === 'database unavailable; requests answered 503');
    expect(outage.map((line) => ({ level: line['level'], server: line['server'], route: line['route'], failedRequests: line['failedRequests'] }))).toEqual([
      { level: 50, server: 'incoming', route: '/quoterequests', failedRequests: 1 },
    ]);
    relay.mend();
    let after = await quote();
    // The pool notices the mended network at its next connection.
    for (let tries = 0; after.status !== 200 && tries < 20; tries += 1) after = await quote();
    expect(after.status).toBe(200);
  });
});
