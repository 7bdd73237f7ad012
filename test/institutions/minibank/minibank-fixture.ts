import { FixtureBooks, InsufficientFunds, type BookAccount, type FixtureAccountSeed, type FixtureSeed } from '../fixture-books.js';
import { serveFixtureInstitution, type FixtureInstitution } from '../fixture-institution.js';
import type { FixtureReply, FixtureRequest } from '../fixture-server.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import type { MiniBankCustomerState, MiniBankRefusal } from '../../../src/adapters/core-banking/minibank/minibank-wire.js';

/**
 * MiniBank on loopback: wallets and a float in minor units, payments idempotent on Idempotency-Key.
 * MiniBank is the institution invented for docs/adding-an-institution.md; its API is the one
 * written down in §2 of that guide ("Step by step, with MiniBank") and in the header of
 * src/adapters/core-banking/minibank/minibank-wire.ts, which copies it. Each route and refusal
 * below cites it ("§2"); what §2 leaves open is marked as the fixture's own choice.
 */

export interface MiniBankFixtureOptions extends FixtureSeed {
  readonly host?: string;
  readonly port?: number;
  readonly apiKey?: string;
}

export const MINIBANK_FIXTURE_API_KEY = 'minibank-test-key';

interface Payment {
  readonly key: string;
  readonly to: BookAccount;
  readonly amountMinor: bigint;
  readonly state: 'BOOKED' | 'REJECTED';
}

export async function startMiniBankFixture(options: MiniBankFixtureOptions): Promise<FixtureInstitution> {
  const bank = new MiniBank(options);
  const { institution } = await serveFixtureInstitution('minibank', bank, {
    host: options.host,
    port: options.port,
    isWrite: (request) => request.method === 'POST',
    accountIdOf: (idValue) => bank.account(idValue).accountId,
  });
  return institution;
}

class MiniBank {
  readonly books: FixtureBooks;
  readonly #payments = new Map<string, Payment>();
  readonly #apiKey: string;

  constructor(options: MiniBankFixtureOptions) {
    this.books = new FixtureBooks(options.currency, options.floatBalance, 'FLOAT');
    this.#apiKey = options.apiKey ?? MINIBANK_FIXTURE_API_KEY;
    this.seed(options.accounts);
  }

  seed(accounts: readonly FixtureAccountSeed[]): void {
    for (const seed of accounts) this.books.add(seed, `W-${seed.idValue.slice(-6)}`);
  }

  account(idValue: string): BookAccount {
    const account = this.books.byIdValue(idValue);
    if (account === undefined) throw new Error(`minibank fixture: no wallet for ${idValue}`);
    return account;
  }

  handle(request: FixtureRequest): FixtureReply {
    // §2: "an X-Api-Key header" on every call. The status of a wrong key is not in §2: 401 is the fixture's choice.
    if (request.headers['x-api-key'] !== this.#apiKey) return { status: 401, body: { error: 'bad key' } };
    // §2: `GET /ping` (minibank-wire.ts: answers { ok: true }).
    if (request.method === 'GET' && request.path === '/ping') return { status: 200, body: { ok: true } };
    // §2: `GET /float`, the balance in minor units as a digit string (minibank-wire.ts: { balance_minor, ccy }).
    if (request.method === 'GET' && request.path === '/float') {
      return { status: 200, body: { balance_minor: this.books.float.balanceMinor.toString(), ccy: this.books.currency } };
    }
    // §2: `GET /customers?msisdn=`, customers found by MSISDN only.
    if (request.method === 'GET' && request.path === '/customers') return this.customers(request.query.get('msisdn') ?? '');
    // §2: `POST /payments` with an `Idempotency-Key` header.
    if (request.method === 'POST' && request.path === '/payments') return this.pay(request);
    // §2: `GET /payments/{key}` (minibank-wire.ts: the payment, or 404).
    if (request.method === 'GET' && request.path.startsWith('/payments/')) {
      const payment = this.#payments.get(decodeURIComponent(request.path.slice('/payments/'.length)));
      return payment === undefined ? { status: 404, body: { error: 'no such payment' } } : { status: 200, body: this.#body(payment) };
    }
    // Not in §2: any other route is 404, the fixture's choice.
    return { status: 404, body: { error: 'no such route' } };
  }

  customers(msisdn: string): FixtureReply {
    const account = this.books.byIdentifier('MSISDN', msisdn);
    // §2: one customer and one wallet per number, the number echoed as `msisdn`; an unknown number
    // is an empty list (minibank-wire.ts).
    const customers = account?.seed === undefined ? [] : [{
      msisdn,
      ref: `C-${account.accountId}`,
      given: account.seed.firstName,
      family: account.seed.lastName,
      state: customerState(account),
      wallet: account.accountId,
      ccy: this.books.currency,
    }];
    return { status: 200, body: { customers } };
  }

  pay(request: FixtureRequest): FixtureReply {
    const key = request.headers['idempotency-key'];
    const body = request.body;
    // Not in §2: a payment without its key, from elsewhere than the float, or with an amount that is
    // not a positive digit string (§2: "amounts in minor units as digit strings") is 400, the fixture's choice.
    if (typeof key !== 'string' || !isRecord(body) || body['from'] !== 'FLOAT' || typeof body['to'] !== 'string' || typeof body['amount_minor'] !== 'string' || !/^[1-9][0-9]*$/.test(body['amount_minor'])) {
      return { status: 400, body: { error: 'bad request' } };
    }
    // §2: payments are idempotent on `Idempotency-Key`; a repeat answers the first payment with 200
    // (minibank-wire.ts: "201 new, 200 repeat").
    const existing = this.#payments.get(key);
    if (existing !== undefined) return { status: 200, body: this.#body(existing) };
    const to = this.books.byAccountId(body['to']);
    // §2: "a refused payment is `422 {reason: NSF | FROZEN | SHUT | NO_WALLET}`".
    const refused = (reason: MiniBankRefusal): FixtureReply => ({ status: 422, body: { reason } });
    if (to?.seed === undefined) return refused('NO_WALLET');
    // Not in §2: another currency is 400, the fixture's choice.
    if (body['ccy'] !== this.books.currency) return { status: 400, body: { error: 'bad currency' } };
    // §2: FROZEN or SHUT wallets refuse the payment with their state as the reason.
    const state = customerState(to);
    if (state !== 'OPEN') return refused(state);
    const amountMinor = BigInt(body['amount_minor']);
    try {
      this.books.move(this.books.float, to, amountMinor);
    } catch (failure) {
      // §2: NSF, the float cannot cover the payment.
      if (failure instanceof InsufficientFunds) return refused('NSF');
      throw failure;
    }
    const payment: Payment = { key, to, amountMinor, state: 'BOOKED' };
    this.#payments.set(key, payment);
    // minibank-wire.ts: 201 for a new payment.
    return { status: 201, body: this.#body(payment) };
  }

  #body(payment: Payment): unknown {
    return { key: payment.key, to: payment.to.accountId, amount_minor: payment.amountMinor.toString(), ccy: this.books.currency, state: payment.state };
  }
}

/** §2 Step 1: a customer is `OPEN | FROZEN | SHUT`; MiniBank has no "barred", so a barred seed is FROZEN. */
function customerState(account: BookAccount): MiniBankCustomerState {
  switch (account.status) {
    case 'active':
      return 'OPEN';
    case 'barred':
    case 'blocked':
      return 'FROZEN';
    case 'closed':
      return 'SHUT';
  }
}
