import type { FastifyInstance } from 'fastify';
import { closeServer, dropConnections, refuseNewRequests, setDraining } from '../http/server-common.js';
import type { Logger } from '../ports/logger.js';

/**
 * The steps of a stop, named, so that a stop past its deadline can say what it was still waiting
 * for. Each step is logged at info as it begins.
 */
export class StopSteps {
  readonly #waiting = new Set<string>();

  constructor(private readonly logger: Logger) {}

  async step<T>(name: string, work: () => Promise<T>): Promise<T> {
    this.#waiting.add(name);
    this.logger.info({ waitingFor: name }, `stopping: waiting for ${name}`);
    try {
      return await work();
    } finally {
      this.#waiting.delete(name);
    }
  }

  /** The steps under way, in the order they began. */
  waitingFor(): string[] {
    return [...this.#waiting];
  }
}

/** What main needs of either mode's app to stop it, and to cut a stop short at its deadline. */
export interface Stoppable {
  stop(): Promise<void>;
  /** The steps of the stop still under way (empty before and after one). */
  stopWaitingFor(): string[];
  /** Closes every connection of the servers at once: the stop's deadline has passed. */
  dropConnections(): void;
}

/**
 * The stop's first part, common to both modes: the drain (/health answers 503 while every other
 * route serves, so that the orchestrator takes the replica out of its endpoints before requests
 * are refused), then every new request answered 503 2003.
 */
export async function drainThenRefuse(servers: readonly FastifyInstance[], drainMs: number, steps: StopSteps): Promise<void> {
  if (drainMs > 0) {
    await steps.step(`the drain (${drainMs} ms: /health answers 503)`, async () => {
      for (const server of servers) setDraining(server, true);
      await new Promise((resolve) => setTimeout(resolve, drainMs));
    });
  }
  for (const server of servers) refuseNewRequests(server);
}

/** The stop's closing of the servers: see closeServer. */
export function closeServers(servers: readonly FastifyInstance[], steps: StopSteps): Promise<void> {
  return steps.step('requests under way', async () => {
    await Promise.all(servers.map((server) => closeServer(server)));
  });
}

export function dropAllConnections(servers: readonly FastifyInstance[]): void {
  for (const server of servers) dropConnections(server);
}
