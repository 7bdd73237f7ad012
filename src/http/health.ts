import type { FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE } from '../domain/errors.js';

export interface HealthCheck {
  /** Each named check resolves when the dependency answers. */
  readonly checks: Readonly<Record<string, () => Promise<void>>>;
  readonly timeoutMs: number;
}

type CheckResult = 'ok' | 'failed' | 'timeout';

/** GET /health: really asks the store and the institution, each with a time limit. */
export function registerHealth(server: FastifyInstance, health: HealthCheck): void {
  server.get('/health', async (_request, reply) => {
    const names = Object.keys(health.checks);
    const results = await Promise.all(names.map((name) => runCheck(health.checks[name], health.timeoutMs)));
    const checks = Object.fromEntries(names.map((name, index) => [name, results[index]]));
    const healthy = results.every((result) => result === 'ok');
    if (healthy) return reply.status(200).send({ status: 'ok', checks });
    const failing = names.filter((_, index) => results[index] !== 'ok');
    return reply.status(503).send({ statusCode: ERROR_CATALOGUE.InstitutionUnavailable.code, message: `unhealthy: ${failing.join(', ')}`, status: 'unhealthy', checks });
  });
}

async function runCheck(check: (() => Promise<void>) | undefined, timeoutMs: number): Promise<CheckResult> {
  if (check === undefined) return 'failed';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    return await Promise.race([check().then((): CheckResult => 'ok'), timeout]);
  } catch {
    return 'failed';
  } finally {
    clearTimeout(timer);
  }
}
