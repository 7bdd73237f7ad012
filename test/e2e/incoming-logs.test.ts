import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { buildFxpApp } from '../../src/fxp/fxp-app.js';
import { loadConfig } from '../../src/config.js';
import { quoteRequest } from '../support/backend-bodies.js';
import { customerWith } from '../support/sandbox-harness.js';

describe('request logs', () => {
  it('one JSON line per request with method, route, status, duration and ids; no names or payload', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cc-logs-'));
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const config = loadConfig({ DATABASE_URL: join(dir, 'c.db'), INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', HOST: '127.0.0.1', API_TYPE: 'iso20022', ISO_REQUIRED_PAYER_KEYS: '' });
    const app = await buildApp(config, pino({ level: 'info' }, sink));
    try {
      const { incomingUrl } = await app.start();
      const payee = customerWith((c) => c.status === 'active' && c.postalAddress !== undefined);
      const body = quoteRequest({ payeeMsisdn: payee.idValue, amount: '10' });
      const quote = await request(`${incomingUrl}/quoterequests`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      expect(quote.statusCode).toBe(200);
      await quote.body.text();
      const party = await request(`${incomingUrl}/parties/MSISDN/${payee.idValue}`);
      expect(party.statusCode).toBe(200);
      await party.body.text();

      const requestLines = lines.filter((line) => line['msg'] === 'request');
      expect(requestLines).toHaveLength(2);
      expect(requestLines[0]).toMatchObject({ server: 'incoming', method: 'POST', route: '/quoterequests', status: 200, quoteId: body['quoteId'] });
      expect(typeof requestLines[0]?.['durationMs']).toBe('number');
      expect(requestLines[1]).toMatchObject({ method: 'GET', route: '/parties/:idType/:idValue', status: 200 });
      const everything = lines.map((line) => JSON.stringify(line)).join('\n');
      for (const secret of [payee.firstName, payee.lastName, payee.postalAddress?.StrtNm, payee.dateOfBirth, 'Payer Person']) {
        if (secret !== undefined) expect(everything).not.toContain(secret);
      }
    } finally {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an institution or exchange over plain http on another machine is named at start in a warning; https and loopback are not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cc-logs-'));
    const warnings = async (baseUrl: string, fx = false): Promise<unknown[]> => {
      const lines: Array<Record<string, unknown>> = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      });
      const base = { DATABASE_URL: join(dir, 'c.db'), INCOMING_PORT: '0', OUTGOING_PORT: '0', OPERATIONS_PORT: '0', HOST: '127.0.0.1' };
      if (fx) {
        const app = await buildFxpApp(loadConfig({ ...base, CONNECTOR_MODE: 'fxp', FX_EXCHANGE_ADAPTER: 'rest', FX_REST_BASE_URL: baseUrl }), pino({ level: 'warn' }, sink));
        await app.stop();
      } else {
        const app = await buildApp(loadConfig({ ...base, CBS_ADAPTER: 'rest', REST_CBS_BASE_URL: baseUrl }), pino({ level: 'warn' }, sink));
        await app.stop();
      }
      return lines.filter((line) => line['level'] === 40).map((line) => ({ adapter: line['adapter'], exchange: line['exchange'], msg: line['msg'] }));
    };
    try {
      // Never contacted: the adapter is built, not started.
      expect(await warnings('http://192.0.2.10:8080/cbs')).toEqual([
        {
          adapter: 'rest',
          exchange: undefined,
          msg: 'REST_CBS_BASE_URL uses plain http to 192.0.2.10: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
        },
      ]);
      expect(await warnings('http://fx.example.org/v1', true)).toEqual([
        {
          adapter: undefined,
          exchange: 'rest',
          msg: 'FX_REST_BASE_URL uses plain http to fx.example.org: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https',
        },
      ]);
      expect(await warnings('https://192.0.2.10:8443/cbs')).toEqual([]);
      expect(await warnings('http://127.0.0.1:8080/cbs')).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
