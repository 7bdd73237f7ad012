import { RECONCILIATION_MAX_RECORDS } from './aggregate/reconciliation.js';
import { urlSetting } from './adapters/core-banking/shared/adapter-settings.js';
import { SEGMENT_TYPES, type Segment } from './domain/identifier-rules.js';
import { isCurrencyCode } from './domain/currencies.js';
import { isPartyIdType, type PartyIdType } from './domain/identifiers.js';
import type { ApiType } from './domain/iso20022.js';
import { parseDecimal, compareDecimal } from './domain/money.js';
import { readAdapterOptions, type AdapterOptions } from './adapters/core-banking/registry.js';
import { DEFAULT_DATABASE_INTERVAL_MS } from './metrics/connector-metrics.js';
import { checkDemoCredentialsNotProxied, checkDemoCredentialsStayLocal, readClientTls, readListen, type ClientTlsFiles, type ListenConfig } from './listen-security.js';

/**
 * All settings, read from environment variables (run-connector.ts also loads an optional .env file).
 * loadConfig checks every setting and reports every problem at once; the defaults are the
 * demo set-up so that `npm start` works with no configuration at all.
 */

export interface StoreConfig {
  readonly kind: 'sqlite' | 'postgres';
  /** SQLite: the file path. PostgreSQL: the connection URL. */
  readonly location: string;
  readonly poolMax: number;
  /** PostgreSQL: parameterised statements run as named prepared statements (default true). */
  readonly preparedStatements?: boolean | undefined;
  /** PostgreSQL: commit groups and read groups, statements arriving together sent together (default true). */
  readonly statementGroups?: boolean | undefined;
}

/** FX provider mode (CONNECTOR_MODE=fxp), src/fxp/. */
export interface FxConfig {
  readonly exchangeAdapter: 'sandbox' | 'rest';
  /** FX_EXCHANGE_ADAPTER=rest: an exchange implementing docs/reference-exchange-api.yaml. */
  readonly rest: { readonly baseUrl: string; readonly apiKey: string | undefined; readonly timeoutMs: number } | undefined;
  /** JSON file of the sandbox exchange's liquidity and pairs; the demo exchange when unset. */
  readonly sandboxFile: string | undefined;
  readonly quoteExpiryMs: number;
  readonly rateRefreshMs: number;
  readonly rateMaxAgeMs: number;
}

export interface Config {
  readonly supportedIdType: PartyIdType;
  readonly currency: string;
  /** Fee percentage as a decimal string, e.g. "1.5". */
  readonly sendingServiceCharge: string;
  /** Quote validity (EXPIRATION_DURATION, in hours). */
  readonly expirationMs: number;
  readonly sdkBaseUrl: string;
  readonly lei: string;
  /** Where each server listens (host, optional TLS): loopback by default. */
  readonly listen: { readonly incoming: ListenConfig; readonly outgoing: ListenConfig };
  readonly operations: OperationsConfig;
  /** TLS of our calls to the switch connector's outbound API (an https SDK_BASE_URL). */
  readonly sdkTls: ClientTlsFiles | undefined;
  readonly incomingPort: number;
  readonly outgoingPort: number;
  readonly store: StoreConfig;
  readonly apiType: ApiType;
  /** The chosen institution adapter's own settings, checked with everything else. */
  readonly coreBanking: AdapterOptions;
  readonly sandboxAccountsFile: string | undefined;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly bodyLimitBytes: number;
  /** Connection and request limits of both servers (http/server-common.ts). */
  readonly serverLimits: {
    readonly maxConnections: number;
    readonly maxRequestsPerSocket: number;
    readonly receiveTimeoutMs: number;
  };
  /** How long the incoming server keeps a silent connection (its handlers' limit too): the switch connector gives up at 65 s. */
  readonly incomingRequestTimeoutMs: number;
  /** Names the servers accept in the Host header beside loopback's (ALLOWED_HOSTS), lower case, no port. */
  readonly allowedHosts: readonly string[];
  readonly iso: {
    /** Payer keys every iso20022 quote must carry. */
    readonly requiredPayerKeys: readonly string[];
    /** At least one of these payer keys must be present (empty: no such rule). */
    readonly anyOfPayerKeys: readonly string[];
  };
  /** Party fields beyond the name that GET /parties shares with the switch (PARTY_SHARE); none by default. */
  readonly partyShare: readonly PartyShareField[];
  readonly sdkTimeoutMs: number;
  readonly recovery: {
    readonly intervalMs: number;
    readonly batchSize: number;
    /** A reservation with no notification after this long is looked up at the switch. */
    readonly reservationQueryAfterMs: number;
    readonly baseBackoffMs: number;
    readonly maxBackoffMs: number;
    /** After this many failed attempts an item is flagged as needing manual action. */
    readonly attentionAfterAttempts: number;
    readonly leaseMs: number;
  };
  /** The most records one reconciliation report reads (RECONCILIATION_MAX_RECORDS). */
  readonly reconciliationMaxRecords: number;
  readonly shutdown: {
    /** The longest a stop may take, its drain included; then the process exits 1 (SHUTDOWN_TIMEOUT_MS). */
    readonly timeoutMs: number;
    /** How long /health answers 503 before the stop refuses requests (SHUTDOWN_DRAIN_MS); 0: no drain. */
    readonly drainMs: number;
  };
  /** How long the metrics' figures read from the database serve scrapes (METRICS_DATABASE_INTERVAL_MS). */
  readonly metricsDatabaseIntervalMs: number;
  readonly outgoing: OutgoingConfig;
  /** dfsp: a bank or wallet's connector (payee and payer sides); fxp: a foreign exchange provider's. */
  readonly mode: 'dfsp' | 'fxp';
  /** Customer segments the institution serves (IDENTIFIER_SEGMENTS): registering a type outside them logs a warning. */
  readonly identifierSegments: readonly Segment[];
  /** Identifiers per POST /accounts call and currency (the switch connector's own limit is 10,000). */
  readonly identifierBatchSize: number;
  readonly fx: FxConfig;
}

/** Settings of the outgoing-payments server (port 3004). */
export interface OutgoingConfig {
  /** The customer channel's key, sent as x-api-key. */
  readonly channelApiKey: string;
  /** The institution's payment provider's secret on PUT /callback, sent in callbackSecretHeader. */
  readonly callbackSecret: string;
  readonly callbackSecretHeader: string;
  /**
   * What a PUT /callback without the secret header is: `secret`, refused (401); `confirm`, never
   * trusted but taken as a hint: the institution is asked for the debit's status at once and the
   * payment proceeds on that answer (for providers that cannot send our header, e.g. Airtel).
   * A wrong secret is always refused.
   */
  readonly callbackAuth: 'secret' | 'confirm';
  /** True when either credential is the documented demo value (a warning is logged at start-up). */
  readonly demoCredentials: boolean;
  /** Timeout of the switch connector's blocking POST and PUT /transfers (at least 95 s in production). */
  readonly transferTimeoutMs: number;
  /** Without a callback this long after the payment prompt, the institution is asked. */
  readonly callbackWaitMs: number;
  /** iso20022 mode: the payer birth keys sent (the spec's, the ISO-exact paths, or both). */
  readonly birthKeys: 'spec' | 'iso-exact' | 'both';
  /** The sandbox institution's outgoing flow (CBS_ADAPTER=sandbox only). */
  readonly sandboxFlow: 'bank' | 'mobile-operator';
}

/** One operator of the operations server: a name for the audit trail and a bearer token. */
export interface OperatorCredential {
  readonly name: string;
  readonly token: string;
}

/** Settings of the operations server (console, operator actions, reconciliation; port 3005). */
export interface OperationsConfig {
  readonly port: number;
  readonly listen: ListenConfig;
  readonly operators: readonly OperatorCredential[];
  /** True when any operator holds the published demo token (whatever its name): the server then stays on loopback. */
  readonly demoOperator: boolean;
  /** Where the built console is (CONSOLE_DIR); default: dist/console beside the built connector. */
  readonly consoleDir: string | undefined;
}

export const DEMO_OPERATOR_TOKEN = 'demo-operator-token-change-me';
export const DEMO_OPERATOR = `demo-operator:${DEMO_OPERATOR_TOKEN}`;

/** Personal data a party lookup may share when the institution chooses to (PARTY_SHARE). */
export const PARTY_SHARE_FIELDS = ['dateOfBirth', 'kycInformation'] as const;
export type PartyShareField = (typeof PARTY_SHARE_FIELDS)[number];

export const DEMO_CHANNEL_API_KEY = 'demo-channel-key-change-me';
export const DEMO_CALLBACK_SECRET = 'demo-callback-secret-change-me';

export type Env = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const LEI_PATTERN = /^[A-Z0-9]{18}[0-9]{2}$/;

/** ISO 17442 check: the LEI read as digits (A=10 ... Z=35) is 1 modulo 97. */
export function isValidLei(lei: string): boolean {
  if (!LEI_PATTERN.test(lei)) return false;
  const digits = [...lei].map((c) => (c >= '0' && c <= '9' ? c : String(c.charCodeAt(0) - 55))).join('');
  return BigInt(digits) % 97n === 1n;
}

const HOUR_MS = 3_600_000n;

/** Reads every setting; throws ConfigError listing every problem. */
export function loadConfig(env: Env): Config {
  const problems: string[] = [];
  const read = new Reader(env, problems);

  const supportedIdType = read.string('SUPPORTED_ID_TYPE', 'MSISDN');
  if (!isPartyIdType(supportedIdType)) problems.push(`SUPPORTED_ID_TYPE: "${supportedIdType}" is not an identifier type`);
  const currency = read.string('X_CURRENCY', 'ZMW');
  if (!isCurrencyCode(currency)) problems.push(`X_CURRENCY: "${currency}" is not an ISO 4217 code`);
  const sendingServiceCharge = read.decimal('SENDING_SERVICE_CHARGE', '1');
  if (sendingServiceCharge !== undefined && compareDecimal(sendingServiceCharge, '100') > 0) {
    problems.push('SENDING_SERVICE_CHARGE: must be a percentage from 0 to 100');
  }
  const expirationHours = read.decimal('EXPIRATION_DURATION', '1');
  let expirationMs = 0;
  if (expirationHours !== undefined) {
    const { units, scale } = parseDecimal(expirationHours);
    const ms = (units * HOUR_MS) / 10n ** BigInt(scale);
    if (ms < 1000n || ms > 24n * 30n * HOUR_MS) problems.push('EXPIRATION_DURATION: must be between 1 second and 720 hours');
    expirationMs = Number(ms);
  }
  const sdkBaseUrl = read.url('SDK_BASE_URL', 'http://localhost:4001');
  const lei = read.string('LEI', '9845000DEMOCC0NNEC85');
  if (!isValidLei(lei)) problems.push(`LEI: "${lei}" is not a valid ISO 17442 Legal Entity Identifier`);
  const apiType = read.oneOf('API_TYPE', ['fspiop', 'iso20022'] as const, 'fspiop');
  const logLevel = read.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info');
  const cbsAdapter = read.string('CBS_ADAPTER', 'sandbox');

  const sdkTimeoutMs = read.integer('SDK_TIMEOUT_MS', 100_000, 1000, 600_000);
  const outgoing = readOutgoing(read, cbsAdapter, problems);
  // A recovery worker's lease must outlast the longest step it takes (a call to the switch
  // connector), or another replica's pass could take an item still being worked: by default 20 s
  // above it (at least 120 s); a lease set shorter is refused below.
  const longestSwitchCallMs = Math.max(sdkTimeoutMs, outgoing.transferTimeoutMs);
  const config: Config = {
    supportedIdType: supportedIdType as PartyIdType,
    currency,
    sendingServiceCharge: sendingServiceCharge ?? '0',
    expirationMs,
    sdkBaseUrl,
    lei,
    listen: {
      incoming: readListen((name) => read.optional(name), 'INCOMING', problems),
      outgoing: readListen((name) => read.optional(name), 'OUTGOING', problems),
    },
    operations: readOperations(read, problems),
    sdkTls: readClientTls((name) => read.optional(name), problems),
    incomingPort: read.integer('INCOMING_PORT', 3003, 0, 65535),
    outgoingPort: read.integer('OUTGOING_PORT', 3004, 0, 65535),
    store: readStore(read, problems),
    apiType,
    coreBanking: readCoreBanking(cbsAdapter, env, problems),
    sandboxAccountsFile: read.optional('SANDBOX_ACCOUNTS_FILE'),
    logLevel,
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 65_536, 1024, 10_485_760),
    serverLimits: {
      maxConnections: read.integer('MAX_CONNECTIONS', 1024, 1, 1_000_000),
      maxRequestsPerSocket: read.integer('MAX_REQUESTS_PER_SOCKET', 1000, 1, 1_000_000),
      receiveTimeoutMs: read.integer('REQUEST_RECEIVE_TIMEOUT_MS', 65_000, 1000, 600_000),
    },
    incomingRequestTimeoutMs: read.integer('INCOMING_REQUEST_TIMEOUT_MS', 65_000, 5000, 600_000),
    allowedHosts: readAllowedHosts(read, problems),
    iso: {
      requiredPayerKeys: read.list('ISO_REQUIRED_PAYER_KEYS', ['CdtTrfTxInf.Dbtr.Nm']),
      anyOfPayerKeys: read.list('ISO_ANY_OF_PAYER_KEYS', []),
    },
    partyShare: readPartyShare(read, problems),
    sdkTimeoutMs,
    recovery: {
      intervalMs: read.integer('RECOVERY_INTERVAL_MS', 5000, 10, 3_600_000),
      batchSize: read.integer('RECOVERY_BATCH_SIZE', 50, 1, 10_000),
      reservationQueryAfterMs: read.integer('RESERVATION_QUERY_AFTER_MS', 120_000, 0, 86_400_000),
      baseBackoffMs: read.integer('RECOVERY_BASE_BACKOFF_MS', 1000, 1, 3_600_000),
      maxBackoffMs: read.integer('RECOVERY_MAX_BACKOFF_MS', 300_000, 1, 86_400_000),
      attentionAfterAttempts: read.integer('RECOVERY_ATTENTION_AFTER_ATTEMPTS', 10, 1, 1_000_000),
      leaseMs: read.integer('RECOVERY_LEASE_MS', Math.max(120_000, longestSwitchCallMs + 20_000), 100, 3_600_000),
    },
    reconciliationMaxRecords: read.integer('RECONCILIATION_MAX_RECORDS', RECONCILIATION_MAX_RECORDS, 1, 1_000_000),
    shutdown: {
      timeoutMs: read.integer('SHUTDOWN_TIMEOUT_MS', 25_000, 100, 3_600_000),
      drainMs: read.integer('SHUTDOWN_DRAIN_MS', 0, 0, 3_600_000),
    },
    metricsDatabaseIntervalMs: read.integer('METRICS_DATABASE_INTERVAL_MS', DEFAULT_DATABASE_INTERVAL_MS, 100, 600_000),
    outgoing,
    mode: read.oneOf('CONNECTOR_MODE', ['dfsp', 'fxp'] as const, 'dfsp'),
    identifierSegments: readSegments(read, problems),
    identifierBatchSize: read.integer('IDENTIFIER_BATCH_SIZE', 10_000, 1, 10_000),
    fx: {
      exchangeAdapter: read.oneOf('FX_EXCHANGE_ADAPTER', ['sandbox', 'rest'] as const, 'sandbox'),
      rest: readRestExchange(read, problems),
      sandboxFile: read.optional('FX_SANDBOX_FILE'),
      quoteExpiryMs: read.integer('FX_QUOTE_EXPIRY_SECONDS', 60, 1, 86_400) * 1000,
      rateRefreshMs: read.integer('FX_RATE_REFRESH_MS', 30_000, 100, 3_600_000),
      rateMaxAgeMs: read.integer('FX_RATE_MAX_AGE_MS', 120_000, 100, 86_400_000),
    },
  };
  checkDemoCredentialsStayLocal({ INCOMING: config.listen.incoming, OUTGOING: config.listen.outgoing }, config.outgoing.demoCredentials, problems);
  checkDemoCredentialsStayLocal({ OPERATIONS: config.operations.listen }, config.operations.demoOperator, problems, 'OPERATOR_CREDENTIALS');
  checkOperatorTokensAreOwn(config.operations.operators, config.outgoing, problems);
  if (config.recovery.leaseMs <= longestSwitchCallMs) {
    problems.push(`RECOVERY_LEASE_MS: ${config.recovery.leaseMs} must be above SDK_TIMEOUT_MS and SDK_TRANSFER_TIMEOUT_MS (${longestSwitchCallMs}), so that no step outlasts its lease`);
  }
  if (config.shutdown.drainMs > 0 && config.shutdown.drainMs >= config.shutdown.timeoutMs) {
    problems.push(`SHUTDOWN_DRAIN_MS: ${config.shutdown.drainMs} must be below SHUTDOWN_TIMEOUT_MS (${config.shutdown.timeoutMs}), which counts the drain`);
  }
  checkDemoCredentialsNotProxied(config.allowedHosts, config.outgoing.demoCredentials, problems);
  checkDemoCredentialsNotProxied(config.allowedHosts, config.operations.demoOperator, problems, 'OPERATOR_CREDENTIALS');
  const ports = [config.incomingPort, config.outgoingPort, config.operations.port].filter((port) => port !== 0);
  if (new Set(ports).size !== ports.length) problems.push('INCOMING_PORT, OUTGOING_PORT and OPERATIONS_PORT: must differ');
  if (config.sdkTls !== undefined && !sdkBaseUrl.startsWith('https:')) problems.push('SDK_TLS_*: set only with an https SDK_BASE_URL');
  const institution = config.coreBanking;
  if (institution.adapter === 'airtel' && institution.settings.currency !== currency) {
    // The wallets hold one currency: every amount the switch sends would be declined at runtime.
    problems.push(`AIRTEL_CURRENCY: "${institution.settings.currency}" differs from X_CURRENCY "${currency}"; the wallets must hold the scheme currency`);
  }
  refuseTestOnlySettings(env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * Fault injection (CBS_FAULT_RATE and the other CBS_FAULT_* settings) is test code, under test/,
 * and is not in the build: a connector started with one of them set refuses to start rather than
 * run as if the faults were on, or silently drop what the operator asked for.
 */
function refuseTestOnlySettings(env: Env, problems: string[]): void {
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('CBS_FAULT_') || (env[name]?.trim() ?? '') === '') continue;
    problems.push(`${name}: fault injection is test-only and not part of the connector; unset it`);
  }
}

/**
 * OPERATOR_CREDENTIALS: "name:token" pairs separated by commas. Names go into the audit trail
 * (letters, digits, dot, dash, underscore, at most 64); tokens are at least 24 characters and
 * differ from each other. A problem names the entry by its position (the first is 1, counting
 * the comma-separated parts as written): an entry that is not well formed may be a token pasted
 * whole or in the name's place, and the refusal goes to stderr and the platform's logs.
 */
function readOperations(read: Reader, problems: string[]): OperationsConfig {
  const text = read.string('OPERATOR_CREDENTIALS', DEMO_OPERATOR);
  const entries: (OperatorCredential & { readonly position: number })[] = [];
  text.split(',').forEach((part, index) => {
    const entry = part.trim();
    const position = index + 1;
    if (entry === '') return;
    const colon = entry.indexOf(':');
    if (colon < 0) {
      problems.push(`OPERATOR_CREDENTIALS: entry ${position} is not name:token (no colon)`);
      return;
    }
    const name = entry.slice(0, colon);
    const token = entry.slice(colon + 1);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) {
      problems.push(`OPERATOR_CREDENTIALS: entry ${position}: the name is not an operator name (letters, digits, . _ -, at most 64)`);
      return;
    }
    if (token.length < 24 || /[\s,]/.test(token)) {
      problems.push(`OPERATOR_CREDENTIALS: entry ${position}: the token must be at least 24 characters without spaces or commas`);
      return;
    }
    // Both parts are well formed from here on: the name may be shown, never the token.
    const sameName = entries.find((other) => other.name === name);
    if (sameName !== undefined) problems.push(`OPERATOR_CREDENTIALS: entry ${position} (${name}) repeats the name of entry ${sameName.position}`);
    const sameToken = entries.find((other) => other.token === token);
    if (sameToken !== undefined) problems.push(`OPERATOR_CREDENTIALS: entry ${position} (${name}) shares the token of entry ${sameToken.position}`);
    entries.push({ name, token, position });
  });
  const operators = entries.map(({ name, token }): OperatorCredential => ({ name, token }));
  if (operators.length === 0 && problems.every((problem) => !problem.startsWith('OPERATOR_CREDENTIALS'))) problems.push('OPERATOR_CREDENTIALS: name at least one operator');
  return {
    port: read.integer('OPERATIONS_PORT', 3005, 0, 65535),
    listen: readListen((name) => read.optional(name), 'OPERATIONS', problems),
    operators,
    // The published token is the demo whatever the name beside it or the entries around it.
    demoOperator: operators.some((operator) => operator.token === DEMO_OPERATOR_TOKEN),
    consoleDir: read.optional('CONSOLE_DIR'),
  };
}

/**
 * An operator token that is also the channel's key or the callback secret lets whoever holds
 * one of them act as an operator (and the operator move customers' money): each must be its own.
 */
function checkOperatorTokensAreOwn(operators: readonly OperatorCredential[], outgoing: OutgoingConfig, problems: string[]): void {
  for (const operator of operators) {
    for (const [name, secret] of [['OUTGOING_API_KEY', outgoing.channelApiKey], ['CALLBACK_SECRET', outgoing.callbackSecret]] as const) {
      if (operator.token === secret) problems.push(`OPERATOR_CREDENTIALS: the token of ${operator.name} must differ from ${name}`);
    }
  }
}

function readOutgoing(read: Reader, cbsAdapter: string, problems: string[]): OutgoingConfig {
  const channelApiKey = read.string('OUTGOING_API_KEY', DEMO_CHANNEL_API_KEY);
  const callbackSecret = read.string('CALLBACK_SECRET', DEMO_CALLBACK_SECRET);
  for (const [name, value] of [['OUTGOING_API_KEY', channelApiKey], ['CALLBACK_SECRET', callbackSecret]] as const) {
    if (value.length < 16) problems.push(`${name}: must be at least 16 characters`);
  }
  if (channelApiKey === callbackSecret) problems.push('OUTGOING_API_KEY and CALLBACK_SECRET: must differ');
  const callbackSecretHeader = read.string('CALLBACK_SECRET_HEADER', 'x-callback-secret').toLowerCase();
  if (!/^[a-z0-9-]{1,64}$/.test(callbackSecretHeader)) {
    // "name: value" pasted whole would carry the secret: a value with a colon is not echoed.
    const shown = callbackSecretHeader.includes(':') ? 'the value (not shown: it holds a colon, and may hold the secret)' : `"${callbackSecretHeader}"`;
    problems.push(`CALLBACK_SECRET_HEADER: ${shown} is not a header name`);
  }
  if (callbackSecretHeader === 'x-api-key') problems.push('CALLBACK_SECRET_HEADER: must differ from the channel\'s x-api-key');
  // Airtel posts its callback with no header of ours: by default it is confirmed with the operator.
  const callbackAuth = read.oneOf('CALLBACK_AUTH', ['secret', 'confirm'] as const, cbsAdapter === 'airtel' ? 'confirm' : 'secret');
  return {
    channelApiKey,
    callbackSecret,
    callbackSecretHeader,
    callbackAuth,
    demoCredentials: channelApiKey === DEMO_CHANNEL_API_KEY || callbackSecret === DEMO_CALLBACK_SECRET,
    transferTimeoutMs: read.integer('SDK_TRANSFER_TIMEOUT_MS', 100_000, 1000, 600_000),
    callbackWaitMs: read.integer('CALLBACK_WAIT_MS', 300_000, 1000, 86_400_000),
    birthKeys: read.oneOf('OUTGOING_BIRTH_KEYS', ['spec', 'iso-exact', 'both'] as const, 'spec'),
    sandboxFlow: read.oneOf('SANDBOX_OUTGOING_FLOW', ['bank', 'mobile-operator'] as const, 'bank'),
  };
}

function readRestExchange(read: Reader, problems: string[]): FxConfig['rest'] {
  if (read.optional('FX_EXCHANGE_ADAPTER') !== 'rest') return undefined;
  const text = read.optional('FX_REST_BASE_URL');
  const timeoutMs = read.integer('FX_REST_TIMEOUT_MS', 10_000, 50, 120_000);
  const apiKey = read.optional('FX_REST_API_KEY');
  if (text === undefined) {
    problems.push('FX_REST_BASE_URL: required with FX_EXCHANGE_ADAPTER=rest');
    return undefined;
  }
  // The same URL rules as every adapter's base URL.
  const baseUrl = urlSetting('FX_REST_BASE_URL', 'Base URL of the exchange').read(text);
  if ('problem' in baseUrl) {
    problems.push(`FX_REST_BASE_URL: ${baseUrl.problem}`);
    return undefined;
  }
  return { baseUrl: baseUrl.value, apiKey, timeoutMs };
}

function readSegments(read: Reader, problems: string[]): Segment[] {
  const segments: Segment[] = [];
  for (const item of read.list('IDENTIFIER_SEGMENTS', [])) {
    const segment = (Object.keys(SEGMENT_TYPES) as Segment[]).find((candidate) => candidate === item);
    if (segment === undefined) problems.push(`IDENTIFIER_SEGMENTS: "${item}" is not one of ${Object.keys(SEGMENT_TYPES).join(', ')}`);
    else if (!segments.includes(segment)) segments.push(segment);
  }
  return segments;
}

/** ALLOWED_HOSTS: host names or addresses (an IPv6 address in brackets), without a port. */
function readAllowedHosts(read: Reader, problems: string[]): string[] {
  const hosts: string[] = [];
  for (const item of read.list('ALLOWED_HOSTS', [])) {
    const name = item.toLowerCase();
    if (!/^([a-z0-9-]{1,63}(\.[a-z0-9-]{1,63})*|\[[0-9a-f:.]{2,45}\])$/.test(name) || name.length > 253) problems.push(`ALLOWED_HOSTS: "${item.slice(0, 64)}" is not a host name or address without a port`);
    else if (!hosts.includes(name)) hosts.push(name);
  }
  return hosts;
}

function readPartyShare(read: Reader, problems: string[]): PartyShareField[] {
  const shared: PartyShareField[] = [];
  for (const item of read.list('PARTY_SHARE', [])) {
    const field = PARTY_SHARE_FIELDS.find((candidate) => candidate === item);
    if (field === undefined) problems.push(`PARTY_SHARE: "${item}" is not one of ${PARTY_SHARE_FIELDS.join(', ')}`);
    else if (!shared.includes(field)) shared.push(field);
  }
  return shared;
}

function readCoreBanking(name: string, env: Env, problems: string[]): AdapterOptions {
  const read = readAdapterOptions(name, env);
  if ('problems' in read) {
    problems.push(...read.problems);
    return { adapter: 'sandbox' };
  }
  return read.options;
}

function readStore(read: Reader, problems: string[]): StoreConfig {
  const url = read.string('DATABASE_URL', './data/connector.db');
  const poolMax = read.integer('DATABASE_POOL_MAX', 10, 1, 1000);
  const preparedStatements = read.oneOf('DATABASE_PREPARED_STATEMENTS', ['on', 'off'], 'on') === 'on';
  const statementGroups = read.oneOf('DATABASE_STATEMENT_GROUPS', ['on', 'off'], 'on') === 'on';
  if (/^postgres(ql)?:\/\//.test(url)) {
    // Not shown: a URL that does not parse cannot be trusted to have its password found and hidden.
    if (!URL.canParse(url)) problems.push('DATABASE_URL: the postgres:// URL does not parse (percent-encode spaces and reserved characters; the value is not shown)');
    return { kind: 'postgres', location: url, poolMax, preparedStatements, statementGroups };
  }
  const path = url.replace(/^(sqlite|file):(\/\/)?/, '');
  // Any URI scheme (RFC 3986: a letter, then letters, digits, +, - or .) other than SQLite's is
  // a mistake, never a file name: refused, and only the scheme is shown (the rest may hold a
  // password, in its user part or its query).
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
  if (scheme !== undefined && !/^(sqlite|file)$/i.test(scheme)) {
    problems.push(`DATABASE_URL: unsupported scheme "${scheme}" (use a file path or postgres://; the value is not shown)`);
  }
  if (path === '') problems.push('DATABASE_URL: empty SQLite path');
  return { kind: 'sqlite', location: path, poolMax, preparedStatements };
}

/** Reads settings and collects problems instead of stopping at the first. */
class Reader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const text = this.optional(name);
    if (text === undefined) return fallback;
    if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
      this.problems.push(`${name}: "${text}" is not a whole number from ${min} to ${max}`);
      return fallback;
    }
    return Number(text);
  }

  decimal(name: string, fallback: string): string | undefined {
    const text = this.string(name, fallback);
    try {
      parseDecimal(text);
      return text;
    } catch {
      this.problems.push(`${name}: "${text}" is not a non-negative decimal number`);
      return undefined;
    }
  }

  /**
   * An http(s) URL without credentials. A refused http(s) value is shown without its user,
   * password, query and fragment; any other is not shown (its credentials could not be found to hide).
   */
  url(name: string, fallback: string): string {
    const text = this.string(name, fallback);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      this.problems.push(`${name}: is not an http(s) URL (the value is not shown: it may carry a credential)`);
      return fallback;
    }
    const carriesCredentials = url.username !== '' || url.password !== '';
    // Shown without user, password, query or fragment: any of them may hold a credential.
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      // Only the scheme: past it, another scheme's text may hold a credential anywhere.
      this.problems.push(`${name}: is not an http(s) URL (scheme "${url.protocol}"; the value is not shown)`);
      return fallback;
    }
    if (carriesCredentials) {
      this.problems.push(`${name}: must not carry credentials (user:password@ in "${url.toString()}")`);
      return fallback;
    }
    return text.replace(/\/+$/, '');
  }

  oneOf<const T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const text = this.string(name, fallback);
    const match = allowed.find((candidate) => candidate === text);
    if (match === undefined) {
      this.problems.push(`${name}: "${text}" is not one of ${allowed.join(', ')}`);
      return fallback;
    }
    return match;
  }

  /** A comma-separated list; unset means the fallback, set but empty means no items. */
  list(name: string, fallback: readonly string[]): readonly string[] {
    const text = this.env[name];
    if (text === undefined) return fallback;
    return text
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  }
}
