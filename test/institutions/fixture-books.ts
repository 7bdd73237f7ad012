import { assert } from '../../src/domain/errors.js';
import type { PartyIdType } from '../../src/domain/identifiers.js';
import type { PostalAddress } from '../../src/domain/iso20022.js';
import { formatMinorUnits, toMinorUnits } from '../../src/domain/money.js';
import type { AccountStatus } from '../../src/ports/core-banking.js';

/**
 * The books a fixture institution keeps: customer accounts and the institution's float, in
 * bigint minor units through money.ts. Fixtures wrap it in their institution's wire format;
 * tests read balances back as decimal strings and check that money is conserved (every
 * movement is between two accounts of these books, so the total never changes).
 */

export interface FixtureAccountSeed {
  readonly idType: PartyIdType;
  readonly idValue: string;
  /** The sub-identifier the account answers to (a sub-account of the number); only the REST fixture reads it. */
  readonly idSubValue?: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly middleName?: string;
  /** YYYY-MM-DD */
  readonly dateOfBirth?: string;
  readonly status?: AccountStatus;
  /** Decimal string in the books' currency. */
  readonly balance: string;
  readonly postalAddress?: PostalAddress;
  readonly countryOfResidence?: string;
  readonly kycInformation?: string;
}

export interface FixtureSeed {
  readonly currency: string;
  /** The institution's prefunded float (settlement) account: funds incoming payments, receives collections. */
  readonly floatBalance: string;
  readonly accounts: readonly FixtureAccountSeed[];
}

export interface BookAccount {
  readonly accountId: string;
  readonly seed: FixtureAccountSeed | undefined;
  status: AccountStatus;
  balanceMinor: bigint;
  /** Amount held (reserved) and not available to withdraw. */
  heldMinor: bigint;
}

export class InsufficientFunds extends Error {}

export class FixtureBooks {
  readonly currency: string;
  readonly float: BookAccount;
  readonly #accounts = new Map<string, BookAccount>();
  readonly #byIdentifier = new Map<string, BookAccount>();

  constructor(currency: string, floatBalance: string, floatAccountId: string) {
    this.currency = currency;
    this.float = this.#open(floatAccountId, undefined, 'active', floatBalance);
  }

  /** Opens a customer account under the identifier of its seed. */
  add(seed: FixtureAccountSeed, accountId: string): BookAccount {
    assert(!this.#byIdentifier.has(identifierKey(seed.idType, seed.idValue)), `fixture: ${seed.idType} ${seed.idValue} seeded twice`);
    const account = this.#open(accountId, seed, seed.status ?? 'active', seed.balance);
    this.#byIdentifier.set(identifierKey(seed.idType, seed.idValue), account);
    return account;
  }

  byIdentifier(idType: string, idValue: string): BookAccount | undefined {
    return this.#byIdentifier.get(identifierKey(idType, idValue));
  }

  /** A customer account by the identifier value alone (tests seed one identifier type at a time). */
  byIdValue(idValue: string): BookAccount | undefined {
    for (const account of this.#byIdentifier.values()) if (account.seed?.idValue === idValue) return account;
    return undefined;
  }

  byAccountId(accountId: string): BookAccount | undefined {
    return this.#accounts.get(accountId);
  }

  minor(amount: string): bigint {
    return toMinorUnits(amount, this.currency);
  }

  format(minor: bigint): string {
    return formatMinorUnits(minor, this.currency);
  }

  available(account: BookAccount): bigint {
    return account.balanceMinor - account.heldMinor;
  }

  /**
   * The amount with at least `decimals` digits after the point ("10.50", "100.500000"): the
   * non-canonical forms institutions write, which adapters must read by value. Fixture-only:
   * the connector itself writes canonical amounts through money.ts.
   */
  formatPadded(minor: bigint, decimals: number): string {
    const [whole = '0', fraction = ''] = this.format(minor).split('.');
    return decimals === 0 && fraction === '' ? whole : `${whole}.${fraction.padEnd(decimals, '0')}`;
  }

  hold(account: BookAccount, minor: bigint): void {
    if (this.available(account) < minor) throw new InsufficientFunds();
    account.heldMinor += minor;
  }

  releaseHold(account: BookAccount, minor: bigint): void {
    assert(account.heldMinor >= minor, 'fixture: releasing more than is held');
    account.heldMinor -= minor;
  }

  /** Moves money between two accounts of these books; the source must have it available. */
  move(from: BookAccount, to: BookAccount, minor: bigint): void {
    if (this.available(from) < minor) throw new InsufficientFunds();
    from.balanceMinor -= minor;
    to.balanceMinor += minor;
  }

  /**
   * Cash in at the counter: money enters the books. Institutions such as Fineract only offer
   * deposits and withdrawals, so an adapter pairs a deposit with a withdrawal of the same amount
   * and the total is back where it was once both are booked.
   */
  deposit(account: BookAccount, minor: bigint): void {
    account.balanceMinor += minor;
  }

  /** Cash out at the counter: money leaves the books; the amount must be available. */
  withdraw(account: BookAccount, minor: bigint): void {
    if (this.available(account) < minor) throw new InsufficientFunds();
    account.balanceMinor -= minor;
  }

  /** A customer pays the institution outside the connector (the bank flow's channel debit): customer to float. */
  debitCustomer(idValue: string, amount: string): void {
    const account = this.byIdValue(idValue);
    assert(account !== undefined, `fixture: no account for ${idValue}`);
    this.move(account, this.float, this.minor(amount));
  }

  /** Every account's balance and held amount now, and a function that puts them back (a rolled-back transaction). */
  snapshot(): () => void {
    const saved = [...this.#accounts.values()].map((account) => ({ account, balanceMinor: account.balanceMinor, heldMinor: account.heldMinor }));
    return () => {
      for (const entry of saved) {
        entry.account.balanceMinor = entry.balanceMinor;
        entry.account.heldMinor = entry.heldMinor;
      }
    };
  }

  balanceOf(idValue: string): string {
    const account = this.byIdValue(idValue);
    assert(account !== undefined, `fixture: no account for ${idValue}`);
    return this.format(account.balanceMinor);
  }

  total(): string {
    let sum = 0n;
    for (const account of this.#accounts.values()) sum += account.balanceMinor;
    return this.format(sum);
  }

  #open(accountId: string, seed: FixtureAccountSeed | undefined, status: AccountStatus, balance: string): BookAccount {
    assert(!this.#accounts.has(accountId), `fixture: account ${accountId} opened twice`);
    const account: BookAccount = { accountId, seed, status, balanceMinor: toMinorUnits(balance, this.currency), heldMinor: 0n };
    this.#accounts.set(accountId, account);
    return account;
  }
}

function identifierKey(idType: string, idValue: string): string {
  return `${idType}\u0000${idValue}`;
}
