import type { Env } from '../../../config.js';
import {
  currencySetting,
  integerSetting,
  optionalTextSetting,
  readSettings,
  requiredSecretSetting,
  textSetting,
  urlSetting,
} from '../shared/adapter-settings.js';

/** Settings of the Airtel Money adapter (CBS_ADAPTER=airtel), all prefixed AIRTEL_. */
export const airtelSettings = {
  baseUrl: urlSetting('AIRTEL_BASE_URL', 'Airtel open API base, e.g. https://openapi.airtel.africa (or the UAT host)'),
  clientId: textSetting('AIRTEL_CLIENT_ID', 'OAuth2 client id from the Airtel developer portal', { pattern: /^[^\s]{1,256}$/, hint: 'a client id without spaces' }),
  clientSecret: requiredSecretSetting('AIRTEL_CLIENT_SECRET', 'OAuth2 client secret'),
  country: textSetting('AIRTEL_COUNTRY', 'Country of the Airtel operation (ISO 3166 alpha-2), sent as X-Country', { pattern: /^[A-Z]{2}$/, hint: 'an ISO 3166 alpha-2 code' }),
  currency: currencySetting('AIRTEL_CURRENCY', 'Currency of the wallets (ISO 4217), sent as X-Currency'),
  pinEncrypted: requiredSecretSetting('AIRTEL_PIN_ENCRYPTED', 'Disbursement PIN, already RSA-encrypted with Airtel\'s public key (base64)', {
    pattern: /^[A-Za-z0-9+/=_-]{16,4096}$/,
    hint: 'base64 text (encrypt the PIN with Airtel\'s public key first)',
  }),
  dialingCode: optionalTextSetting('AIRTEL_DIALING_CODE', 'Country calling code taken off MSISDNs; defaults from AIRTEL_COUNTRY', {
    pattern: /^[1-9][0-9]{0,3}$/,
    hint: 'a country calling code such as 260',
    defaultText: '(from AIRTEL_COUNTRY)',
  }),
  timeoutMs: integerSetting('AIRTEL_TIMEOUT_MS', 'Time allowed for each answer', 30_000, 50, 120_000),
  connectTimeoutMs: integerSetting('AIRTEL_CONNECT_TIMEOUT_MS', 'Time allowed to open a connection', 5000, 50, 60_000),
} as const;

/** Calling codes of the countries where Airtel Money runs. */
const DIALING_CODES: Readonly<Record<string, string>> = {
  CD: '243', CG: '242', GA: '241', KE: '254', MG: '261', MW: '265', NE: '227', NG: '234', RW: '250', SC: '248', TD: '235', TZ: '255', UG: '256', ZM: '260',
};

export interface AirtelOptions {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly country: string;
  readonly currency: string;
  readonly pinEncrypted: string;
  readonly dialingCode: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
}

export function readAirtelOptions(env: Env): { options: AirtelOptions } | { problems: string[] } {
  const read = readSettings(airtelSettings, env);
  if ('problems' in read) return read;
  const dialingCode = read.options.dialingCode ?? DIALING_CODES[read.options.country];
  if (dialingCode === undefined) {
    return { problems: [`AIRTEL_DIALING_CODE: required, since AIRTEL_COUNTRY ${read.options.country} has no known calling code`] };
  }
  return { options: { ...read.options, dialingCode } };
}
