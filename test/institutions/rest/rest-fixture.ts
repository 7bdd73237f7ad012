import { request as httpRequest } from 'node:http';
import { systemClock, type Clock } from '../../../src/ports/clock.js';
import { AMOUNT_PATTERN } from '../../../src/domain/money.js';
import { FixtureBooks, InsufficientFunds, type BookAccount, type FixtureSeed } from '../fixture-books.js';
import { serveFixtureInstitution, type FixtureInstitution } from '../fixture-institution.js';
import type { FixtureReply, FixtureRequest } from '../fixture-server.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import type { RestAccountStatus, RestErrorCode, RestFailureReason, RestParty, RestReservationState } from '../../../src/adapters/core-banking/rest/rest-wire.js';

/**
 * A fixture institution implementing docs/reference-core-banking-api.yaml (v1.1.0) on loopback,
 * written from that document and nothing else; each behaviour names the part it follows:
 * - "One account model": one float; reservations hold it, commits move the hold to the payee,
 *   collections and the channel's own debits move the customer's money into it, refunds pay
 *   back from it. (The channel's debit, outside the API, is `debitByChannel`.)
 * - "Rules that hold for every operation": writes idempotent on `reference` (a repeat with the
 *   same content answers 200 as it stands, other content 409 REFERENCE_CONFLICT); amounts as
 *   decimal strings; 400 INVALID_REQUEST and 401 UNAUTHORIZED on every operation.
 * - GET /parties: the account with exactly the idSubValue asked for (none asked, none seeded);
 *   Party.idSubValue echoes the query; otherwise 404 PARTY_NOT_FOUND.
 * - POST /reservations, /commit, /release: HELD -> COMMITTED | RELEASED; a release before its
 *   reserve answers 404 and spends the reference (a late reserve answers 409 RESERVATION_RELEASED).
 * - POST /collections, "Ending": PENDING until the customer answers; an unanswered prompt ends
 *   FAILED, reason EXPIRED, 5 minutes after the request (by `clock`); DECLINED and
 *   INSUFFICIENT_FUNDS likewise as reasons. "Callback": with `callbackUrl`, one PUT of a
 *   CollectionCallback once the collection ends, sent after the status endpoint shows it.
 * - "Refunds": checked against the original debit in the documented order (ORIGINAL_NOT_FOUND,
 *   ORIGINAL_NOT_DEBITED, PAYER_MISMATCH, CURRENCY_MISMATCH, REFUND_EXCEEDS_ORIGINAL).
 * The ambiguous outcomes (applied then unanswered, applied then 5xx, refused with 5xx) come from
 * the fixture server's faults, which every fixture shares.
 */

export interface RestFixtureOptions extends FixtureSeed {
  readonly host?: string;
  readonly port?: number;
  /** When set, every request must carry `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** Time as the institution sees it, for prompt expiry; share a test clock with the connector. */
  readonly clock?: Clock;
  /** Headers sent with every CollectionCallback (the connector's callback secret header). */
  readonly callbackHeaders?: Readonly<Record<string, string>>;
}

interface Reservation {
  readonly reference: string;
  readonly payee: BookAccount;
  readonly amountMinor: bigint;
  state: RestReservationState;
}

interface Debit {
  readonly reference: string;
  /** CHANNEL: the customer's channel debited them itself (bank flow), outside the API. */
  readonly type: 'COLLECTION' | 'REFUND' | 'CHANNEL';
  readonly customer: BookAccount;
  readonly amountMinor: bigint;
  readonly fingerprint: string;
  readonly createdAtMs: number;
  readonly originalReference?: string;
  readonly callbackUrl?: string;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  reason?: RestFailureReason;
}

const REFERENCE = /^[0-9A-Za-z][0-9A-Za-z-]{0,63}$/;
/** OriginalReference: 1-128 characters, no control characters. */
const ORIGINAL_REFERENCE = /^[^\u0000-\u001f\u007f]{1,128}$/u;
/** "Ending": an unanswered payment prompt ends FAILED, reason EXPIRED, after 5 minutes. */
export const PROMPT_LIFETIME_MS = 5 * 60_000;

export async function startRestFixture(options: RestFixtureOptions): Promise<FixtureInstitution> {
  const state = new RestInstitution(options);
  const { institution } = await serveFixtureInstitution('rest', state, {
    host: options.host,
    port: options.port,
    isWrite: (request) => request.method === 'POST',
    accountIdOf: (idValue) => state.account(idValue).accountId,
    settleCollection: (reference, approved) => state.settleCollection(reference, approved),
  });
  // The channel's debit is a record of the institution's, so that a refund can be checked against it.
  return { ...institution, debitByChannel: (reference, idValue, amount) => state.channelDebit(reference, idValue, amount) };
}

class RestInstitution {
  readonly books: FixtureBooks;
  readonly #reservations = new Map<string, Reservation>();
  readonly #debits = new Map<string, Debit>();
  /** References released before any reservation arrived: a late reserve under them is refused. */
  readonly #releasedUnknown = new Set<string>();
  readonly #apiKey: string | undefined;
  readonly #clock: Clock;
  readonly #callbackHeaders: Readonly<Record<string, string>>;
  #nextAccount = 1;

  constructor(options: RestFixtureOptions) {
    this.books = new FixtureBooks(options.currency, options.floatBalance, 'FLOAT-1');
    this.#apiKey = options.apiKey;
    this.#clock = options.clock ?? systemClock;
    this.#callbackHeaders = options.callbackHeaders ?? {};
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
        return this.lookup(parts[1] ?? '', parts[2] ?? '', request.query.get('idSubValue') ?? undefined);
      case 'POST /reservations':
        return this.reserve(request.body);
      case 'POST /reservations/:/:':
        if (parts[2] === 'commit') return this.commit(parts[1] ?? '', request.body);
        if (parts[2] === 'release') return this.release(parts[1] ?? '');
        return error(400, 'INVALID_REQUEST', 'no such route');
      case 'POST /collections':
        return this.debit(request.body, 'COLLECTION');
      case 'POST /refunds':
        return this.debit(request.body, 'REFUND');
      case 'GET /transactions/:':
        return this.status(parts[1] ?? '');
      default:
        return error(400, 'INVALID_REQUEST', 'no such route');
    }
  }

  /**
   * GET /parties/{idType}/{idValue}?idSubValue: the account with exactly that sub-identifier (a
   * customer seeded without one has none to answer for a sub-value, and one seeded with one answers
   * only for it); Party.idSubValue echoes the query.
   */
  lookup(idType: string, idValue: string, idSubValue: string | undefined): FixtureReply {
    const account = this.books.byIdentifier(idType, idValue);
    if (account?.seed === undefined || account.seed.idSubValue !== idSubValue) return error(404, 'PARTY_NOT_FOUND', 'no such party');
    const seed = account.seed;
    const party: RestParty = {
      accountId: account.accountId,
      idType: seed.idType,
      idValue: seed.idValue,
      ...(seed.idSubValue === undefined ? {} : { idSubValue: seed.idSubValue }),
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

  debit(body: unknown, type: 'COLLECTION' | 'REFUND'): FixtureReply {
    const input = this.#moneyInput(body, type === 'REFUND' ? ['reference', 'payerId', 'originalReference'] : ['reference', 'payerId']);
    if ('reply' in input) return input.reply;
    const reference = input.fields['reference'] ?? '';
    const originalReference = input.fields['originalReference'];
    if (originalReference !== undefined && !ORIGINAL_REFERENCE.test(originalReference)) return error(400, 'INVALID_REQUEST', 'bad originalReference');
    const callbackUrl = isRecord(body) && typeof body['callbackUrl'] === 'string' ? body['callbackUrl'] : undefined;
    const fingerprint = `${type}|${input.fields['payerId']}|${input.amountMinor}|${originalReference ?? ''}`;
    const existing = this.#debits.get(reference);
    if (existing !== undefined) {
      if (existing.fingerprint !== fingerprint) return error(409, 'REFERENCE_CONFLICT', 'reference used with other content');
      this.#expire(existing);
      return { status: 200, body: this.#debitBody(existing) };
    }
    const customer = this.books.byIdValue(input.fields['payerId'] ?? '');
    if (customer === undefined) return error(404, 'PAYER_NOT_FOUND', 'no such payer');
    if (type === 'REFUND') {
      const mismatch = this.#checkAgainstOriginal(originalReference ?? '', customer, input.amountMinor);
      if (mismatch !== undefined) return mismatch;
    }
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
    const debit: Debit = {
      reference,
      type,
      customer,
      amountMinor: input.amountMinor,
      fingerprint,
      createdAtMs: this.#clock.now().getTime(),
      ...(originalReference === undefined ? {} : { originalReference }),
      ...(callbackUrl === undefined ? {} : { callbackUrl }),
      status: type === 'REFUND' ? 'SUCCEEDED' : 'PENDING',
    };
    this.#debits.set(reference, debit);
    return { status: type === 'REFUND' ? 201 : 202, body: this.#debitBody(debit) };
  }

  /**
   * "Refunds": the original must be a debit of ours that succeeded, of the same customer and
   * currency (the fixture has one), and all refunds under it together at most its amount.
   */
  #checkAgainstOriginal(originalReference: string, customer: BookAccount, amountMinor: bigint): FixtureReply | undefined {
    const original = this.#debits.get(originalReference);
    if (original === undefined || original.type === 'REFUND') return error(404, 'ORIGINAL_NOT_FOUND', 'no debit under originalReference');
    this.#expire(original);
    if (original.status !== 'SUCCEEDED') return error(409, 'ORIGINAL_NOT_DEBITED', 'the original debit did not succeed');
    if (original.customer !== customer) return error(422, 'PAYER_MISMATCH', 'the refund names another customer than the original');
    let refunded = 0n;
    for (const debit of this.#debits.values()) {
      if (debit.type === 'REFUND' && debit.originalReference === originalReference && debit.status === 'SUCCEEDED') refunded += debit.amountMinor;
    }
    if (refunded + amountMinor > original.amountMinor) return error(422, 'REFUND_EXCEEDS_ORIGINAL', 'refunds would exceed the original debit');
    return undefined;
  }

  /** The channel's own debit of a customer into the float (bank flow), kept as a record for refunds. */
  channelDebit(reference: string, idValue: string, amount: string): void {
    const customer = this.account(idValue);
    const amountMinor = this.books.minor(amount);
    if (this.#debits.has(reference)) throw new Error(`rest fixture: reference ${reference} already used`);
    this.books.move(customer, this.books.float, amountMinor);
    this.#debits.set(reference, { reference, type: 'CHANNEL', customer, amountMinor, fingerprint: `CHANNEL|${idValue}|${amountMinor}`, createdAtMs: this.#clock.now().getTime(), status: 'SUCCEEDED' });
  }

  settleCollection(reference: string, approved: boolean): void {
    const debit = this.#debits.get(reference);
    if (debit !== undefined) this.#expire(debit);
    if (debit?.type !== 'COLLECTION' || debit.status !== 'PENDING') throw new Error(`rest fixture: no pending collection ${reference}`);
    if (!approved) this.#end(debit, 'FAILED', 'DECLINED');
    else if (debit.customer.status !== 'active') this.#end(debit, 'FAILED', 'ACCOUNT_NOT_ACTIVE');
    else if (this.books.available(debit.customer) < debit.amountMinor) this.#end(debit, 'FAILED', 'INSUFFICIENT_FUNDS');
    else {
      this.books.move(debit.customer, this.books.float, debit.amountMinor);
      this.#end(debit, 'SUCCEEDED');
    }
  }

  /** "Ending": a prompt nobody answered within PROMPT_LIFETIME_MS is FAILED, reason EXPIRED. */
  #expire(debit: Debit): void {
    if (debit.type === 'COLLECTION' && debit.status === 'PENDING' && this.#clock.now().getTime() - debit.createdAtMs >= PROMPT_LIFETIME_MS) {
      this.#end(debit, 'FAILED', 'EXPIRED');
    }
  }

  #end(debit: Debit, status: 'SUCCEEDED' | 'FAILED', reason?: RestFailureReason): void {
    debit.status = status;
    if (reason !== undefined) debit.reason = reason;
    // "Callback": sent after the status endpoint shows the ending; a lost callback is only a hint lost.
    if (debit.callbackUrl !== undefined) sendCallback(debit.callbackUrl, this.#callbackHeaders, this.#callbackBody(debit));
  }

  status(reference: string): FixtureReply {
    const reservation = this.#reservations.get(reference);
    if (reservation !== undefined) {
      const status = reservation.state === 'HELD' ? 'PENDING' : reservation.state === 'COMMITTED' ? 'SUCCEEDED' : 'FAILED';
      return { status: 200, body: { reference, type: 'RESERVATION', amount: this.books.format(reservation.amountMinor), currency: this.books.currency, status } };
    }
    const debit = this.#debits.get(reference);
    if (debit === undefined || debit.type === 'CHANNEL') return error(404, 'TRANSACTION_NOT_FOUND', 'unknown reference');
    this.#expire(debit);
    return { status: 200, body: this.#debitBody(debit) };
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
      ...(debit.reason === undefined ? {} : { reason: debit.reason }),
      institutionReference: `RC-${debit.reference.slice(0, 8)}`,
    };
  }

  #callbackBody(debit: Debit): Record<string, string> {
    return {
      reference: debit.reference,
      status: debit.status,
      ...(debit.reason === undefined ? {} : { reason: debit.reason }),
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

/** One PUT of a CollectionCallback; its answer and any failure are ignored, as a hint may be lost. */
function sendCallback(url: string, headers: Readonly<Record<string, string>>, body: Record<string, string>): void {
  const payload = JSON.stringify(body);
  const sent = { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) };
  const request = httpRequest(url, { method: 'PUT', headers: sent }, (response) => response.resume());
  request.on('error', () => undefined);
  request.end(payload);
}

function error(status: number, code: RestErrorCode, message: string): FixtureReply {
  return { status, body: { code, message } };
}
