import { runConnector } from './run-connector.js';

/** Entry point: the connector as configured, started and stopped as src/run-connector.ts says. */
runConnector();
