import type { Env } from '../../../config.js';
import { integerSetting, readSettings, requiredSecretSetting, urlSetting } from '../shared/adapter-settings.js';

/** Settings of the MiniBank toy adapter (CBS_ADAPTER=minibank), all prefixed MINIBANK_. */
export const minibankSettings = {
  baseUrl: urlSetting('MINIBANK_BASE_URL', 'MiniBank API base URL'),
  apiKey: requiredSecretSetting('MINIBANK_API_KEY', 'API key, sent as X-Api-Key'),
  timeoutMs: integerSetting('MINIBANK_TIMEOUT_MS', 'Time allowed for each answer', 10_000, 50, 120_000),
} as const;

export interface MiniBankOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly timeoutMs: number;
}

export function readMiniBankOptions(env: Env): { options: MiniBankOptions } | { problems: string[] } {
  return readSettings(minibankSettings, env);
}
