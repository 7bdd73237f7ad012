import { isDeepStrictEqual } from 'node:util';
import { request } from 'undici';
import { formatMinorUnits } from '../../../src/domain/money.js';
import { hubAnswer, switchOwnFailure, type FakeSwitch } from '../../support/fake-switch.js';
import { isConnectionError } from './connector-child.js';
import { sleep, statusCodeOf, type Answer, type Random } from './switch-driver.js';

/**
 * Plays the customer channel of the bank flow against the connector's outgoing server, for the
 * crash harness: the channel has debited the customer under its homeTransactionId (done before
 * the run, straight in the sandbox ledger), asks for terms (POST /send-money) and accepts them
 * (PUT /send-money/{id}), retrying the same request on no answer or a 5xx. The fake switch
 * completes a third of the accepts with the hub's error (the connector must refund those
 * customers, once), a sixth with an error of its own after the hub committed the transfer (the
 * connector must ask and complete them, never refund), and the others normally (never refunded).
 */

export const CHANNEL_KEY = 'crash-harness-channel-key-0123';
export const CALLBACK_SECRET = 'crash-harness-callback-secret-0123';

export interface OutgoingPlan {
  readonly homeTransactionId: string;
  readonly payerMsisdn: string;
  readonly payerAccount: string;
  /** The channel's debit, equal to sendAmount (SEND, same currency: the quote's transferAmount). */
  readonly amount: string;
  /** The switch fails the accept with the hub's error (500, 5000): the connector owes the customer a refund. */
  readonly switchFails: boolean;
  /** The switch connector fails the accept on its own (500, "500") after the hub committed: completed, never refunded. */
  readonly ownFailureAfterCommit: boolean;
  terms: Answer | undefined;
  transferId: string | undefined;
  acceptAnswers: Answer[];
}

export interface OutgoingDriverOptions {
  readonly random: Random;
  readonly fakeSwitch: FakeSwitch;
  readonly target: () => string | undefined;
  readonly currency: string;
  readonly requestTimeoutMs: number;
}

const ATTEMPTS = 6;
const DELAYS_MS = [100, 200, 400, 800, 1000];

export class OutgoingDriver {
  readonly payments: OutgoingPlan[] = [];
  readonly unexpected: string[] = [];
  /** Retried requests that got other terms than the first time. */
  readonly inconsistencies: string[] = [];
  noAnswer = 0;

  constructor(private readonly options: OutgoingDriverOptions) {}

  /** Plans `count` payments from the given payers, amounts 2.00 to 6.00 (above the fake switch's fee of 1). */
  plan(count: number, payers: ReadonlyArray<{ readonly msisdn: string; readonly accountId: string }>): OutgoingPlan[] {
    const { random, currency } = this.options;
    for (let index = 0; index < count; index += 1) {
      const payer = payers[index % payers.length];
      if (payer === undefined) throw new Error('no payers');
      const plan: OutgoingPlan = {
        homeTransactionId: `crash-home-${index}-${Math.floor(random() * 1e9)}`,
        payerMsisdn: payer.msisdn,
        payerAccount: payer.accountId,
        amount: formatMinorUnits(BigInt(200 + Math.floor(random() * 401)), currency),
        switchFails: index % 3 === 2,
        ownFailureAfterCommit: index % 6 === 4,
        terms: undefined,
        transferId: undefined,
        acceptAnswers: [],
      };
      if (plan.switchFails) this.options.fakeSwitch.script(plan.homeTransactionId, { accept: { status: 500 } });
      this.payments.push(plan);
    }
    return this.payments;
  }

  async run(plan: OutgoingPlan): Promise<void> {
    const body = {
      homeTransactionId: plan.homeTransactionId,
      payeeId: '265991234567',
      payeeIdType: 'MSISDN',
      sendAmount: plan.amount,
      sendCurrency: this.options.currency,
      receiveCurrency: this.options.currency,
      transactionType: 'TRANSFER',
      payer: { name: 'Crash Payer', payerId: plan.payerMsisdn },
    };
    for (let attempt = 1; attempt <= ATTEMPTS && plan.terms === undefined; attempt += 1) {
      if (attempt > 1) await sleep(DELAYS_MS[attempt - 2] ?? 1000);
      const answer = await this.send('POST', '/send-money', body);
      if (answer === undefined || answer.status >= 500 || isBeingInitiated(answer)) continue;
      if (answer.status !== 200) {
        this.unexpected.push(`send-money ${plan.homeTransactionId}: ${JSON.stringify(answer)}`);
        return;
      }
      plan.terms = answer;
    }
    if (plan.terms === undefined) return;
    const transferId = field(plan.terms.body, 'transferId');
    const debit = field(field(plan.terms.body, 'debitAmount'), 'amount');
    if (typeof transferId !== 'string' || debit !== plan.amount) {
      this.unexpected.push(`send-money ${plan.homeTransactionId}: terms ${JSON.stringify(plan.terms.body)}`);
      return;
    }
    plan.transferId = transferId;
    // The hub's word on a transfer whose accept failed: aborted (recovery may ask for it).
    if (plan.switchFails) this.options.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    if (plan.ownFailureAfterCommit) this.options.fakeSwitch.script(plan.homeTransactionId, { accept: switchOwnFailure(transferId), stateAfterAccept: 'COMPLETED' });
    // A repeat of the terms request, now or after a crash, answers the same terms.
    const again = await this.send('POST', '/send-money', body);
    if (again !== undefined && again.status < 500 && !isDeepStrictEqual(again, plan.terms)) {
      this.inconsistencies.push(`send-money ${plan.homeTransactionId}: ${JSON.stringify(again)} after ${JSON.stringify(plan.terms)}`);
    }
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      if (attempt > 1) await sleep(DELAYS_MS[attempt - 2] ?? 1000);
      const answer = await this.send('PUT', `/send-money/${transferId}`, { acceptQuote: true });
      if (answer === undefined) continue;
      plan.acceptAnswers.push(answer);
      if (!isExpectedAccept(answer)) this.unexpected.push(`accept ${plan.homeTransactionId}: ${JSON.stringify(answer)}`);
      // 200 and "the switch failed; the customer is refunded" (503, 2001) are the channel's final answers.
      if (answer.status < 500 || statusCodeOf(answer.body) === '2001') return;
    }
  }

  async send(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<Answer | undefined> {
    const target = this.options.target();
    if (target === undefined) throw new Error('no outgoing target');
    try {
      const response = await request(`${target}${path}`, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': CHANNEL_KEY },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: this.options.requestTimeoutMs,
        bodyTimeout: this.options.requestTimeoutMs,
      });
      const text = await response.body.text();
      return { status: response.statusCode, body: text === '' ? undefined : JSON.parse(text) };
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      this.noAnswer += 1;
      return undefined;
    }
  }
}

/** A payment another process (or one that crashed) is initiating: the answer says to ask again. */
function isBeingInitiated(answer: Answer): boolean {
  return answer.status === 409 && statusCodeOf(answer.body) === '3106' && String(field(answer.body, 'message')).includes('being initiated');
}

/**
 * What an accept may answer in the bank flow: COMPLETED (200); the switch failed and the customer
 * is refunded (503, 2001), or the outcome is not known yet (504, 2004), both retried; an
 * initiation a crash cut off (504, 2004, from the stored FAILED state); a payment whose refund is
 * under way or done answers its stored error (503). Nothing else, and never a 500.
 */
function isExpectedAccept(answer: Answer): boolean {
  if (answer.status === 200) return field(answer.body, 'state') === 'COMPLETED';
  return (answer.status === 503 && statusCodeOf(answer.body) === '2001') || (answer.status === 504 && statusCodeOf(answer.body) === '2004');
}

export function field(body: unknown, name: string): unknown {
  if (typeof body !== 'object' || body === null) return undefined;
  return Object.fromEntries(Object.entries(body))[name];
}
