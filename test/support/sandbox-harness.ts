import { demoAccounts } from '../../src/adapters/core-banking/sandbox/index.js';
import { quoteRequest, transferRequest } from './backend-bodies.js';
import { startHarness, type Harness } from './harness.js';

export { startHarness, type Harness };

type DemoCustomer = (typeof demoAccounts.customers)[number];

/** The first demo customer matching `predicate` (the demo set is documented in the sandbox README). */
export function customerWith(predicate: (customer: DemoCustomer) => boolean): DemoCustomer {
  const found = demoAccounts.customers.find((customer) => customer.idType === 'MSISDN' && predicate(customer));
  if (found === undefined) throw new Error('no demo customer matches');
  return found;
}

export interface AccountFigures {
  readonly balance: string;
  readonly held: string;
}

export interface Balances {
  readonly float: AccountFigures;
  readonly accounts: Readonly<Record<string, AccountFigures>>;
  of(accountId: string): AccountFigures;
}

/** Every sandbox balance, after checking that the ledger conserves money. */
export async function balances(h: Harness): Promise<Balances> {
  const ledger = h.app.sandbox;
  if (ledger === undefined) throw new Error('not running on the sandbox');
  const check = await ledger.conservationCheck();
  if (!check.ok) throw new Error(`sandbox ledger does not conserve money: ${JSON.stringify(check)}`);
  const all = await ledger.balances();
  const figures = (accountId: string): AccountFigures => {
    const account = all.find((candidate) => candidate.accountId === accountId);
    if (account === undefined) throw new Error(`no sandbox account ${accountId}`);
    return { balance: account.balance, held: account.held };
  };
  const accounts = Object.fromEntries(all.map((account) => [account.accountId, { balance: account.balance, held: account.held }]));
  const result = { float: figures(demoAccounts.float.accountId), accounts };
  // `of` is a reader, not data: keep it out of equality comparisons of two snapshots.
  Object.defineProperty(result, 'of', { value: figures, enumerable: false });
  return result as Balances;
}

export function accountOf(customer: DemoCustomer): string {
  return customer.accountId;
}

/**
 * An incoming transfer to the first active demo customer, quoted and posted as the switch
 * connector does; answers its transferId once the transfer answered 200 (RESERVED).
 */
export async function reserveIncoming(h: Harness, amount: string): Promise<string> {
  const payee = customerWith((c) => c.status === 'active');
  const quoteBody = quoteRequest({ payeeMsisdn: payee.idValue, amount });
  const quote = await h.call('POST', '/quoterequests', quoteBody);
  const body = transferRequest(quoteBody, quote.body as Record<string, unknown>);
  const answer = await h.call('POST', '/transfers', body);
  if (answer.status !== 200) throw new Error(`the transfer answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return String(body['transferId']);
}
