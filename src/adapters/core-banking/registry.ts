import type { Env } from '../../config.js';
import type { Clock } from '../../ports/clock.js';
import type { CoreBanking } from '../../ports/core-banking.js';
import { describeSettings, type SettingDescription } from './shared/adapter-settings.js';
import { AirtelCoreBanking } from './airtel/airtel-core-banking.js';
import { airtelSettings, readAirtelOptions, type AirtelOptions } from './airtel/airtel-options.js';
import { FineractCoreBanking } from './fineract/fineract-core-banking.js';
import { fineractSettings, readFineractOptions, type FineractOptions } from './fineract/fineract-options.js';
import { MiniBankCoreBanking } from './minibank/minibank-core-banking.js';
import { minibankSettings, readMiniBankOptions, type MiniBankOptions } from './minibank/minibank-options.js';
import { RestCoreBanking } from './rest/rest-core-banking.js';
import { readRestOptions, restSettings, type RestOptions } from './rest/rest-options.js';

/**
 * The institutions the connector can talk to, selected by CBS_ADAPTER. Start-up reads the
 * chosen adapter's settings with readAdapterOptions (every problem listed at once, secrets never
 * shown), then builds it with createCoreBanking. The sandbox is the exception: it keeps its books
 * in the connector's own database, so the composition root builds it; here it only has a name.
 */

export const ADAPTER_NAMES = ['sandbox', 'rest', 'fineract', 'airtel', 'minibank'] as const;
export type AdapterName = (typeof ADAPTER_NAMES)[number];

/** Adapters reached over HTTP, which this registry builds. */
export type HttpAdapterOptions =
  | { readonly adapter: 'rest'; readonly settings: RestOptions }
  | { readonly adapter: 'fineract'; readonly settings: FineractOptions }
  | { readonly adapter: 'airtel'; readonly settings: AirtelOptions }
  | { readonly adapter: 'minibank'; readonly settings: MiniBankOptions };

export type AdapterOptions = { readonly adapter: 'sandbox' } | HttpAdapterOptions;

export interface AdapterDeps {
  readonly clock: Clock;
}

export function readAdapterOptions(name: string, env: Env): { options: AdapterOptions } | { problems: string[] } {
  switch (name) {
    case 'sandbox':
      return { options: { adapter: 'sandbox' } };
    case 'rest':
      return tagged('rest', readRestOptions(env));
    case 'fineract':
      return tagged('fineract', readFineractOptions(env));
    case 'airtel':
      return tagged('airtel', readAirtelOptions(env));
    case 'minibank':
      return tagged('minibank', readMiniBankOptions(env));
    default:
      return { problems: [`CBS_ADAPTER: "${name.slice(0, 32)}" is not one of ${ADAPTER_NAMES.join(', ')}`] };
  }
}

function tagged<A extends HttpAdapterOptions['adapter'], S>(
  adapter: A,
  read: { options: S } | { problems: string[] },
): { options: { readonly adapter: A; readonly settings: S } } | { problems: string[] } {
  return 'problems' in read ? read : { options: { adapter, settings: read.options } };
}

/** The setting that holds each HTTP adapter's base URL, for messages about it. */
export const BASE_URL_SETTINGS: Readonly<Record<HttpAdapterOptions['adapter'], string>> = {
  rest: 'REST_CBS_BASE_URL',
  fineract: 'FINERACT_BASE_URL',
  airtel: 'AIRTEL_BASE_URL',
  minibank: 'MINIBANK_BASE_URL',
};

export function createCoreBanking(selected: HttpAdapterOptions, deps: AdapterDeps): CoreBanking {
  switch (selected.adapter) {
    case 'rest':
      return new RestCoreBanking(selected.settings);
    case 'fineract':
      return new FineractCoreBanking(selected.settings, deps);
    case 'airtel':
      return new AirtelCoreBanking(selected.settings, deps);
    case 'minibank':
      return new MiniBankCoreBanking(selected.settings);
  }
}

export interface AdapterDescription {
  readonly summary: string;
  /** Capabilities as documentation reads them; the adapter object states them exactly. */
  readonly capabilities: string;
  readonly settings: readonly SettingDescription[];
}

/**
 * What each adapter is and which settings it reads (names only). Nothing at run time reads it;
 * registry.test.ts uses it to check that credentials are marked secret and that
 * docs/adding-an-institution.md names every adapter and every setting.
 */
export const ADAPTERS: Readonly<Record<AdapterName, AdapterDescription>> = {
  sandbox: {
    summary: 'Built-in institution with its books in the connector database (demo and tests)',
    capabilities: 'bank flow, native holds',
    settings: [],
  },
  rest: {
    summary: 'Any institution implementing docs/reference-core-banking-api.yaml',
    capabilities: 'bank flow by default (REST_CBS_OUTGOING_FLOW), native holds',
    settings: describeSettings(restSettings),
  },
  fineract: {
    summary: 'Apache Fineract: clients by external id, savings accounts, float holds',
    capabilities: 'bank flow, native holds',
    settings: describeSettings(fineractSettings),
  },
  airtel: {
    summary: 'Airtel Money open API: KYC, disbursements, USSD-push collections',
    capabilities: 'mobile-operator flow, no holds (reserve checks the wallet balance)',
    settings: describeSettings(airtelSettings),
  },
  minibank: {
    summary: 'Toy institution of docs/adding-an-institution.md',
    capabilities: 'bank flow, no holds',
    settings: describeSettings(minibankSettings),
  },
};
