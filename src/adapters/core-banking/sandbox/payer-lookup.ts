import { ConnectorError, type ErrorName } from '../../../domain/errors.js';
import { lockAccounts, type Account, type BookContext } from './ledger-book.js';

/** Why a customer debit was refused; stored with the debit so a retry answers the same. */
export interface Refusal {
  readonly errorName: ErrorName;
  readonly detail: string;
}

export type PayerLookup = { readonly payer: Account } | { readonly refusal: Refusal };

/**
 * Finds (and on PostgreSQL locks) the customer account behind a payerId: an account id first,
 * else the identifier value of a customer of any type that has no sub-value. Two customers
 * sharing that value under different types make the payerId ambiguous, which is refused rather
 * than guessed, since guessing would debit the wrong person.
 */
export async function lockPayer(context: BookContext, payerId: string): Promise<PayerLookup> {
  const byAccount = (await lockAccounts(context, [payerId])).get(payerId);
  if (byAccount !== undefined && byAccount.kind === 'customer') return { payer: byAccount };
  const matches = await context.trx
    .selectFrom('sandbox_customers')
    .select('account_id')
    .where('id_value', '=', payerId)
    .where('id_sub_value', '=', '')
    .execute();
  const [first, second] = matches;
  if (first === undefined) return { refusal: { errorName: 'PartyNotFound', detail: 'no customer with this payerId' } };
  if (second !== undefined) return { refusal: { errorName: 'PayerRejected', detail: 'payerId names several customers' } };
  const payer = (await lockAccounts(context, [first.account_id])).get(first.account_id);
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
