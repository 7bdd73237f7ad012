import type { FixtureAccountSeed, FixtureBooks } from './fixture-books.js';
import { startFixtureServer, type ChaosPlan, type Fault, type FaultTarget, type FixtureReply, type FixtureRequest, type FixtureServer, type RecordedRequest } from './fixture-server.js';

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
  inject(fault: Fault, on?: FaultTarget, times?: number, skip?: number, delayMs?: number): void;
  /** Plays random faults (seeded) until called with `undefined`. */
  chaos(plan: ChaosPlan | undefined): void;
  /** How many times each fault was played. */
  readonly faultCounts: Readonly<Record<string, number>>;
  /** How many times each fault was played on a money-moving request. */
  readonly writeFaultCounts: Readonly<Record<string, number>>;
  /** The customer approves the payment prompt of a collection: the money moves now. */
  approveCollection(reference: string): void;
  /** The customer declines (or lets the prompt expire): no money moves. */
  rejectCollection(reference: string): void;
  /** The channel's own debit of a customer into the float (bank flow), outside the connector. */
  debitByChannel(reference: string, idValue: string, amount: string): void;
  close(): Promise<void>;
}

/** An institution's state behind its fixture server: its books and how it answers. */
export interface FixtureState {
  readonly books: FixtureBooks;
  seed(accounts: readonly FixtureAccountSeed[]): void;
  handle(request: FixtureRequest): FixtureReply | Promise<FixtureReply>;
  /** See FixtureServerOptions.admit: answers a replay or an in-flight repeat without running it. */
  admit?(request: FixtureRequest): FixtureReply | undefined;
}

export interface ServeOptions {
  readonly host?: string | undefined;
  readonly port?: number | undefined;
  /** Whether a request moves money, for faults aimed at the next write. */
  readonly isWrite: (request: FixtureRequest) => boolean;
  /** The institution's own reference for the account behind an identifier. */
  readonly accountIdOf: (idValue: string) => string;
  /** The customer answering a payment prompt; absent for institutions without prompts. */
  readonly settleCollection?: (reference: string, approved: boolean) => void;
  /** Appended to the server's address, for APIs under a base path. */
  readonly basePath?: string;
}

/**
 * Starts the fixture server for `state` and answers the FixtureInstitution every contract and
 * end-to-end test reads: the float is where customer debits land and refunds come from.
 */
export async function serveFixtureInstitution(
  name: string,
  state: FixtureState,
  options: ServeOptions,
): Promise<{ institution: FixtureInstitution; server: FixtureServer }> {
  const server = await startFixtureServer({
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port }),
    handle: (request) => state.handle(request),
    ...(state.admit === undefined ? {} : { admit: (request: FixtureRequest) => state.admit?.(request) }),
    isWrite: options.isWrite,
  });
  const { books } = state;
  const settle = options.settleCollection;
  const prompt = (approved: boolean) => (reference: string): void => {
    if (settle === undefined) throw new Error(`${name} fixture: ${name} has no payment prompts`);
    settle(reference, approved);
  };
  const institution: FixtureInstitution = {
    url: `${server.url}${options.basePath ?? ''}`,
    requests: server.requests,
    currency: books.currency,
    accountIdOf: options.accountIdOf,
    balanceOf: (idValue) => books.balanceOf(idValue),
    floatBalance: () => books.format(books.float.balanceMinor),
    floatAvailable: () => books.format(books.available(books.float)),
    settlementBalance: () => books.format(books.float.balanceMinor),
    debitByChannel: (_reference, idValue, amount) => books.debitCustomer(idValue, amount),
    total: () => books.total(),
    seed: (accounts) => state.seed(accounts),
    inject: (fault, on, times, skip, delayMs) => server.inject(fault, on, times, skip, delayMs),
    chaos: (plan) => server.chaos(plan),
    faultCounts: server.faultCounts,
    writeFaultCounts: server.writeFaultCounts,
    approveCollection: prompt(true),
    rejectCollection: prompt(false),
    close: () => server.close(),
  };
  return { institution, server };
}
