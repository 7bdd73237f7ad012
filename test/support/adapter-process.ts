import { spawn } from 'node:child_process';

/**
 * Runs a built connector (test/crash/support/connector-build.ts) as an operator would, for a
 * start-up that is expected to end by itself: its exit code and what it wrote. Only `env` (and
 * PATH) reach the process, so the developer's shell cannot leak settings in; `cwd` must not be
 * the repository, since the connector reads a .env file from its working directory.
 */
export interface ProcessOutcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runUntilExit(mainPath: string, cwd: string, env: Readonly<Record<string, string>>, timeoutMs = 20_000): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mainPath], { cwd, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', OPERATIONS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`connector ${child.pid} still running after ${timeoutMs} ms; it was expected to stop by itself`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
}
