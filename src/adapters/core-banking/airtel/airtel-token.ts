import type { Clock } from '../../../ports/clock.js';
import type { AirtelToken } from './airtel-wire.js';

/**
 * One OAuth2 client-credentials token shared by every call, fetched once and replaced shortly
 * before it expires (a tenth of its lifetime early, at most a minute), so that a call never
 * leaves with a token about to lapse and the token endpoint sees one request per lifetime,
 * not one per call. Concurrent callers wait for the same fetch.
 */
export class AirtelTokenCache {
  #current: { readonly value: string; readonly refreshAtMs: number } | undefined;
  #pending: Promise<string> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<AirtelToken>,
    private readonly clock: Clock,
  ) {}

  async get(): Promise<string> {
    const current = this.#current;
    if (current !== undefined && this.clock.now().getTime() < current.refreshAtMs) return current.value;
    this.#pending ??= this.#refresh().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  /** Forgets a token the API refused (revoked early), unless a newer one already replaced it. */
  invalidate(value: string): void {
    if (this.#current?.value === value) this.#current = undefined;
  }

  async #refresh(): Promise<string> {
    const requestedAtMs = this.clock.now().getTime();
    const token = await this.fetchToken();
    const lifetimeMs = token.expiresInSeconds * 1000;
    const earlyMs = Math.min(60_000, Math.floor(lifetimeMs / 10));
    this.#current = { value: token.accessToken, refreshAtMs: requestedAtMs + lifetimeMs - earlyMs };
    return token.accessToken;
  }
}
