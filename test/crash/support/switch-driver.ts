import { isDeepStrictEqual } from 'node:util';
import { request } from 'undici';
import { formatMinorUnits } from '../../../src/domain/money.js';
import { notification } from '../../support/backend-bodies.js';
import { hubAnswer, type FakeSwitch } from '../../support/fake-switch.js';
import { isConnectionError } from './connector-child.js';

/**
 * Plays the switch connector against one or more connector processes: the incoming flow of a
 * payment (quote, transfer, final notification) with the switch's retries of the same request
 * (same ids, same body) on no answer or a 5xx, optional parallel duplicates, and the hub's
 * decision, which the fake switch then reports on GET /transfers/{id} for recovery.
 *
 * Retry spacing is wider than the real switch's 10 ms for POSTs so that retries often cross a
 * crash and a restart, which is the case under test; the counts are the switch's own: 4 POSTs,
 * 6 PUTs (switch-contract.md).
 */

export type Random = () => number;

export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

export interface Payee {
  readonly idValue: string;
  readonly accountId: string;
}

export type HubDecision = 'COMPLETED' | 'ABORTED';

/** What happened to one payment, as the switch saw it. */
export interface FlowRecord {
  readonly quoteId: string;
  readonly transferId: string;
  readonly payee: Payee;
  readonly amount: string;
  readonly quoteBody: Record<string, unknown>;
  quoteAnswer: Answer | undefined;
  transferBody: Record<string, unknown> | undefined;
  transferAnswer: Answer | undefined;
  /** Undefined while the transfer has not been sent, or when no quote was agreed. */
  decision: HubDecision | undefined;
  /** The payee amount of the agreed quote (what a commit must credit). */
  payeeReceiveAmount: string | undefined;
  notificationBody: Record<string, unknown> | undefined;
  notificationAnswer: Answer | undefined;
}

export interface RetryPlan {
  readonly attempts: number;
  /** Wait before attempt 2, 3, ...; the last value repeats. */
  readonly delaysMs: readonly number[];
}

export const POST_RETRIES: RetryPlan = { attempts: 4, delaysMs: [50, 250, 700] };
export const PUT_RETRIES: RetryPlan = { attempts: 6, delaysMs: [100, 200, 400, 800, 1000] };

export interface DriverOptions {
  readonly random: Random;
  readonly fakeSwitch: FakeSwitch;
  /** The connectors' base URLs; each request goes to one picked at random, like a balancer. */
  readonly targets: () => readonly string[];
  readonly payees: readonly Payee[];
  readonly currency: string;
  /** Share of reserved transfers the hub commits; the rest it aborts. */
  readonly completedShare: number;
  /** Share of final notifications the switch never delivers (recovery must ask). */
  readonly lostNotificationShare: number;
  /** Share of flows whose every attempt is sent twice at once. */
  readonly duplicateShare: number;
  /** Client timeout per request. */
  readonly requestTimeoutMs: number;
}

/** Every answer received per request key, checked for consistency as it arrives. */
export class AnswerLog {
  readonly #first = new Map<string, Answer>();
  readonly inconsistencies: string[] = [];
  readonly unexpected: string[] = [];
  noAnswer = 0;
  retriedAfter5xx = 0;

  /**
   * Records an answer. A final answer (below 500) must equal the first final answer for the key.
   * A 5xx means "retry" and is fine while no final answer is known, also for a parallel
   * duplicate of the request that got one; a request sent after the final answer was known
   * must get that answer again.
   */
  record(key: string, answer: Answer, sentAfterFinal: boolean): void {
    if (answer.status >= 500) {
      // Only the injected institution faults explain a 5xx; a 500 is a bug.
      if (answer.status !== 503 && answer.status !== 504) this.unexpected.push(`${key}: ${answer.status} ${JSON.stringify(answer.body)}`);
      this.retriedAfter5xx += 1;
      const first = this.#first.get(key);
      if (sentAfterFinal && first !== undefined) this.inconsistencies.push(`${key}: ${answer.status} after the final answer ${first.status}`);
      return;
    }
    const first = this.#first.get(key);
    if (first === undefined) this.#first.set(key, answer);
    else if (!isDeepStrictEqual(first, answer)) {
      this.inconsistencies.push(`${key}: ${JSON.stringify(answer)} differs from the first answer ${JSON.stringify(first)}`);
    }
  }

  first(key: string): Answer | undefined {
    return this.#first.get(key);
  }

  get keys(): number {
    return this.#first.size;
  }
}

export class SwitchDriver {
  readonly flows: FlowRecord[] = [];
  readonly answers = new AnswerLog();

  constructor(private readonly options: DriverOptions) {}

  /** A new payment with seeded ids, payee and amount (1.00 to 500.00). */
  plan(): FlowRecord {
    const { random, payees, currency } = this.options;
    const payee = payees[Math.floor(random() * payees.length)];
    if (payee === undefined) throw new Error('no payees');
    const amount = formatMinorUnits(BigInt(100 + Math.floor(random() * 49_901)), currency);
    const quoteId = uuid(random);
    const quoteBody = {
      quoteId,
      transactionId: uuid(random),
      to: { idType: 'MSISDN', idValue: payee.idValue },
      from: { idType: 'MSISDN', idValue: '254700000001', displayName: 'Payer Person', fspId: 'payerfsp' },
      amountType: 'SEND',
      amount,
      currency,
      transactionType: 'TRANSFER',
      initiator: 'PAYER',
      initiatorType: 'CONSUMER',
    };
    const flow: FlowRecord = {
      quoteId,
      transferId: uuid(random),
      payee,
      amount,
      quoteBody,
      quoteAnswer: undefined,
      transferBody: undefined,
      transferAnswer: undefined,
      decision: undefined,
      payeeReceiveAmount: undefined,
      notificationBody: undefined,
      notificationAnswer: undefined,
    };
    this.flows.push(flow);
    return flow;
  }

  /** Runs one payment to the end of the switch's part in it. */
  async run(flow: FlowRecord): Promise<void> {
    const { random } = this.options;
    const duplicate = random() < this.options.duplicateShare;
    flow.quoteAnswer = await this.exchange(`quote:${flow.quoteId}`, 'POST', '/quoterequests', flow.quoteBody, POST_RETRIES, duplicate);
    if (flow.quoteAnswer === undefined) return;
    if (flow.quoteAnswer.status !== 200) {
      this.answers.unexpected.push(`quote:${flow.quoteId}: ${flow.quoteAnswer.status} ${JSON.stringify(flow.quoteAnswer.body)}`);
      return;
    }
    const transfer = this.prepareTransfer(flow);
    flow.transferAnswer = await this.exchange(`transfer:${flow.transferId}`, 'POST', '/transfers', transfer, POST_RETRIES, duplicate);
    const reserved = flow.transferAnswer?.status === 200;
    if (flow.transferAnswer !== undefined && !reserved) {
      this.answers.unexpected.push(`transfer:${flow.transferId}: ${flow.transferAnswer.status} ${JSON.stringify(flow.transferAnswer.body)}`);
    }
    // The hub commits only what the payee side reserved; with no answer it times the transfer out.
    const decision: HubDecision = reserved && random() < this.options.completedShare ? 'COMPLETED' : 'ABORTED';
    flow.decision = decision;
    this.options.fakeSwitch.setTransferStatus(flow.transferId, hubAnswer(flow.transferId, decision === 'COMPLETED' ? 'COMMITTED' : 'ABORTED'));
    const notify = reserved ? random() >= this.options.lostNotificationShare : random() < 0.5;
    if (!notify) return;
    flow.notificationBody = notification(decision);
    flow.notificationAnswer = await this.exchange(
      `notify:${flow.transferId}`,
      'PUT',
      `/transfers/${flow.transferId}`,
      flow.notificationBody,
      PUT_RETRIES,
      duplicate,
    );
    if (flow.notificationAnswer !== undefined && !isExpectedNotificationAnswer(decision, flow.notificationAnswer)) {
      this.answers.unexpected.push(`notify:${flow.transferId} (${decision}): ${JSON.stringify(flow.notificationAnswer)}`);
    }
  }

  /** Builds the transfer from the agreed quote (the flow's quote answer), as the switch does. */
  prepareTransfer(flow: FlowRecord): Record<string, unknown> {
    const terms = quoteTermsOf(flow.quoteAnswer?.body);
    flow.payeeReceiveAmount = terms.payeeReceiveAmount;
    flow.transferBody = transferBody(flow, terms);
    return flow.transferBody;
  }

  /**
   * Sends a request until it gets a final answer (below 500) or the retries run out, and
   * records every answer. Resolves with the first final answer, or undefined.
   */
  async exchange(key: string, method: 'POST' | 'PUT', path: string, body: unknown, retries: RetryPlan, duplicate: boolean): Promise<Answer | undefined> {
    let final: Answer | undefined;
    for (let attempt = 1; attempt <= retries.attempts && final === undefined; attempt += 1) {
      if (attempt > 1) await sleep(retries.delaysMs[Math.min(attempt - 2, retries.delaysMs.length - 1)] ?? 0);
      const sentAfterFinal = this.answers.first(key) !== undefined;
      const copies = duplicate ? [this.send(method, path, body), this.send(method, path, body)] : [this.send(method, path, body)];
      for (const answer of await Promise.all(copies)) {
        if (answer === undefined) {
          this.answers.noAnswer += 1;
          continue;
        }
        this.answers.record(key, answer, sentAfterFinal);
        if (answer.status < 500 && final === undefined) final = answer;
      }
    }
    return final;
  }

  /** One HTTP exchange with `target`, or one of the targets at random; undefined when nobody answered. */
  async send(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, chosen?: string): Promise<Answer | undefined> {
    const targets = this.options.targets();
    const target = chosen ?? targets[Math.floor(this.options.random() * targets.length)];
    if (target === undefined) throw new Error('no target connector');
    try {
      const response = await request(`${target}${path}`, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: this.options.requestTimeoutMs,
        bodyTimeout: this.options.requestTimeoutMs,
      });
      const text = await response.body.text();
      return { status: response.statusCode, body: text === '' ? undefined : JSON.parse(text) };
    } catch (error) {
      if (isConnectionError(error)) return undefined;
      throw error;
    }
  }
}

function isExpectedNotificationAnswer(decision: HubDecision, answer: Answer): boolean {
  if (decision === 'COMPLETED') return answer.status === 200 && isDeepStrictEqual(answer.body, {});
  return (answer.status === 422 && statusCodeOf(answer.body) === '5104') || (answer.status === 404 && statusCodeOf(answer.body) === '3208');
}

export function statusCodeOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !('statusCode' in body)) return undefined;
  return typeof body.statusCode === 'string' ? body.statusCode : undefined;
}

interface QuoteTerms {
  readonly body: Record<string, unknown>;
  readonly transferAmount: string;
  readonly payeeReceiveAmount: string;
}

/** The fields of our own quote answer the transfer needs, checked rather than cast. */
function quoteTermsOf(body: unknown): QuoteTerms {
  if (typeof body !== 'object' || body === null) throw new Error('quote answer is not an object');
  const copy: Record<string, unknown> = Object.fromEntries(Object.entries(body));
  const transferAmount = copy['transferAmount'];
  const payeeReceiveAmount = copy['payeeReceiveAmount'];
  if (typeof transferAmount !== 'string' || typeof payeeReceiveAmount !== 'string') throw new Error('quote answer without amounts');
  return { body: copy, transferAmount, payeeReceiveAmount };
}

/** The transfer the switch sends after our quote: `quote` is our own answer, `amount` the request's. */
function transferBody(flow: FlowRecord, terms: QuoteTerms): Record<string, unknown> {
  const { quoteBody } = flow;
  return {
    transferId: flow.transferId,
    quote: terms.body,
    from: quoteBody['from'],
    to: quoteBody['to'],
    amountType: quoteBody['amountType'],
    currency: quoteBody['currency'],
    amount: quoteBody['amount'],
    transactionType: 'TRANSFER',
    ilpPacket: {
      data: {
        quoteId: flow.quoteId,
        transactionId: quoteBody['transactionId'],
        payee: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: flow.payee.idValue } },
        payer: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '254700000001' } },
        amount: { amount: terms.transferAmount, currency: quoteBody['currency'] },
        transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
      },
    },
  };
}

/** A version-4-shaped UUID from the seeded source, so that a seed names the same ids again. */
export function uuid(random: Random): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = '4';
  hex[16] = (8 + Math.floor(random() * 4)).toString(16);
  const text = hex.join('');
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
