import Fastify from 'fastify';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../ports/logger.js';
import type { IdentifierJobs, LineResult } from './identifier-jobs.js';
import { registerIdentifierRoutes } from './identifier-routes.js';
import type { IdentifierRegistration } from './registration.js';

const JOB = 'a'.repeat(32);

function registered(line: number): LineResult {
  return { line, idType: 'MSISDN', idValue: `2609710000${line}`, idSubValue: null, outcome: 'REGISTERED', message: null };
}

/** The report route over jobs whose second page fails, and a logger that keeps what it is told. */
async function reportServer(): Promise<{ base: string; logged: Array<[string, object, string]>; pagesAsked: () => number; close: () => Promise<void> }> {
  const logged: Array<[string, object, string]> = [];
  const keep =
    (level: string) =>
    (bindings: object, message: string): void => {
      logged.push([level, bindings, message]);
    };
  const logger: Logger = { fatal: keep('fatal'), error: keep('error'), warn: keep('warn'), info: keep('info'), debug: keep('debug') };
  let asked = 0;
  const jobs = {
    async *linePages(): AsyncGenerator<LineResult[]> {
      asked += 1;
      yield [registered(2), registered(3)];
      throw new Error('connection terminated unexpectedly');
    },
  } as unknown as IdentifierJobs;
  const server = Fastify();
  // Any other identifier route refuses: a HEAD on the report's path falls to the status route's
  // HEAD (/identifiers/:idType/:idValue/:idSubValue), whose real answer for idType "jobs" is a refusal too.
  const registration = {
    status: async () => {
      throw new Error('not an identifier');
    },
  } as unknown as IdentifierRegistration;
  registerIdentifierRoutes(server, registration, jobs, async () => undefined, logger);
  const base = await server.listen({ host: '127.0.0.1', port: 0 });
  return { base, logged, pagesAsked: () => asked, close: () => server.close() };
}

describe('the job report route', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('cuts the answer off and logs why when the store fails after the first page', async () => {
    const server = await reportServer();
    close = server.close;
    const answer = await request(`${server.base}/identifiers/jobs/${JOB}/lines?format=csv`);
    expect(answer.statusCode).toBe(200);
    // The lines already sent arrive; the answer never completes.
    await expect(answer.body.text()).rejects.toThrow('other side closed');
    expect(server.logged).toEqual([
      [
        'error',
        { server: 'outgoing', route: '/identifiers/jobs/:jobId/lines', jobId: JOB, err: new Error('connection terminated unexpectedly') },
        'job report cut off: the store failed after its first page',
      ],
    ]);
  });

  it('has no HEAD, which would answer before the report is read and read it for nothing', async () => {
    const server = await reportServer();
    close = server.close;
    const answer = await request(`${server.base}/identifiers/jobs/${JOB}/lines`, { method: 'HEAD' });
    // The status route's HEAD answered (its stub throws: 500 on this bare server), not the report's.
    expect(answer.statusCode).toBe(500);
    await answer.body.dump();
    expect(server.pagesAsked()).toBe(0);
  });
});
