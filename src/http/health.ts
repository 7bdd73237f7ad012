import type { FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE, isConnectorError } from '../domain/errors.js';
import { InstitutionHealthError, type InstitutionHealthCause } from '../ports/core-banking.js';

export interface HealthCheck {
  /** Each named check resolves when the dependency answers. */
  readonly checks: Readonly<Record<string, () => Promise<void>>>;
  readonly timeoutMs: number;
  /** Extra facts for the healthy answer (FX mode: the rate table's age). */
  readonly details?: () => Record<string, unknown>;
}

/** What one check found: ok, or why not (an institution's cause when it said one). */
export type CheckResult = 'ok' | 'failed' | 'timeout' | InstitutionHealthCause;

/**
 * GET /health: really asks the store and the institution, each with a time limit. Healthy: 200
 * `{status: ok, checks}`. Unhealthy: 503 with the error contract's body only, its message naming
 * each failing check and why, e.g. `unhealthy: institution credentials-refused`.
 */
export function registerHealth(server: FastifyInstance, health: HealthCheck): void {
  server.get('/health', async (_request, reply) => {
    const checks = await runChecks(health);
    const failing = Object.entries(checks).filter(([, result]) => result !== 'ok');
    if (failing.length === 0) return reply.status(200).send({ status: 'ok', checks, ...health.details?.() });
    const message = `unhealthy: ${failing.map(([name, result]) => `${name} ${result}`).join(', ')}`;
    return reply.status(503).send({ statusCode: ERROR_CATALOGUE.InstitutionUnavailable.code, message: message.slice(0, 128) });
  });
}

/** Runs every check at once; used by /health and by the start-up log. */
export async function runChecks(health: HealthCheck): Promise<Record<string, CheckResult>> {
  const names = Object.keys(health.checks);
  const results = await Promise.all(names.map((name) => runCheck(health.checks[name], health.timeoutMs)));
  return Object.fromEntries(names.map((name, index) => [name, results[index] ?? 'failed']));
}

async function runCheck(check: (() => Promise<void>) | undefined, timeoutMs: number): Promise<CheckResult> {
  if (check === undefined) return 'failed';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    return await Promise.race([check().then((): CheckResult => 'ok'), timeout]);
  } catch (error) {
    return causeOf(error);
  } finally {
    clearTimeout(timer);
  }
}

/** The cause an adapter stated; the transport's own outcome otherwise. */
export function causeOf(error: unknown): CheckResult {
  const stated = findHealthError(error);
  if (stated !== undefined) return stated.healthCause;
  if (isConnectorError(error, 'InstitutionTimeout')) return 'timeout';
  if (isConnectorError(error, 'InstitutionUnavailable')) return 'unavailable';
  return 'failed';
}

/** The InstitutionHealthError itself or one it was wrapped around (the institution boundary wraps). */
function findHealthError(error: unknown): InstitutionHealthError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== undefined; depth += 1) {
    if (current instanceof InstitutionHealthError) return current;
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}
