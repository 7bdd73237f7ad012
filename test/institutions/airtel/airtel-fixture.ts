import { request as httpRequest } from 'undici';
import { systemClock, type Clock } from '../../../src/ports/clock.js';
import { JsonNumber } from '../../../src/adapters/core-banking/shared/decimal-json.js';
import { FixtureBooks, InsufficientFunds, type BookAccount, type FixtureAccountSeed, type FixtureSeed } from '../fixture-books.js';
import { serveFixtureInstitution, type FixtureInstitution } from '../fixture-institution.js';
import type { FixtureReply, FixtureRequest } from '../fixture-server.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import { COLLECTION_CODES, DISBURSEMENT_CODES, UNKNOWN_SUBSCRIBER_CODE } from '../../../src/adapters/core-banking/airtel/airtel-wire.js';

/**
 * A fixture Airtel Money on loopback, written from Airtel's public developer documents
 * (developers.airtel.africa, "Airtel Money" API reference: Authorization, KYC "User Enquiry",
 * "Account Balance", "Disbursement" v2 with its enquiry, "Collection" USSD push with its
 * enquiry and callback), each behaviour below following the page it names:
 * - Authorization: POST /auth/oauth2/token with client credentials; the token's `expires_in` is
 *   a string of digits; tokens expire and may be revoked early (401 `invalid_token`);
 * - every API call carries `X-Country` and `X-Currency`; MSISDNs without the country code;
 * - every answer is the envelope `{data?, status: {code, message, result_code, response_code,
 *   success}}`; the business outcome is in `status.success`, `status.response_code` and, for
 *   enquiries, `data.transaction.status` (TS success, TF failed, TA ambiguous, TIP in progress).
 *   The HTTP status of a business rejection is not settled by the documents (their one error
 *   sample is an HTTP 400), so the fixture answers rejections with HTTP 200 or 400 as the test
 *   chooses (`rejectionsAs`), and the adapter must decide on the body either way;
 * - KYC of an unknown MSISDN: user enquiry failed, response_code DP02200000000;
 * - enquiries of an id Airtel never saw: "transaction not found" (DP00800001025 for collections,
 *   DP00900001015 for disbursements, result_code ESB000045);
 * - a collection enquiry after the subscriber declined answers TF: final, nobody was debited; one
 *   whose USSD prompt the subscriber left unanswered until it expired answers TE, "transaction
 *   expired" (the transaction statuses' field description lists TF, TS, TA, TIP and TE; 5
 *   minutes here, the documents describe the prompt's timeout, not its length);
 * - the USSD push's 200 answer names no transaction: `data.transaction: {id: false, status:
 *   "SUCCESS"}`, response_code DP00800001006 (Collection API, USSD push, response sample);
 * - B2C disbursements check the encrypted PIN. A disbursement Airtel refused (insufficient
 *   balance, payee not allowed, ...) is a transaction all the same: its enquiry answers TF, and
 *   like any transaction id already seen, its id is refused when sent again with DP00900001017
 *   "Duplicate Transaction Id ... please do transaction enquiry" (the disbursement response
 *   codes' table), never paid twice;
 * - DP00900001014 "Transaction Timed Out: the transaction may be processed or failed; to know
 *   the exact status do the transaction enquiry" (same table): `timeOutNextDisbursement` answers
 *   the next disbursement so, applied or failed as the test says;
 * - DP00900001000, the transaction ambiguous (same table; TA in the enquiry's transaction
 *   statuses above): `ambiguousNextDisbursement` answers the next disbursement so and leaves it
 *   TA, nobody paid yet, its enquiry answering TA, until `settleAmbiguous` ends it as Airtel
 *   later does: TS (the payee is paid then) or TF (final, nobody paid);
 * - callback: `{transaction: {id, message, status_code, airtel_money_id}}` posted to the URL
 *   registered in the portal (`callbackUrl`), without any header of ours.
 * Money moves between our disbursement wallet (the float) and subscribers' wallets, so the
 * books' total never changes.
 */

export interface AirtelFixtureOptions extends FixtureSeed {
  readonly host?: string;
  readonly port?: number;
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly pinEncrypted?: string;
  readonly country?: string;
  readonly dialingCode?: string;
  /** Token lifetime, written as a string of digits as Airtel does. */
  readonly tokenLifetimeSeconds?: number;
  /** Time as the fixture sees it, for token expiry; share a test clock with the adapter. */
  readonly clock?: Clock;
  /** Where to post the callback when a collection ends (the connector's PUT /callback). */
  readonly callbackUrl?: string;
  /** The HTTP status of business rejections (Airtel's documents leave it open): 200 (default) or 400. */
  readonly rejectionsAs?: 200 | 400;
}

export const AIRTEL_FIXTURE_DEFAULTS = {
  clientId: 'connector-client',
  clientSecret: 'connector-secret',
  pinEncrypted: 'S2V5RW5jcnlwdGVkUElOMTIzNA==',
  country: 'ZM',
  dialingCode: '260',
} as const;

export interface AirtelFixture extends FixtureInstitution {
  /** Token requests received so far. */
  tokenRequests(): number;
  /** Answers the next disbursement DP00900001014 (timed out) after paying it (`applied`) or failing it (TF). */
  timeOutNextDisbursement(applied: boolean): void;
  /** Revokes every token, as Airtel may do before expiry. */
  revokeTokens(): void;
  /** Answers the next disbursement DP00900001000 (ambiguous) and leaves it TA, nobody paid. */
  ambiguousNextDisbursement(): void;
  /** Ends the disbursement under Airtel transaction id `id`, still TA: TS pays the payee now, TF pays nobody. */
  settleAmbiguous(id: string, outcome: 'TS' | 'TF'): void;
}

interface Movement {
  readonly id: string;
  readonly kind: 'disbursement' | 'collection';
  readonly subscriber: BookAccount;
  readonly amountMinor: bigint;
  readonly airtelMoneyId: string;
  /** When the movement began, by the fixture's clock (a payment prompt expires). */
  readonly createdAtMs: number;
  status: 'TS' | 'TF' | 'TA' | 'TIP' | 'TE';
}

/** A USSD payment prompt the subscriber leaves unanswered ends, failed, after this long. */
const PROMPT_EXPIRY_MS = 5 * 60_000;

export async function startAirtelFixture(options: AirtelFixtureOptions): Promise<AirtelFixture> {
  const state = new AirtelInstitution(options);
  const { institution, server } = await serveFixtureInstitution('airtel', state, {
    host: options.host,
    port: options.port,
    isWrite: (request) => request.method === 'POST' && request.path !== '/auth/oauth2/token',
    accountIdOf: (idValue) => state.account(idValue).accountId,
    settleCollection: (reference, approved) => state.settle(reference, approved),
  });
  return {
    ...institution,
    tokenRequests: () => server.requests.filter((request) => request.path === '/auth/oauth2/token').length,
    revokeTokens: () => state.revokeTokens(),
    timeOutNextDisbursement: (applied) => {
      state.nextDisbursementTimesOut = applied ? 'applied' : 'failed';
    },
    ambiguousNextDisbursement: () => {
      state.nextDisbursementTimesOut = 'ambiguous';
    },
    settleAmbiguous: (id, outcome) => state.settleAmbiguous(id, outcome),
  };
}

class AirtelInstitution {
  readonly books: FixtureBooks;
  readonly #settings: Required<Pick<AirtelFixtureOptions, 'clientId' | 'clientSecret' | 'pinEncrypted' | 'country' | 'dialingCode' | 'tokenLifetimeSeconds'>>;
  readonly #clock: Clock;
  readonly #callbackUrl: string | undefined;
  readonly #rejectionStatus: 200 | 400;
  readonly #tokens = new Map<string, number>();
  readonly #movements = new Map<string, Movement>();
  #nextToken = 1;
  #nextMoneyId = 1;
  nextDisbursementTimesOut: 'applied' | 'failed' | 'ambiguous' | undefined;

  constructor(options: AirtelFixtureOptions) {
    this.books = new FixtureBooks(options.currency, options.floatBalance, 'WALLET');
    this.#rejectionStatus = options.rejectionsAs ?? 200;
    this.#settings = {
      clientId: options.clientId ?? AIRTEL_FIXTURE_DEFAULTS.clientId,
      clientSecret: options.clientSecret ?? AIRTEL_FIXTURE_DEFAULTS.clientSecret,
      pinEncrypted: options.pinEncrypted ?? AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
      country: options.country ?? AIRTEL_FIXTURE_DEFAULTS.country,
      dialingCode: options.dialingCode ?? AIRTEL_FIXTURE_DEFAULTS.dialingCode,
      tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 3600,
    };
    this.#clock = options.clock ?? systemClock;
    this.#callbackUrl = options.callbackUrl;
    this.seed(options.accounts);
  }

  seed(accounts: readonly FixtureAccountSeed[]): void {
    for (const seed of accounts) {
      const national = seed.idValue.replace(/^\+/, '').replace(new RegExp(`^${this.#settings.dialingCode}`), '');
      this.books.add(seed, national);
    }
  }

  account(idValue: string): BookAccount {
    const account = this.books.byIdValue(idValue);
    if (account === undefined) throw new Error(`airtel fixture: no subscriber ${idValue}`);
    return account;
  }

  revokeTokens(): void {
    this.#tokens.clear();
  }

  handle(request: FixtureRequest): FixtureReply {
    if (request.method === 'POST' && request.path === '/auth/oauth2/token') return this.token(request.body);
    const expiresAt = this.#tokens.get((request.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (expiresAt === undefined || this.#clock.now().getTime() >= expiresAt) {
      return { status: 401, body: { error: 'invalid_token', error_description: 'Access token expired or invalid' } };
    }
    if (request.headers['x-country'] !== this.#settings.country || request.headers['x-currency'] !== this.books.currency) {
      return envelope(400, false, undefined, 'ESB000001', 'Mandatory request header missing or wrong: country, currency');
    }
    const [, scope, version, resource, id] = request.path.split('/');
    const route = `${request.method} ${scope}/${version}/${resource}${id === undefined || id === '' ? '' : '/:id'}`;
    switch (route) {
      case 'GET standard/v1/users/:id':
        return id === 'balance' ? this.balance() : this.kyc(id ?? '');
      case 'POST standard/v2/disbursements':
        return this.disburse(request.body);
      case 'GET standard/v2/disbursements/:id':
        return this.enquire(id ?? '', 'disbursement');
      case 'POST merchant/v1/payments':
        return this.collect(request.body);
      case 'GET standard/v1/payments/:id':
        return this.enquire(id ?? '', 'collection');
      default:
        return envelope(404, false, undefined, 'ESB000404', 'Unknown path');
    }
  }

  token(body: unknown): FixtureReply {
    const ok = isRecord(body) && body['grant_type'] === 'client_credentials' && body['client_id'] === this.#settings.clientId && body['client_secret'] === this.#settings.clientSecret;
    if (!ok) return { status: 401, body: { error: 'invalid_client', error_description: 'Client authentication failed' } };
    const token = `fixture-token-${this.#nextToken++}`;
    this.#tokens.set(token, this.#clock.now().getTime() + this.#settings.tokenLifetimeSeconds * 1000);
    return { status: 200, body: { token_type: 'bearer', access_token: token, expires_in: String(this.#settings.tokenLifetimeSeconds) } };
  }

  kyc(msisdn: string): FixtureReply {
    const account = this.books.byAccountId(msisdn);
    // A closed wallet is gone from Airtel's point of view: its KYC finds no user (never "active").
    if (account?.seed === undefined || account.status === 'closed') {
      return envelope(this.#rejectionStatus, false, undefined, 'ESB000008', 'User enquiry failed', UNKNOWN_SUBSCRIBER_CODE);
    }
    const data = {
      first_name: account.seed.firstName,
      last_name: account.seed.lastName,
      msisdn: new JsonNumber(msisdn),
      grade: 'SUBS',
      is_barred: account.status === 'barred' || account.status === 'blocked',
      is_pin_set: true,
      registration: { status: 'SUBS' },
    };
    return envelope(200, true, data, 'ESB000010', 'SUCCESS');
  }

  balance(): FixtureReply {
    const data = { balance: grouped(this.books.formatPadded(this.books.float.balanceMinor, 2)), currency: this.books.currency, account_status: 'ACTIVE' };
    return envelope(200, true, data, 'ESB000010', 'SUCCESS');
  }

  disburse(body: unknown): FixtureReply {
    const input = this.#input(body, ['payee', 'msisdn']);
    if ('reply' in input) return input.reply;
    // Any id Airtel has seen, paid or refused, is refused when sent again.
    if (this.#movements.has(input.id)) return this.#reject('DP00900001017', 'Duplicate Transaction Id. To know the status of the actual transaction, please do transaction enquiry');
    if (!isRecord(body) || body['pin'] !== this.#settings.pinEncrypted) return this.#reject('DP00900001005', 'Incorrect PIN');
    const payee = this.books.byAccountId(input.msisdn);
    if (payee?.seed === undefined) return this.#reject(DISBURSEMENT_CODES.invalidMsisdn, 'Invalid MSISDN');
    const refused = (code: string, message: string): FixtureReply => {
      this.#record(input.id, 'disbursement', payee, input.amountMinor, 'TF');
      return this.#reject(code, message);
    };
    if (payee.status !== 'active') return refused(DISBURSEMENT_CODES.payeeNotAllowed, 'Transaction not permitted to payee');
    const timesOut = this.nextDisbursementTimesOut;
    this.nextDisbursementTimesOut = undefined;
    if (timesOut === 'failed') return refused('DP00900001014', 'Transaction Timed Out');
    if (timesOut === 'ambiguous') {
      // Nobody is paid until Airtel settles it (settleAmbiguous); the id is taken all the same.
      this.#record(input.id, 'disbursement', payee, input.amountMinor, 'TA');
      return this.#reject(DISBURSEMENT_CODES.ambiguous, 'Transaction is ambiguous. Please do transaction enquiry');
    }
    try {
      this.books.move(this.books.float, payee, input.amountMinor);
    } catch (failure) {
      if (failure instanceof InsufficientFunds) return refused(DISBURSEMENT_CODES.insufficientFunds, 'Insufficient balance');
      throw failure;
    }
    const movement = this.#record(input.id, 'disbursement', payee, input.amountMinor, 'TS');
    if (timesOut === 'applied') return this.#reject('DP00900001014', 'Transaction Timed Out');
    return this.#disbursementAnswer(movement);
  }

  collect(body: unknown): FixtureReply {
    const input = this.#input(body, ['subscriber', 'msisdn']);
    if ('reply' in input) return input.reply;
    const existing = this.#movements.get(input.id);
    if (existing !== undefined) return collectionAnswer(existing);
    const payer = this.books.byAccountId(input.msisdn);
    if (payer?.seed === undefined) return this.#reject(COLLECTION_CODES.invalidMsisdn, 'Invalid MSISDN');
    if (payer.status !== 'active') return this.#reject(COLLECTION_CODES.payerNotAllowed, 'Not permitted');
    return collectionAnswer(this.#record(input.id, 'collection', payer, input.amountMinor, 'TIP'));
  }

  /** The subscriber answers the USSD prompt. */
  settle(reference: string, approved: boolean): void {
    const movement = this.#movements.get(reference);
    if (movement !== undefined) this.#expire(movement);
    if (movement?.kind !== 'collection' || movement.status !== 'TIP') throw new Error(`airtel fixture: no collection waiting under ${reference}`);
    if (approved && this.books.available(movement.subscriber) >= movement.amountMinor) {
      this.books.move(movement.subscriber, this.books.float, movement.amountMinor);
      movement.status = 'TS';
    } else {
      movement.status = 'TF';
    }
    if (this.#callbackUrl !== undefined) {
      const callback = { transaction: { id: movement.id, message: movement.status === 'TS' ? 'Paid' : 'Declined', status_code: movement.status, airtel_money_id: movement.airtelMoneyId } };
      // Like Airtel, the fixture does not wait for the connector to take the callback.
      httpRequest(this.#callbackUrl, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(callback), headersTimeout: 5000, bodyTimeout: 5000 })
        .then((response) => response.body.dump())
        .catch(() => undefined);
    }
  }

  /** Airtel ends an ambiguous disbursement: TS pays the payee from the wallet now, TF pays nobody. */
  settleAmbiguous(id: string, outcome: 'TS' | 'TF'): void {
    const movement = this.#movements.get(id);
    if (movement?.kind !== 'disbursement' || movement.status !== 'TA') throw new Error(`airtel fixture: no ambiguous disbursement ${id}`);
    if (outcome === 'TS') this.books.move(this.books.float, movement.subscriber, movement.amountMinor);
    movement.status = outcome;
  }

  enquire(id: string, kind: Movement['kind']): FixtureReply {
    const movement = this.#movements.get(id);
    if (movement !== undefined) this.#expire(movement);
    if (movement?.kind !== kind) {
      const notFound = kind === 'disbursement' ? DISBURSEMENT_CODES.notFound : COLLECTION_CODES.notFound;
      return envelope(this.#rejectionStatus, false, undefined, 'ESB000045', 'Transaction not found', notFound);
    }
    const data = { transaction: { id: movement.id, status: movement.status, message: movement.status, airtel_money_id: movement.airtelMoneyId } };
    return envelope(200, true, data, 'ESB000010', 'SUCCESS', kind === 'disbursement' ? DISBURSEMENT_CODES.success : COLLECTION_CODES.success);
  }

  /** An unanswered prompt past its time has expired (TE): nobody was debited. */
  #expire(movement: Movement): void {
    if (movement.kind === 'collection' && movement.status === 'TIP' && this.#clock.now().getTime() - movement.createdAtMs >= PROMPT_EXPIRY_MS) movement.status = 'TE';
  }

  /** A business rejection, under the HTTP status the test chose. */
  #reject(responseCode: string, message: string): FixtureReply {
    return envelope(this.#rejectionStatus, false, undefined, 'ESB000001', message, responseCode);
  }

  #disbursementAnswer(movement: Movement): FixtureReply {
    const data = { transaction: { reference_id: `R${movement.airtelMoneyId}`, airtel_money_id: movement.airtelMoneyId, id: movement.id, status: movement.status, message: 'Paid' } };
    return envelope(200, true, data, 'ESB000010', 'SUCCESS', DISBURSEMENT_CODES.success);
  }

  #record(id: string, kind: Movement['kind'], subscriber: BookAccount, amountMinor: bigint, status: Movement['status']): Movement {
    const movement: Movement = { id, kind, subscriber, amountMinor, status, createdAtMs: this.#clock.now().getTime(), airtelMoneyId: `MP${String(this.#nextMoneyId++).padStart(8, '0')}` };
    this.#movements.set(id, movement);
    return movement;
  }

  /** Reads transaction.id, transaction.amount (a JSON number in major units) and the party's msisdn. */
  #input(body: unknown, party: readonly [string, string]): { id: string; amountMinor: bigint; msisdn: string } | { reply: FixtureReply } {
    const refuse = (message: string) => ({ reply: envelope(400, false, undefined, 'ESB000001', message) });
    const transaction = isRecord(body) ? body['transaction'] : undefined;
    const partyRecord = isRecord(body) ? body[party[0]] : undefined;
    if (!isRecord(transaction) || !isRecord(partyRecord)) return refuse('Invalid request');
    const { id, amount } = transaction;
    const msisdn = partyRecord[party[1]];
    if (typeof id !== 'string' || !(amount instanceof JsonNumber) || typeof msisdn !== 'string') return refuse('Invalid request');
    if (msisdn.startsWith(this.#settings.dialingCode) && msisdn.length > 9) return refuse('Invalid MSISDN: country code must not be sent');
    try {
      return { id, amountMinor: this.books.minor(amount.text), msisdn };
    } catch {
      return refuse('Invalid amount');
    }
  }
}

/** The USSD push's answer: no transaction id of ours in it (`id: false`), as Airtel's sample shows. */
function collectionAnswer(movement: Movement): FixtureReply {
  const data = { transaction: { id: false, status: 'SUCCESS' } };
  const code = movement.status === 'TIP' ? COLLECTION_CODES.inProgress : movement.status === 'TS' ? COLLECTION_CODES.success : COLLECTION_CODES.refused;
  return envelope(200, movement.status === 'TIP' || movement.status === 'TS', data, 'ESB000010', 'SUCCESS', code);
}

function envelope(httpStatus: number, success: boolean, data: unknown, resultCode: string, message: string, responseCode?: string): FixtureReply {
  return {
    status: httpStatus,
    body: {
      ...(data === undefined ? {} : { data }),
      status: { code: String(httpStatus), message, result_code: resultCode, ...(responseCode === undefined ? {} : { response_code: responseCode }), success },
    },
  };
}

/** "1234567.50" as "1,234,567.50", the way Airtel writes wallet balances. */
function grouped(amount: string): string {
  const [whole = '0', fraction] = amount.split('.');
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction === undefined ? withCommas : `${withCommas}.${fraction}`;
}
