import { existsSync } from 'node:fs';
import { config as loadDotenv } from 'dotenv';
import { pino } from 'pino';
import { buildApp, type AppOverrides } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { buildFxpApp } from './fxp/fxp-app.js';
import { applyRuntimeFlags } from './runtime-flags.js';

/**
 * The connector as a process: read the settings (environment, then an optional .env file),
 * build the connector, start it, and stop it cleanly on SIGINT/SIGTERM. A settings problem
 * exits with code 2, any other failure to start with code 1.
 *
 * `overrides` are passed to buildApp (bank or wallet mode); src/main.ts passes none. They do not
 * apply to the FX provider mode, which refuses to start when given any.
 */
export function runConnector(overrides: AppOverrides = {}): void {
  start(overrides).catch((error: unknown) => {
    process.stderr.write(`core connector failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

async function start(overrides: AppOverrides): Promise<void> {
  applyRuntimeFlags();
  if (existsSync('.env')) loadDotenv({ path: '.env', quiet: true });
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  if (config.mode === 'fxp' && Object.keys(overrides).length > 0) throw new Error('the overrides given apply to CONNECTOR_MODE=dfsp only');
  const logger = pino({ level: config.logLevel, base: { service: 'core-connector', mode: config.mode } });
  // One product, two modes: a bank or wallet (dfsp, src/), or a foreign exchange provider (fxp, src/fxp/).
  const app = config.mode === 'fxp' ? await buildFxpApp(config, logger) : await buildApp(config, logger, overrides);
  await app.start();

  // A stop has SHUTDOWN_TIMEOUT_MS, its drain included: past it the process says what it was still
  // waiting for, closes every connection and exits 1; the work left is the recovery workers'.
  // A second signal exits at once.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      logger.error({ signal, waitingFor: app.stopWaitingFor() }, 'second stop signal: exiting at once');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, timeoutMs: config.shutdown.timeoutMs, drainMs: config.shutdown.drainMs }, 'stopping');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdown.timeoutMs, waitingFor: app.stopWaitingFor() }, 'stop did not finish within SHUTDOWN_TIMEOUT_MS: closing every connection and exiting');
      app.dropConnections();
      process.exit(1);
    }, config.shutdown.timeoutMs);
    deadline.unref();
    app.stop().then(
      () => {
        clearTimeout(deadline);
        process.exit(0);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
