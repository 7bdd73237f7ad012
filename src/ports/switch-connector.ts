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
   * 'UNKNOWN' when the switch connector does not know the transfer, or reports no state that
   * settles its outcome (e.g. ERROR_OCCURRED for a reason other than 3208, transfer not found).
   */
  readonly currentState: SwitchTransferState | 'UNKNOWN';
}

export interface SwitchConnector {
  /** GET /transfers/{transferId}: where the hub says a transfer stands. */
  getTransfer(transferId: string): Promise<SwitchTransferStatus>;
  /** POST /transfers: starts an outbound transfer; blocks through lookup, quote (and FX). */
  initiateTransfer(request: OutboundTransferRequest): Promise<OutboundAnswer>;
  /** PUT /transfers/{transferId}: accepts or aborts the conversion or the quote. */
  continueTransfer(transferId: string, continuation: TransferContinuation): Promise<OutboundAnswer>;
}
