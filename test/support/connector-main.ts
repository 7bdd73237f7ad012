import { runConnector } from '../../src/run-connector.js';
import { readFaultSettings, withFaults } from './fault-settings.js';

/**
 * Test entry point: the connector as src/main.ts starts it (same settings, .env, signals and
 * exit codes), with fault injection on the institution adapter when CBS_FAULT_RATE is above 0
 * (see fault-settings.ts). The crash and replica suites start it from a build
 * (test/crash/support/connector-build.ts). The CBS_FAULT_* variables are read here and removed
 * from the environment before the connector reads it, since the connector refuses them.
 */
const problems: string[] = [];
const faults = readFaultSettings(process.env, problems);
if (problems.length > 0) {
  process.stderr.write(`fault injection settings:\n${problems.map((problem) => `  ${problem}`).join('\n')}\n`);
  process.exit(2);
}
for (const name of Object.keys(process.env)) {
  if (name.startsWith('CBS_FAULT_')) delete process.env[name];
}
if (faults === undefined) {
  runConnector();
} else {
  process.stderr.write(`institution fault injection is ON (test entry point): ${JSON.stringify(faults)}\n`);
  runConnector({ wrapCoreBanking: (institution) => withFaults(institution, faults) });
}
