import { formatMinorUnits } from '../../../src/domain/money.js';
import type { FixtureAccountSeed, FixtureSeed } from '../../institutions/fixture-books.js';
import { seededRandom } from '../../support/seeded-random.js';

/**
 * What a soak run will do, drawn up front from one seed so that a failing run can be replayed:
 * one payee account per incoming transfer and one payer account per outgoing payment, so the
 * books say, account by account, whether each payment moved exactly once.
 */

export const SOAK_CURRENCY = 'ZMW';
export const PAYEE_OPENING = '10';
export const PAYER_OPENING = '500';
export const FLOAT_OPENING = '100000';

export interface IncomingItem {
  readonly payee: string;
  /** What the switch asks the payee to receive less our fee: the quote's SEND amount. */
  readonly amount: string;
  /** The hub's decision for a transfer the connector reserved: true commits, false aborts. */
  readonly hubCommits: boolean;
  /** Attempts the switch connector makes at each call before it gives up (1-3). */
  readonly switchAttempts: number;
}

export interface OutgoingItem {
  readonly payer: string;
  readonly amount: string;
  /** The switch fails the accepted transfer (HTTP 500): the payer must be refunded. */
  readonly switchFails: boolean;
  /** Mobile-operator flow: the customer approves the payment prompt. */
  readonly customerApproves: boolean;
  /** Mobile-operator flow: the institution's callback reaches the connector (else recovery asks). */
  readonly callbackArrives: boolean;
}

export interface SoakPlan {
  readonly seed: number;
  readonly incoming: readonly IncomingItem[];
  readonly outgoing: readonly OutgoingItem[];
  readonly books: FixtureSeed;
}

export interface PlanSize {
  readonly incoming: number;
  readonly outgoing: number;
}

export function drawSoakPlan(seed: number, size: PlanSize): SoakPlan {
  const random = seededRandom(seed);
  const chance = (probability: number): boolean => random() < probability;
  /** 1.00 to 60.00 in cents, as a decimal string through money.ts. */
  const amount = (): string => formatMinorUnits(BigInt(100 + Math.floor(random() * 5901)), SOAK_CURRENCY);
  const incoming: IncomingItem[] = [];
  const outgoing: OutgoingItem[] = [];
  const accounts: FixtureAccountSeed[] = [];
  for (let index = 0; index < size.incoming; index += 1) {
    const payee = `2609720${String(index).padStart(5, '0')}`;
    accounts.push({ idType: 'MSISDN', idValue: payee, firstName: 'Payee', lastName: `Number${index}`, balance: PAYEE_OPENING });
    incoming.push({ payee, amount: amount(), hubCommits: chance(0.7), switchAttempts: 1 + Math.floor(random() * 3) });
  }
  for (let index = 0; index < size.outgoing; index += 1) {
    const payer = `2609730${String(index).padStart(5, '0')}`;
    accounts.push({ idType: 'MSISDN', idValue: payer, firstName: 'Payer', lastName: `Number${index}`, balance: PAYER_OPENING });
    outgoing.push({ payer, amount: amount(), switchFails: chance(0.3), customerApproves: chance(0.85), callbackArrives: chance(0.6) });
  }
  return { seed, incoming, outgoing, books: { currency: SOAK_CURRENCY, floatBalance: FLOAT_OPENING, accounts } };
}
