import type { OutboundAnswer, OutboundTransferRequest, TransferContinuation } from './outgoing-switch.js';

/**
 * The switch connector's outbound API (SDK_BASE_URL), as far as the connector uses it.
 * The transfer calls (initiateTransfer, continueTransfer) do not throw for the switch's errors
 * or for a timeout: they answer an OutboundAnswer (`failed`, or `unknown` when there was no
 * answer in time). getTransfer throws ConnectorError SdkClientError (the switch answered with
 * an error, or could not be reached) or SdkTimeout (no answer in time).
 */

/** States of a transfer as the switch connector reports them. */
export type SwitchTransferState =
  | 'WAITING_FOR_PARTY_ACCEPTANCE'
  | 'WAITING_FOR_QUOTE_ACCEPTANCE'
  | 'WAITING_FOR_CONVERSION_ACCEPTANCE'
  | 'COMPLETED'
  | 'ERROR_OCCURRED'
  | 'ABORTED';

export interface SwitchTransferStatus {
  /**
   * 'NOT_AT_HUB' when the hub answered that it has no such transfer (3208): nothing was prepared
   * there, so far. 'UNKNOWN' when the switch connector reports no state that settles the outcome
   * (ERROR_OCCURRED for another reason, the hub's RESERVED or RECEIVED, a 404 of its own).
   */
  readonly currentState: SwitchTransferState | 'NOT_AT_HUB' | 'UNKNOWN';
}

/** One identifier as the platform registers it (POST /accounts item). */
export interface PlatformIdentifier {
  readonly idType: string;
  readonly idValue: string;
  readonly idSubValue?: string;
  readonly currency: string;
}

/**
 * The platform's answer to a registration or removal: per identifier, registered (or removed)
 * or refused with the platform's code; `failed` when the call itself was refused, `unknown`
 * when it did not answer in time (the outcome may have been applied: a repeat is an update).
 */
export type PlatformAnswer =
  | { readonly outcome: 'answered'; readonly refusals: ReadonlyMap<string, { readonly statusCode: string; readonly message: string }> }
  | { readonly outcome: 'failed'; readonly httpStatus: number; readonly message: string }
  | { readonly outcome: 'unknown'; readonly reason: string };

/**
 * The key PlatformAnswer.refusals uses, one per identifier: its type, value and sub-value as a JSON
 * array. Joined with `/` (a free-format value may hold one), ALIAS `a/b` and ALIAS `a` with the
 * sub-value `b` had one key, and one's refusal was taken for the other's in a batch.
 */
export function platformKey(id: { readonly idType: string; readonly idValue: string; readonly idSubValue?: string }): string {
  return JSON.stringify(id.idSubValue === undefined ? [id.idType, id.idValue] : [id.idType, id.idValue, id.idSubValue]);
}

export interface SwitchConnector {
  /** POST /accounts: registers identifiers (at most 10,000 per currency per call). */
  registerIdentifiers?(items: readonly PlatformIdentifier[]): Promise<PlatformAnswer>;
  /** DELETE /accounts/{Type}/{ID}[/{SubId}]: removes one identifier from the platform. */
  deregisterIdentifier?(item: Omit<PlatformIdentifier, 'currency'>): Promise<PlatformAnswer>;
  /** GET /transfers/{transferId}: where the hub says a transfer stands. */
  getTransfer(transferId: string): Promise<SwitchTransferStatus>;
  /** POST /transfers: starts an outbound transfer; blocks through lookup, quote (and FX). */
  initiateTransfer(request: OutboundTransferRequest): Promise<OutboundAnswer>;
  /** PUT /transfers/{transferId}: accepts or aborts the conversion or the quote. */
  continueTransfer(transferId: string, continuation: TransferContinuation): Promise<OutboundAnswer>;
}
