import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { request } from 'undici';

/**
 * One connector process started from a build (see connector-build.ts), as an operator runs it:
 * its own settings in the environment, its own working directory, logs on stdout. The tests
 * kill it with SIGKILL (a crash: no handler runs) or stop it with SIGTERM (a clean stop).
 */
export interface ChildOptions {
  readonly mainPath: string;
  /** Working directory: the connector reads .env from it, so never the repository. */
  readonly cwd: string;
  /** Settings; only these (and PATH) are passed, so the developer's shell cannot leak in. */
  readonly env: Readonly<Record<string, string>>;
  readonly incomingPort: number;
  /** Gets every log line the process writes, parsed when it is JSON. */
  readonly onLog?: (line: LogLine) => void;
}

export interface LogLine {
  readonly msg?: unknown;
  readonly level?: unknown;
  readonly [key: string]: unknown;
}

const HEALTH_DEADLINE_MS = 30_000;
const HEALTH_POLL_MS = 25;
const STOP_DEADLINE_MS = 15_000;
const TAIL_LINES = 100;

export class ConnectorChild {
  readonly #child: ChildProcess;
  readonly #tail: string[] = [];
  readonly #exited: Promise<number | null>;
  readonly url: string;

  private constructor(options: ChildOptions) {
    this.url = `http://127.0.0.1:${options.incomingPort}`;
    this.#child = spawn(process.execPath, [options.mainPath], {
      cwd: options.cwd,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', OPERATIONS_PORT: '0', ...options.env, HOST: '127.0.0.1', INCOMING_PORT: String(options.incomingPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#exited = new Promise((resolve) => this.#child.once('exit', (code) => resolve(code)));
    for (const stream of [this.#child.stdout, this.#child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (text) => {
        this.#tail.push(text);
        if (this.#tail.length > TAIL_LINES) this.#tail.shift();
        options.onLog?.(parseLine(text));
      });
    }
  }

  /** Starts the process and resolves once GET /health answers 200. */
  static async start(options: ChildOptions): Promise<ConnectorChild> {
    const child = ConnectorChild.spawn(options);
    await child.ready();
    return child;
  }

  /** Starts the process without waiting for it (to kill it while it starts). */
  static spawn(options: ChildOptions): ConnectorChild {
    return new ConnectorChild(options);
  }

  /** Resolves once GET /health answers 200; kills the process when it never does. */
  async ready(): Promise<void> {
    try {
      await this.#waitForHealth();
    } catch (error) {
      await this.kill();
      throw error;
    }
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The last lines the process wrote, for a failure message. */
  tail(): string {
    return this.#tail.join('\n');
  }

  /**
   * A crash: SIGKILL, no shutdown handler runs. Resolves once the process is gone, with true
   * when this SIGKILL ended a live process, and false when the process had already exited
   * (on its own, or by an earlier kill or stop) so that nothing was killed.
   */
  async kill(): Promise<boolean> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
      await this.#exited;
      return false;
    }
    this.#child.kill('SIGKILL');
    await this.#exited;
    // A process that died on its own just before the signal reports its own exit code instead.
    return this.#child.signalCode === 'SIGKILL';
  }

  /** How the process ended ("running" while it runs), for a failure message. */
  exitStatus(): string {
    if (this.#child.signalCode !== null) return `signal ${this.#child.signalCode}`;
    if (this.#child.exitCode !== null) return `exit code ${this.#child.exitCode}`;
    return 'running';
  }

  /** A clean stop (SIGTERM): finishes requests under way and closes the database. */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_DEADLINE_MS);
    });
    const outcome = await Promise.race([this.#exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      await this.kill();
      throw new Error(`connector ${this.pid} did not stop within ${STOP_DEADLINE_MS} ms of SIGTERM:\n${this.tail()}`);
    }
    if (outcome !== 0) throw new Error(`connector ${this.pid} stopped with exit code ${outcome}:\n${this.tail()}`);
  }

  async #waitForHealth(): Promise<void> {
    const deadline = Date.now() + HEALTH_DEADLINE_MS;
    while (Date.now() < deadline) {
      if (this.#child.exitCode !== null) throw new Error(`connector exited with code ${this.#child.exitCode} at start:\n${this.tail()}`);
      try {
        const response = await request(`${this.url}/health`, { headersTimeout: 2000, bodyTimeout: 2000 });
        await response.body.text();
        if (response.statusCode === 200) return;
      } catch (error) {
        // Refused or reset while the process starts: expected, poll again. Anything else is a bug here.
        if (!isConnectionError(error)) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
    }
    throw new Error(`connector did not become healthy within ${HEALTH_DEADLINE_MS} ms:\n${this.tail()}`);
  }
}

/** Errors that mean "nobody answered" (down, starting, killed mid-request), as opposed to an answer. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = 'code' in error ? error.code : undefined;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'UND_ERR_SOCKET' ||
    code === 'UND_ERR_CLOSED' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  );
}

/**
 * Ports below the kernel's ephemeral range (32768-60999 here), for the processes the tests start.
 * A port from that range, found free and released, can be taken by any outgoing connection's
 * local end before the child listens on it (the suites running alongside open thousands), and
 * the child then fails to start with EADDRINUSE. Below the range only a listener can take it, and
 * the ports handed out by this process are never handed out again.
 */
const TEST_PORTS = { first: 20_000, last: 32_767 } as const;
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = TEST_PORTS.first + Math.floor(Math.random() * (TEST_PORTS.last - TEST_PORTS.first + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${TEST_PORTS.first} and ${TEST_PORTS.last}`);
}

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  return listening;
}

function parseLine(text: string): LogLine {
  if (!text.startsWith('{')) return { msg: text };
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? Object.fromEntries(Object.entries(parsed)) : { msg: text };
  } catch {
    // Not JSON after all (a stack trace line, say): keep it as text.
    return { msg: text };
  }
}
