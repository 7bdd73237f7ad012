import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import { lockAccounts, type Account, type BookContext } from './ledger-book.js';

/** Why a customer debit was refused; stored with the debit so a retry answers the same. */
export interface Refusal {
  readonly errorName: ErrorName;
  readonly detail: string;
}

export type PayerLookup = { readonly payer: Account } | { readonly refusal: Refusal };

/**
 * Finds (and on PostgreSQL locks) the customer account behind a payerId: the account with that
 * id, or the customer whose identifier value (of any type, without sub-value) it is. A payerId
 * that names several customers (one customer's account id and another's identifier value, or
 * two customers sharing the value under different types) is ambiguous, which is refused rather
 * than guessed, since guessing would debit the wrong person. The candidates are read without a
 * lock (an account's kind and a customer's identifier never change); only the one payer is locked.
 */
export async function lockPayer(context: BookContext, payerId: string): Promise<PayerLookup> {
  const byAccount = await context.trx
    .selectFrom('sandbox_accounts')
    .select('account_id')
    .where('account_id', '=', payerId)
    .where('kind', '=', 'customer')
    .execute();
  const byIdentifier = await context.trx
    .selectFrom('sandbox_customers')
    .select('account_id')
    .where('id_value', '=', payerId)
    .where('id_sub_value', '=', '')
    .execute();
  const candidates = new Set([...byAccount, ...byIdentifier].map((row) => row.account_id));
  const [first, second] = candidates;
  if (first === undefined) return { refusal: { errorName: 'PartyNotFound', detail: 'no customer with this payerId' } };
  if (second !== undefined) return { refusal: { errorName: 'PayerRejected', detail: 'payerId names several customers' } };
  const payer = (await lockAccounts(context, [first])).get(first);
  if (payer === undefined) throw new ConnectorError('Internal', 'sandbox: customer without an account');
  return { payer };
}

/** The refusal for debiting `payer` by `minor`, or undefined when the debit may go ahead. */
export function debitRefusal(payer: Account, currency: string, minor: bigint): Refusal | undefined {
  if (payer.currency !== currency) return { errorName: 'PayerRejected', detail: `the account is in ${payer.currency}` };
  switch (payer.status) {
    case 'active':
      break;
    case 'barred':
    case 'blocked':
    case 'closed':
      return { errorName: 'PayerRejected', detail: `the account is ${payer.status}` };
  }
  if (payer.balance - payer.held < minor) return { errorName: 'PayerInsufficientFunds', detail: 'the balance is too low' };
  return undefined;
}
