import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../ports/logger.js';
import { OutageLog, createServer } from './server-common.js';

function sinkLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('a database outage at the HTTP layer', () => {
  it('answers a handler\'s lost database 503 2003 and logs it as an outage, never as an unexpected error', async () => {
    const { logger, lines } = sinkLogger();
    const server = createServer({ logger, bodyLimitBytes: 100_000, name: 'incoming' });
    server.get('/x', async () => {
      throw refused();
    });
    try {
      const answer = await server.inject({ method: 'GET', url: '/x', headers: { host: '127.0.0.1' } });
      expect({ status: answer.statusCode, body: answer.json() }).toEqual({ status: 503, body: { statusCode: '2003', message: 'Service currently unavailable: the database cannot be reached; retry later' } });
      expect(lines.filter((line) => Number(line['level']) >= 50).map((line) => [line['level'], line['msg'], line['failedRequests']])).toEqual([[50, 'database unavailable; requests answered 503', 1]]);
    } finally {
      await server.close();
    }
  });

  it('does not take a client that hung up mid-body for a database outage', async () => {
    const { logger, lines } = sinkLogger();
    const server = createServer({ logger, bodyLimitBytes: 100_000, name: 'incoming' });
    server.post('/x', async () => ({ ok: true }));
    await server.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = server.server.address() as { port: number };
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":');
      await sleep(200);
      socket.destroy();
      await sleep(300);
      // The server still serves, and nothing was said of the database.
      const after = await request(`http://127.0.0.1:${port}/x`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      expect(after.statusCode).toBe(200);
      await after.body.text();
      expect(lines.filter((line) => line['msg'] === 'database unavailable; requests answered 503' || Number(line['level']) >= 60)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('OutageLog', () => {
  it('logs the first failure at once, and those of the rest of the interval at its end', async () => {
    const { logger, lines } = sinkLogger();
    const log = new OutageLog(logger, 'incoming', 150);
    log.record('/quoterequests', refused());
    log.record('/transfers', refused());
    log.record('/transfers', refused());
    const told = (): unknown[] => lines.map((line) => [line['route'], line['failedRequests'], line['err'] === undefined ? 'no error' : 'error']);
    expect(told()).toEqual([['/quoterequests', 1, 'error']]);
    for (let waited = 0; told().length < 2 && waited < 5000; waited += 20) await sleep(20);
    expect(told()).toEqual([
      ['/quoterequests', 1, 'error'],
      ['/transfers', 2, 'no error'],
    ]);
    // A new interval (timers never fire early: more than 150 ms since that line): its first failure is told at once again.
    await sleep(200);
    log.record('/parties', refused());
    expect(told()).toHaveLength(3);
    expect(told()[2]).toEqual(['/parties', 1, 'error']);
  });
});
