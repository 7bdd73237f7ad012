import type { Env } from '../../../config.js';
import { integerSetting, readSettings, requiredSecretSetting, textSetting, urlSetting, type Setting } from '../shared/adapter-settings.js';

/** Settings of the Apache Fineract adapter (CBS_ADAPTER=fineract), all prefixed FINERACT_. */
export const fineractSettings = {
  baseUrl: urlSetting('FINERACT_BASE_URL', 'Fineract API base, e.g. https://fineract.example.org/fineract-provider/api/v1'),
  tenant: textSetting('FINERACT_TENANT', 'Tenant identifier, sent as Fineract-Platform-TenantId', { fallback: 'default', pattern: /^[A-Za-z0-9_-]{1,64}$/, hint: 'a tenant identifier' }),
  username: textSetting('FINERACT_USERNAME', 'API user (basic authentication)', { pattern: /^[^:\s]{1,128}$/, hint: 'a user name without spaces or colons' }),
  password: requiredSecretSetting('FINERACT_PASSWORD', 'Password of the API user'),
  floatAccountId: textSetting('FINERACT_FLOAT_ACCOUNT_ID', 'Savings account id of the prefunded float that funds incoming payments and refunds', { pattern: /^[1-9][0-9]{0,18}$/, hint: 'a savings account id' }),
  paymentTypeId: textSetting('FINERACT_PAYMENT_TYPE_ID', 'Payment type for deposits and withdrawals; our reference is kept in their payment details', { pattern: /^[1-9][0-9]{0,18}$/, hint: 'a payment type id' }),
  timeZone: timeZoneSetting('FINERACT_TIMEZONE', "The tenant's time zone (its timezone_id), in which Fineract dates transactions: holds, deposits and withdrawals are dated with the tenant's day"),
  timeoutMs: integerSetting('FINERACT_TIMEOUT_MS', 'Time allowed for each answer', 15_000, 50, 120_000),
  connectTimeoutMs: integerSetting('FINERACT_CONNECT_TIMEOUT_MS', 'Time allowed to open a connection', 3000, 50, 60_000),
  maxResponseBytes: integerSetting('FINERACT_MAX_RESPONSE_BYTES', 'Largest answer accepted (account statements are read whole)', 16_777_216, 65_536, 268_435_456),
} as const;

export interface FineractOptions {
  readonly baseUrl: string;
  readonly tenant: string;
  readonly username: string;
  readonly password: string;
  readonly floatAccountId: string;
  readonly paymentTypeId: string;
  /** IANA time zone of the tenant, e.g. "Africa/Lusaka". */
  readonly timeZone: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxResponseBytes: number;
}

export function readFineractOptions(env: Env): { options: FineractOptions } | { problems: string[] } {
  return readSettings(fineractSettings, env);
}

/**
 * An IANA time zone, "UTC" when unset. Checked by building a formatter for it, which refuses a
 * zone the runtime's time zone database does not know, so a typo stops start-up.
 */
function timeZoneSetting(env: string, description: string): Setting<string> {
  return {
    env,
    description,
    secret: false,
    defaultText: 'UTC',
    read(text) {
      const value = text ?? 'UTC';
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: value });
      } catch {
        return { problem: `"${value.slice(0, 64)}" is not a time zone (an IANA name such as Africa/Lusaka)` };
      }
      return { value };
    },
  };
}
