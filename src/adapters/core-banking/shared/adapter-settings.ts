import type { Env } from '../../../config.js';
import { isCurrencyCode } from '../../../domain/currencies.js';
import type { OutgoingFlow } from '../../../ports/core-banking.js';

/**
 * The options schema of an adapter: one Setting per environment variable, each with its own
 * check. readSettings reads a whole schema and reports every problem at once, like config.ts.
 * A secret's value never appears in a problem, and `describeSettings` lists the schema for the
 * guide and for a start-up log line (names only).
 */

export type SettingResult<T> = { readonly value: T } | { readonly problem: string };

export interface Setting<T> {
  readonly env: string;
  readonly description: string;
  readonly secret: boolean;
  /** Text as it should appear in documentation, e.g. "10000" or "(required)". */
  readonly defaultText: string;
  read(text: string | undefined): SettingResult<T>;
}

export type SettingsSchema = Readonly<Record<string, Setting<unknown>>>;
export type SettingsOf<S extends SettingsSchema> = { readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

export function readSettings<S extends SettingsSchema>(schema: S, env: Env): { options: SettingsOf<S> } | { problems: string[] } {
  const problems: string[] = [];
  const options: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(schema)) {
    const raw = env[setting.env]?.trim();
    const result = setting.read(raw === '' ? undefined : raw);
    if ('problem' in result) problems.push(`${setting.env}: ${result.problem}`);
    else options[key] = result.value;
  }
  if (problems.length > 0) return { problems };
  // Every key of the schema was read by its own Setting<T>, so the record has the mapped type.
  return { options: options as SettingsOf<S> };
}

export interface SettingDescription {
  readonly env: string;
  readonly description: string;
  readonly secret: boolean;
  readonly defaultText: string;
}

export function describeSettings(schema: SettingsSchema): SettingDescription[] {
  return Object.values(schema).map(({ env, description, secret, defaultText }) => ({ env, description, secret, defaultText }));
}

function required(env: string): SettingResult<never> {
  return { problem: `required (set ${env})` };
}

/** An http(s) base URL, stored without a trailing slash. */
export function urlSetting(env: string, description: string): Setting<string> {
  const optional = optionalUrlSetting(env, description);
  return {
    ...optional,
    defaultText: '(required)',
    read(text) {
      if (text === undefined) return required(env);
      const read = optional.read(text);
      if ('problem' in read) return read;
      return read.value === undefined ? required(env) : { value: read.value };
    },
  };
}

/** An http(s) URL without credentials, or nothing when unset. */
export function optionalUrlSetting(env: string, description: string): Setting<string | undefined> {
  return {
    env,
    description,
    secret: false,
    defaultText: '(unset)',
    read(text) {
      if (text === undefined) return { value: undefined };
      try {
        const url = new URL(text);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: 'must be an http(s) URL' };
        if (url.username !== '' || url.password !== '') return { problem: 'must not carry credentials; use the credential settings' };
      } catch {
        return { problem: 'is not a URL' };
      }
      return { value: text.replace(/\/+$/, '') };
    },
  };
}

export function textSetting(env: string, description: string, options: { fallback?: string; pattern?: RegExp; hint?: string } = {}): Setting<string> {
  return {
    env,
    description,
    secret: false,
    defaultText: options.fallback ?? '(required)',
    read(text) {
      const value = text ?? options.fallback;
      if (value === undefined) return required(env);
      if (options.pattern !== undefined && !options.pattern.test(value)) {
        // A value with a colon may be a credential pasted whole ("user:password"): not echoed.
        const shown = value.includes(':') ? 'the value (not shown: it holds a colon, and may hold a credential)' : `"${value.slice(0, 64)}"`;
        return { problem: `${shown} is not ${options.hint ?? `of the form ${options.pattern.source}`}` };
      }
      return { value };
    },
  };
}

/** A credential: required unless `optional`, and never echoed in a problem. */
export function secretSetting(env: string, description: string, options: { optional?: boolean; pattern?: RegExp; hint?: string } = {}): Setting<string | undefined> {
  return {
    env,
    description,
    secret: true,
    defaultText: options.optional === true ? '(none)' : '(required)',
    read(text) {
      if (text === undefined) return options.optional === true ? { value: undefined } : required(env);
      if (options.pattern !== undefined && !options.pattern.test(text)) return { problem: `is not ${options.hint ?? 'in the expected form'} (value not shown)` };
      return { value: text };
    },
  };
}

/** Like secretSetting, but always present. */
export function requiredSecretSetting(env: string, description: string, options: { pattern?: RegExp; hint?: string } = {}): Setting<string> {
  const inner = secretSetting(env, description, options);
  return {
    ...inner,
    read(text) {
      const result = inner.read(text);
      if ('problem' in result) return result;
      return result.value === undefined ? required(env) : { value: result.value };
    },
  };
}

export function integerSetting(env: string, description: string, fallback: number, min: number, max: number): Setting<number> {
  return {
    env,
    description,
    secret: false,
    defaultText: String(fallback),
    read(text) {
      if (text === undefined) return { value: fallback };
      // Whole numbers only, checked as text first; these are counts and durations, never amounts.
      if (!/^[0-9]{1,10}$/.test(text) || Number(text) < min || Number(text) > max) {
        return { problem: `"${text.slice(0, 16)}" is not a whole number from ${min} to ${max}` };
      }
      return { value: Number(text) };
    },
  };
}

export function currencySetting(env: string, description: string, fallback?: string): Setting<string> {
  return {
    env,
    description,
    secret: false,
    defaultText: fallback ?? '(required)',
    read(text) {
      const value = text ?? fallback;
      if (value === undefined) return required(env);
      return isCurrencyCode(value) ? { value } : { problem: `"${value.slice(0, 8)}" is not an ISO 4217 currency code` };
    },
  };
}

export function flowSetting(env: string, fallback: OutgoingFlow): Setting<OutgoingFlow> {
  return {
    env,
    description: 'How outgoing payments debit the customer: bank (the channel debits) or mobile-operator (the connector collects)',
    secret: false,
    defaultText: fallback,
    read(text) {
      const value = text ?? fallback;
      if (value === 'bank' || value === 'mobile-operator') return { value };
      return { problem: `"${value.slice(0, 32)}" is not one of bank, mobile-operator` };
    },
  };
}

/** A setting that may be left unset (undefined), checked against a pattern when present. */
export function optionalTextSetting(env: string, description: string, options: { pattern?: RegExp; hint?: string; defaultText?: string } = {}): Setting<string | undefined> {
  return {
    env,
    description,
    secret: false,
    defaultText: options.defaultText ?? '(none)',
    read(text) {
      if (text === undefined) return { value: undefined };
      if (options.pattern !== undefined && !options.pattern.test(text)) {
        return { problem: `"${text.slice(0, 64)}" is not ${options.hint ?? `of the form ${options.pattern.source}`}` };
      }
      return { value: text };
    },
  };
}
