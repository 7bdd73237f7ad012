import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'undici';

/** A connector started from the build (dist/) as a child process, as an operator runs it. */
export interface ConnectorProcess {
  readonly child: ChildProcess;
  readonly incomingUrl: string;
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number;
  /** CPU time used so far by all of the process's threads, user and system, in milliseconds. */
  cpuMs(): number;
  stop(): Promise<void>;
}

/**
 * The connector's default V8 heap limits, the same as `npm start` (package.json). Semi-spaces of
 * 8 MiB (node's default 16) and an old generation capped at 1,024 MiB (node's default is a share
 * of the machine's memory) keep its resident memory under load below 150 MiB: V8 sizes its first
 * old-generation limit from the cap, so the heap is collected sooner. The cap leaves room for an
 * operator's largest work (a reconciliation of 100,000 records, a 50 MiB identifier upload), which
 * 160 MiB did not. The limits go first in NODE_OPTIONS, so that an operator's own NODE_OPTIONS,
 * read later, can change them.
 */
export const CONNECTOR_HEAP_OPTIONS = '--max-old-space-size=1024 --max-semi-space-size=8';

/**
 * BENCH_NODE_ARGS="--flag ...": node flags for the connector processes instead of the default
 * heap limits (an empty value runs them on node's own defaults).
 */
function nodeArgs(): { args: string[]; nodeOptions: string | undefined } {
  const bench = process.env['BENCH_NODE_ARGS'];
  if (bench !== undefined) return { args: bench.split(' ').filter((arg) => arg !== ''), nodeOptions: process.env['NODE_OPTIONS'] };
  return { args: [], nodeOptions: `${CONNECTOR_HEAP_OPTIONS} ${process.env['NODE_OPTIONS'] ?? ''}`.trim() };
}

/**
 * The environment of a benchmark connector: the inherited one, the bench's own defaults, then
 * the deployment's settings and its port. Every deployment gets the defaults, whatever its mode:
 * autocannon keeps each connection for the whole run, and the production limit of 1,000 requests
 * per connection (then 503) would cap a fast scenario instead of measuring it.
 */
export function connectorEnvironment(
  env: Readonly<Record<string, string>>,
  incomingPort: number,
  inherited: NodeJS.ProcessEnv = process.env,
  nodeOptions: string | undefined = undefined,
): NodeJS.ProcessEnv {
  return {
    ...inherited,
    ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }),
    LOG_LEVEL: 'warn',
    OPERATIONS_PORT: '0',
    MAX_REQUESTS_PER_SOCKET: '1000000',
    ...env,
    INCOMING_PORT: String(incomingPort),
  };
}

export async function startConnector(env: Record<string, string>, incomingPort: number): Promise<ConnectorProcess> {
  const { args, nodeOptions } = nodeArgs();
  const child = spawn(process.execPath, [...args, 'dist/src/main.js'], {
    env: connectorEnvironment(env, incomingPort, process.env, nodeOptions),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const incomingUrl = `http://127.0.0.1:${incomingPort}`;
  await waitForHealth(incomingUrl, child);
  return {
    child,
    incomingUrl,
    peakRssMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const match = /VmHWM:\s+(\d+) kB/.exec(status);
      return match?.[1] === undefined ? 0 : Math.round(Number(match[1]) / 1024);
    },
    cpuMs: () => processCpuMs(readFileSync(`/proc/${child.pid}/stat`, 'utf8')),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`connector exited with code ${child.exitCode}`);
    try {
      const response = await request(`${url}/health`, { headersTimeout: 1000, bodyTimeout: 1000 });
      await response.body.text();
      if (response.statusCode === 200) return;
    } catch {
      // Not listening yet: try again shortly.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('connector did not become healthy within 30 s');
}

/** Linux's clock tick for /proc's CPU times (USER_HZ, 100 on every architecture node runs on). */
const TICKS_PER_SECOND = 100;

/**
 * utime + stime of /proc/<pid>/stat, in milliseconds: fields 14 and 15, counted after the
 * command name, which is in parentheses and may itself hold spaces.
 */
export function processCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (the state), so utime (14) and stime (15) are at 11 and 12.
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) throw new Error(`unreadable /proc stat line: ${stat.slice(0, 80)}`);
  return (ticks * 1000) / TICKS_PER_SECOND;
}
