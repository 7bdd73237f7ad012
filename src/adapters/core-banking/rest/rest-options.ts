import type { Env } from '../../../config.js';
import type { OutgoingFlow } from '../../../ports/core-banking.js';
import { flowSetting, integerSetting, optionalUrlSetting, readSettings, secretSetting, urlSetting } from '../shared/adapter-settings.js';

/** Settings of the reference API adapter (CBS_ADAPTER=rest), all prefixed REST_CBS_. */
export const restSettings = {
  baseUrl: urlSetting('REST_CBS_BASE_URL', 'Base URL of the institution\'s implementation of docs/reference-core-banking-api.yaml'),
  apiKey: secretSetting('REST_CBS_API_KEY', 'Bearer token sent as Authorization; leave unset when the API needs none', { optional: true }),
  outgoingFlow: flowSetting('REST_CBS_OUTGOING_FLOW', 'bank'),
  callbackUrl: optionalUrlSetting(
    'REST_CBS_CALLBACK_URL',
    "Sent as a collection's callbackUrl: the connector's PUT /callback as the institution reaches it (mobile-operator flow); unset, the connector asks the status endpoint",
  ),
  timeoutMs: integerSetting('REST_CBS_TIMEOUT_MS', 'Time allowed for each answer (headers, then between body chunks)', 10_000, 50, 120_000),
  connectTimeoutMs: integerSetting('REST_CBS_CONNECT_TIMEOUT_MS', 'Time allowed to open a connection', 3000, 50, 60_000),
} as const;

export interface RestOptions {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly outgoingFlow: OutgoingFlow;
  readonly callbackUrl: string | undefined;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
}

export function readRestOptions(env: Env): { options: RestOptions } | { problems: string[] } {
  return readSettings(restSettings, env);
}
