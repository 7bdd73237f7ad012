import { AMOUNT_PATTERN } from '../../../src/domain/money.js';
import { FixtureBooks, InsufficientFunds, type BookAccount, type FixtureSeed } from '../fixture-books.js';
import { serveFixtureInstitution, type FixtureInstitution } from '../fixture-institution.js';
import type { FixtureReply, FixtureRequest } from '../fixture-server.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import type { RestAccountStatus, RestErrorCode, RestParty, RestReservationState } from '../../../src/adapters/core-banking/rest/rest-wire.js';

/**
 * A fixture institution implementing docs/reference-core-banking-api.yaml on loopback, with
 * real books: reservations hold float, commits move it to the payee, collections wait for the
 * customer, refunds pay back from the float. Every write is idempotent on the reference.
 */

export interface RestFixtureOptions extends FixtureSeed {
  readonly host?: string;
  readonly port?: number;
  /** When set, every request must carry `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
}

interface Reservation {
  readonly reference: string;
  readonly payee: BookAccount;
  readonly amountMinor: bigint;
  state: RestReservationState;
}

interface Debit {
  readonly reference: string;
  readonly type: 'COLLECTION' | 'REFUND';
  readonly customer: BookAccount;
  readonly amountMinor: bigint;
  readonly fingerprint: string;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
}

const REFERENCE = /^[0-9A-Za-z][0-9A-Za-z-]{0,63}$/;

export async function startRestFixture(options: RestFixtureOptions): Promise<FixtureInstitution> {
  const state = new RestInstitution(options);
  const { institution } = await serveFixtureInstitution('rest', state, {
    host: options.host,
    port: options.port,
    isWrite: (request) => request.method === 'POST',
    accountIdOf: (idValue) => state.account(idValue).accountId,
    settleCollection: (reference, approved) => state.settleCollection(reference, approved),
  });
  return institution;
}

class RestInstitution {
  readonly books: FixtureBooks;
  readonly #reservations = new Map<string, Reservation>();
  readonly #debits = new Map<string, Debit>();
  /** References released before any reservation arrived: a late reserve under them is refused. */
  readonly #releasedUnknown = new Set<string>();
  readonly #apiKey: string | undefined;
  #nextAccount = 1;

  constructor(options: RestFixtureOptions) {
    this.books = new FixtureBooks(options.currency, options.floatBalance, 'FLOAT-1');
    this.#apiKey = options.apiKey;
    this.seed(options.accounts);
  }

  seed(accounts: RestFixtureOptions['accounts']): void {
    for (const account of accounts) this.books.add(account, `ACC-${String(this.#nextAccount++).padStart(4, '0')}`);
  }

  account(idValue: string): BookAccount {
    const account = this.books.byIdValue(idValue);
    if (account === undefined) throw new Error(`rest fixture: no account for ${idValue}`);
    return account;
  }

  handle(request: FixtureRequest): FixtureReply {
    if (this.#apiKey !== undefined && request.headers.authorization !== `Bearer ${this.#apiKey}`) {
      return error(401, 'UNAUTHORIZED', 'missing or wrong API key');
    }
    const parts = request.path.split('/').filter((part) => part !== '').map(decodeURIComponent);
    const route = `${request.method} /${parts.map((part, index) => (index === 0 ? part : ':')).join('/')}`;
    switch (route) {
      case 'GET /health':
        return { status: 200, body: { status: 'UP' } };
      case 'GET /parties/:/:':
        return this.lookup(parts[1] ?? '', parts[2] ?? '');
      case 'POST /reservations':
        return this.reserve(request.body);
      case 'POST /reservations/:/:':
        if (parts[2] === 'commit') return this.commit(parts[1] ?? '', request.body);
        if (parts[2] === 'release') return this.release(parts[1] ?? '');
        return error(404, 'INVALID_REQUEST', 'no such route');
      case 'POST /collections':
        return this.debit(request.body, 'COLLECTION');
      case 'POST /refunds':
        return this.debit(request.body, 'REFUND');
      case 'GET /transactions/:':
        return this.status(parts[1] ?? '');
      default:
        return error(404, 'INVALID_REQUEST', 'no such route');
    }
  }

  lookup(idType: string, idValue: string): FixtureReply {
    const account = this.books.byIdentifier(idType, idValue);
    if (account?.seed === undefined) return error(404, 'PARTY_NOT_FOUND', 'no such party');
    const seed = account.seed;
    const party: RestParty = {
      accountId: account.accountId,
      idType: seed.idType,
      idValue: seed.idValue,
      currency: this.books.currency,
      status: wireStatus(account),
      name: {
        displayName: [seed.firstName, seed.middleName, seed.lastName].filter((part) => part !== undefined).join(' '),
        firstName: seed.firstName,
        ...(seed.middleName === undefined ? {} : { middleName: seed.middleName }),
        lastName: seed.lastName,
      },
      ...(seed.dateOfBirth === undefined ? {} : { dateOfBirth: seed.dateOfBirth }),
      ...(seed.countryOfResidence === undefined ? {} : { countryOfResidence: seed.countryOfResidence }),
      ...(seed.kycInformation === undefined ? {} : { kycInformation: seed.kycInformation }),
      ...(seed.postalAddress === undefined ? {} : { postalAddress: wireAddress(seed.postalAddress) }),
    };
    return { status: 200, body: party };
  }

  reserve(body: unknown): FixtureReply {
    const input = this.#moneyInput(body, ['reference', 'payeeAccountId']);
    if ('reply' in input) return input.reply;
    const reference = input.fields['reference'] ?? '';
    if (this.#releasedUnknown.has(reference)) return error(409, 'RESERVATION_RELEASED', 'reference released before the reservation arrived');
    const existing = this.#reservations.get(reference);
    if (existing !== undefined) {
      const same = existing.payee.accountId === input.fields['payeeAccountId'] && existing.amountMinor === input.amountMinor;
      return same ? { status: 200, body: this.#reservationBody(existing) } : error(409, 'REFERENCE_CONFLICT', 'reference used with other content');
    }
    const payee = this.books.byAccountId(input.fields['payeeAccountId'] ?? '');
    if (payee?.seed === undefined) return error(404, 'ACCOUNT_NOT_FOUND', 'no such payee account');
    try {
      this.books.hold(this.books.float, input.amountMinor);
    } catch (failure) {
      if (failure instanceof InsufficientFunds) return error(422, 'INSUFFICIENT_FLOAT', 'float too low');
      throw failure;
    }
    const reservation: Reservation = { reference, payee, amountMinor: input.amountMinor, state: 'HELD' };
    this.#reservations.set(reference, reservation);
    return { status: 201, body: this.#reservationBody(reservation) };
  }

  commit(reference: string, body: unknown): FixtureReply {
    const input = this.#moneyInput(body, ['payeeAccountId']);
    if ('reply' in input) return input.reply;
    const reservation = this.#reservations.get(reference);
    if (reservation === undefined) return error(404, 'RESERVATION_NOT_FOUND', 'nothing reserved under this reference');
    if (reservation.payee.accountId !== input.fields['payeeAccountId'] || reservation.amountMinor !== input.amountMinor) {
      return error(409, 'REFERENCE_CONFLICT', 'commit differs from the reservation');
    }
    if (reservation.state === 'RELEASED') return error(409, 'RESERVATION_RELEASED', 'reservation was released');
    if (reservation.state === 'HELD') {
      const refusal = receiveRefusal(reservation.payee);
      if (refusal !== undefined) return error(422, refusal, 'payee account cannot receive');
      this.books.releaseHold(this.books.float, reservation.amountMinor);
      this.books.move(this.books.float, reservation.payee, reservation.amountMinor);
      reservation.state = 'COMMITTED';
    }
    return { status: 200, body: this.#reservationBody(reservation) };
  }

  release(reference: string): FixtureReply {
    const reservation = this.#reservations.get(reference);
    if (reservation === undefined) {
      this.#releasedUnknown.add(reference);
      return error(404, 'RESERVATION_NOT_FOUND', 'nothing reserved under this reference');
    }
    if (reservation.state === 'COMMITTED') return error(409, 'RESERVATION_COMMITTED', 'reservation was committed');
    if (reservation.state === 'HELD') {
      this.books.releaseHold(this.books.float, reservation.amountMinor);
      reservation.state = 'RELEASED';
    }
    return { status: 200, body: this.#reservationBody(reservation) };
  }

  debit(body: unknown, type: Debit['type']): FixtureReply {
    const input = this.#moneyInput(body, type === 'REFUND' ? ['reference', 'payerId', 'originalReference'] : ['reference', 'payerId']);
    if ('reply' in input) return input.reply;
    const reference = input.fields['reference'] ?? '';
    const fingerprint = `${type}|${input.fields['payerId']}|${input.amountMinor}|${input.fields['originalReference'] ?? ''}`;
    const existing = this.#debits.get(reference);
    if (existing !== undefined) {
      return existing.fingerprint === fingerprint ? { status: 200, body: this.#debitBody(existing) } : error(409, 'REFERENCE_CONFLICT', 'reference used with other content');
    }
    const customer = this.books.byIdValue(input.fields['payerId'] ?? '');
    if (customer === undefined) return error(404, 'PAYER_NOT_FOUND', 'no such payer');
    const refusal = type === 'REFUND' ? (customer.status === 'closed' ? 'ACCOUNT_CLOSED' : undefined) : receiveRefusal(customer);
    if (refusal !== undefined) return error(422, refusal, 'payer account cannot take part');
    if (type === 'REFUND') {
      try {
        this.books.move(this.books.float, customer, input.amountMinor);
      } catch (failure) {
        if (failure instanceof InsufficientFunds) return error(422, 'INSUFFICIENT_FLOAT', 'float too low');
        throw failure;
      }
    }
    const debit: Debit = { reference, type, customer, amountMinor: input.amountMinor, fingerprint, status: type === 'REFUND' ? 'SUCCEEDED' : 'PENDING' };
    this.#debits.set(reference, debit);
    return { status: type === 'REFUND' ? 201 : 202, body: this.#debitBody(debit) };
  }

  settleCollection(reference: string, approved: boolean): void {
    const debit = this.#debits.get(reference);
    if (debit?.type !== 'COLLECTION' || debit.status !== 'PENDING') throw new Error(`rest fixture: no pending collection ${reference}`);
    if (!approved || this.books.available(debit.customer) < debit.amountMinor) {
      debit.status = 'FAILED';
      return;
    }
    this.books.move(debit.customer, this.books.float, debit.amountMinor);
    debit.status = 'SUCCEEDED';
  }

  status(reference: string): FixtureReply {
    const reservation = this.#reservations.get(reference);
    if (reservation !== undefined) {
      const status = reservation.state === 'HELD' ? 'PENDING' : reservation.state === 'COMMITTED' ? 'SUCCEEDED' : 'FAILED';
      return { status: 200, body: { reference, type: 'RESERVATION', amount: this.books.format(reservation.amountMinor), currency: this.books.currency, status } };
    }
    const debit = this.#debits.get(reference);
    if (debit !== undefined) return { status: 200, body: this.#debitBody(debit) };
    return error(404, 'TRANSACTION_NOT_FOUND', 'unknown reference');
  }

  /** Checks the fields every money-moving body carries; answers 400/422 the way the API documents. */
  #moneyInput(body: unknown, names: readonly string[]): { fields: Record<string, string>; amountMinor: bigint } | { reply: FixtureReply } {
    if (!isRecord(body)) return { reply: error(400, 'INVALID_REQUEST', 'body must be an object') };
    const fields: Record<string, string> = {};
    for (const name of [...names, 'amount', 'currency']) {
      const value = body[name];
      if (typeof value !== 'string') return { reply: error(400, 'INVALID_REQUEST', `${name} must be a string`) };
      fields[name] = value;
    }
    if (fields['reference'] !== undefined && !REFERENCE.test(fields['reference'])) return { reply: error(400, 'INVALID_REQUEST', 'bad reference') };
    if (!AMOUNT_PATTERN.test(fields['amount'] ?? '')) return { reply: error(400, 'INVALID_REQUEST', 'amount must be a decimal string') };
    if (fields['currency'] !== this.books.currency) return { reply: error(422, 'CURRENCY_NOT_SUPPORTED', 'other currency') };
    return { fields, amountMinor: this.books.minor(fields['amount'] ?? '0') };
  }

  #reservationBody(reservation: Reservation): unknown {
    return {
      reference: reservation.reference,
      payeeAccountId: reservation.payee.accountId,
      // Two decimals always, as many banks write them: the adapter must compare by value.
      amount: this.books.formatPadded(reservation.amountMinor, 2),
      currency: this.books.currency,
      state: reservation.state,
    };
  }

  #debitBody(debit: Debit): unknown {
    return {
      reference: debit.reference,
      type: debit.type,
      amount: this.books.formatPadded(debit.amountMinor, 2),
      currency: this.books.currency,
      status: debit.status,
      institutionReference: `RC-${debit.reference.slice(0, 8)}`,
    };
  }
}

function wireStatus(account: BookAccount): RestAccountStatus {
  switch (account.status) {
    case 'active':
      return 'ACTIVE';
    case 'barred':
      return 'BARRED';
    case 'blocked':
      return 'BLOCKED';
    case 'closed':
      return 'CLOSED';
  }
}

function receiveRefusal(account: BookAccount): RestErrorCode | undefined {
  switch (account.status) {
    case 'active':
      return undefined;
    case 'barred':
      return 'ACCOUNT_BARRED';
    case 'blocked':
      return 'ACCOUNT_BLOCKED';
    case 'closed':
      return 'ACCOUNT_CLOSED';
  }
}

function wireAddress(address: NonNullable<RestFixtureOptions['accounts'][number]['postalAddress']>): Record<string, string> {
  const pairs: Array<[string, string | undefined]> = [
    ['addressType', address.AdrTpCd], ['department', address.Dept], ['subDepartment', address.SubDept],
    ['streetName', address.StrtNm], ['buildingNumber', address.BldgNb], ['buildingName', address.BldgNm],
    ['floor', address.Flr], ['postBox', address.PstBx], ['room', address.Room], ['postCode', address.PstCd],
    ['townName', address.TwnNm], ['townLocationName', address.TwnLctnNm], ['districtName', address.DstrctNm],
    ['countrySubDivision', address.CtrySubDvsn], ['country', address.Ctry], ['addressLine', address.AdrLine],
  ];
  return Object.fromEntries(pairs.filter((pair): pair is [string, string] => pair[1] !== undefined));
}

function error(status: number, code: RestErrorCode, message: string): FixtureReply {
  return { status, body: { code, message } };
}
