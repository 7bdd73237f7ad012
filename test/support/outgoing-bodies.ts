import { randomUUID } from 'node:crypto';
import { demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import type { Harness } from './harness.js';

/** Bodies the customer channel sends to the outgoing server, and the steps tests repeat. */

export const PAYER_MSISDN = '260971000002';
export const PAYER_ACCOUNT = 'zm-acc-0002';
/** Where customer debits land and refunds come from: the float (one account model). */
export const SETTLEMENT_ACCOUNT = demoAccounts.float.accountId;

export function sendMoneyBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    homeTransactionId: `home-${randomUUID()}`,
    payeeId: '265991234567',
    payeeIdType: 'MSISDN',
    sendAmount: '100',
    sendCurrency: 'ZMW',
    receiveCurrency: 'ZMW',
    transactionDescription: 'School fees',
    transactionType: 'TRANSFER',
    payer: {
      name: 'Natasha Mulenga',
      payerId: PAYER_MSISDN,
      DateAndPlaceOfBirth: { BirthDt: '30-11-1995', PrvcOfBirth: 'Copperbelt', CityOfBirth: 'Ndola', CtryOfBirth: 'ZM' },
    },
    ...overrides,
  };
}

export type Body = Record<string, unknown>;

/** POST /send-money (or another initiation path); expects 200 and answers the terms. */
export async function initiate(h: Harness, body: Body, path = '/send-money'): Promise<Body> {
  const answer = await h.callOutgoing('POST', path, body);
  if (answer.status !== 200) throw new Error(`initiation answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body as Body;
}

/** The bank flow's channel debit: the channel takes the money under its homeTransactionId before it accepts. */
export async function channelDebit(h: Harness, homeTransactionId: string, amount: string): Promise<void> {
  const ledger = h.app.sandbox;
  if (ledger === undefined) throw new Error('not running on the sandbox');
  const outcome = await ledger.collect(homeTransactionId, PAYER_MSISDN, { amount, currency: 'ZMW' });
  if (outcome.state !== 'succeeded') throw new Error(`channel debit ${outcome.state}`);
}

/**
 * A bank-flow payment of 100 ZMW, debited by the channel, whose accept the switch connector
 * refuses (HTTP 500): the accept is answered 503 and the customer's refund has begun.
 */
export async function acceptRefusedBySwitch(h: Harness): Promise<{ home: string; transferId: string }> {
  const body = sendMoneyBody();
  const home = String(body['homeTransactionId']);
  h.fakeSwitch.script(home, { accept: { status: 500 } });
  const transferId = String((await initiate(h, body))['transferId']);
  await channelDebit(h, home, '100');
  const answer = await h.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true });
  if (answer.status !== 503) throw new Error(`the refused accept answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return { home, transferId };
}

export const callbackHeaders = (secret: string): Record<string, string> => ({ 'x-callback-secret': secret });
