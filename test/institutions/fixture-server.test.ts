import { afterEach, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from './fixture-server.js';

/** The ambiguous outcomes every fixture can play: when the write lands and what the client hears. */
describe('fixture server faults', () => {
  let server: FixtureServer | undefined;
  let applied: number[] = [];
  afterEach(async () => {
    await server?.close();
    applied = [];
  });

  async function start(): Promise<FixtureServer> {
    server = await startFixtureServer({
      handle: () => {
        applied.push(Date.now());
        return { status: 200, body: { ok: true } };
      },
      isWrite: (request) => request.method === 'POST',
    });
    return server;
  }

  it('slow-before applies the write only after the delay, then answers', async () => {
    const fixture = await start();
    fixture.inject('slow-before', 'next-write', 1, 0, 300);
    const sent = Date.now();
    const answer = await fetch(`${fixture.url}/x`, { method: 'POST', body: '{}' });
    expect(answer.status).toBe(200);
    expect(applied).toHaveLength(1);
    expect((applied[0] ?? 0) - sent).toBeGreaterThanOrEqual(290);
  });

  it('slow-before keeps running after the client gave up: the write lands later', async () => {
    const fixture = await start();
    fixture.inject('slow-before', 'next-write', 1, 0, 300);
    await expect(fetch(`${fixture.url}/x`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(50) })).rejects.toThrow();
    expect(applied).toHaveLength(0);
    // Polled, not slept: the write lands once the 300 ms delay is over, however busy the machine.
    for (let tries = 0; tries < 250 && applied.length === 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(applied).toHaveLength(1);
  });

  it('applied-then-5xx applies the write and answers 500; server-error applies nothing', async () => {
    const fixture = await start();
    fixture.inject('applied-then-5xx', 'next-write');
    expect((await fetch(`${fixture.url}/x`, { method: 'POST', body: '{}' })).status).toBe(500);
    expect(applied).toHaveLength(1);
    fixture.inject('server-error', 'next-write');
    expect((await fetch(`${fixture.url}/x`, { method: 'POST', body: '{}' })).status).toBe(503);
    expect(applied).toHaveLength(1);
    expect(fixture.faultCounts).toEqual({ 'applied-then-5xx': 1, 'server-error': 1 });
  });

  it('chaos replays the same faults for the same seed, on writes only', async () => {
    const fixture = await start();
    const statuses = async (): Promise<number[]> => {
      fixture.chaos({ seed: 7, rate: 0.5, faults: ['server-error', 'applied-then-5xx'], on: 'next-write' });
      const seen: number[] = [];
      for (let i = 0; i < 20; i += 1) seen.push((await fetch(`${fixture.url}/x`, { method: 'POST', body: '{}' })).status);
      expect((await fetch(`${fixture.url}/x`)).status).toBe(200);
      fixture.chaos(undefined);
      return seen;
    };
    const first = await statuses();
    // Seed 7 at rate 0.5: 6 writes refused (503, not applied), 5 applied then 500, 9 answered.
    expect(first).toEqual([503, 200, 200, 200, 503, 500, 200, 503, 200, 200, 503, 500, 500, 500, 503, 503, 200, 200, 500, 200]);
    // The 14 writes that reached the books, and the read after them (never a fault).
    expect(applied).toHaveLength(15);
    expect(fixture.faultCounts).toEqual({ 'server-error': 6, 'applied-then-5xx': 5 });
    const second = await statuses();
    expect(second).toEqual(first);
    expect(applied).toHaveLength(30);
    expect(fixture.faultCounts).toEqual({ 'server-error': 12, 'applied-then-5xx': 10 });
  });
});
