import type { FixtureAccountSeed } from './fixture-books.js';
import type { Fault, FaultTarget, RecordedRequest } from './fixture-server.js';

/**
 * What every fixture institution offers a test, whatever its wire format: start one with
 * `startXxxFixture({ port: 0, currency, floatBalance, accounts })`, point an adapter (or the whole
 * connector, through env settings) at `url`, then read its books back.
 */
export interface FixtureInstitution {
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  readonly currency: string;
  /** The institution's own reference for the account behind an identifier (PartyDetails.accountId). */
  accountIdOf(idValue: string): string;
  /** Booked balance of a customer account, as a decimal string. */
  balanceOf(idValue: string): string;
  floatBalance(): string;
  /** Float balance minus what is held for reservations. */
  floatAvailable(): string;
  /** Where customer debits land and refunds are paid from: the float, in every fixture. */
  settlementBalance(): string;
  /** Sum of every balance on the books; constant, since money only moves between accounts. */
  total(): string;
  seed(accounts: readonly FixtureAccountSeed[]): void;
  /** Plays `fault` on the next `times` matching requests, after letting `skip` of them through. */
  inject(fault: Fault, on?: FaultTarget, times?: number, skip?: number): void;
  /** The customer approves the payment prompt of a collection: the money moves now. */
  approveCollection(reference: string): void;
  /** The customer declines (or lets the prompt expire): no money moves. */
  rejectCollection(reference: string): void;
  /** The channel's own debit of a customer into the float (bank flow), outside the connector. */
  debitByChannel(reference: string, idValue: string, amount: string): void;
  close(): Promise<void>;
}
