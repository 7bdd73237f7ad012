import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Builds the connector from the working tree with the project's own tsc (tsconfig.connector.json:
 * src/ as tsconfig.json builds it, plus the test entry point), into a directory of its
 * own under dist/ (ignored by git), so that a test file runs exactly the code under test and
 * never races another build writing dist/src. From there Node resolves the packages in the
 * repository's node_modules and reads "type": "module" from its package.json, as for dist/.
 */
export interface ConnectorBuild {
  /** Absolute path of the built entry point (main.js), as an operator runs it. */
  readonly mainPath: string;
  /**
   * Absolute path of the built test entry point (test/support/connector-main.ts): the same
   * connector, with fault injection on the institution adapter when CBS_FAULT_RATE is set.
   */
  readonly testMainPath: string;
  remove(): void;
}

const REPOSITORY = resolve(import.meta.dirname, '../../..');
const BUILD_TIMEOUT_MS = 120_000;

export async function buildConnector(): Promise<ConnectorBuild> {
  const outDir = join(REPOSITORY, 'dist', `.test-build-${randomBytes(6).toString('hex')}`);
  const tsc = join(REPOSITORY, 'node_modules', 'typescript', 'bin', 'tsc');
  await new Promise<void>((done, fail) => {
    execFile(
      process.execPath,
      [tsc, '-p', join(import.meta.dirname, 'tsconfig.connector.json'), '--outDir', outDir],
      { cwd: REPOSITORY, timeout: BUILD_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout) => {
        // tsc emits even when a file elsewhere in the tree has a type error; `npm test` fails on
        // those by itself (it typechecks first), so here only a missing entry point counts.
        if (error === null || (existsSync(join(outDir, 'src', 'main.js')) && existsSync(join(outDir, 'test', 'support', 'connector-main.js')))) return done();
        fail(new Error(`building the connector failed:\n${stdout.slice(0, 4000)}`, { cause: error }));
      },
    );
  });
  const mainPath = join(outDir, 'src', 'main.js');
  return {
    mainPath,
    testMainPath: join(outDir, 'test', 'support', 'connector-main.js'),
    remove: () => rmSync(outDir, { recursive: true, force: true }),
  };
}
