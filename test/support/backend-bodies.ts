import { randomUUID } from 'node:crypto';

/** Bodies shaped as the switch connector sends them to the backend API. */

export interface QuoteRequestOptions {
  readonly payeeMsisdn: string;
  readonly amount?: string;
  readonly amountType?: 'SEND' | 'RECEIVE';
  readonly currency?: string;
  readonly idType?: string;
  readonly extensionList?: ReadonlyArray<{ key: string; value: string }>;
  readonly quoteId?: string;
  /** The payer as the switch connector sends it (default: a name in displayName, no extensions). */
  readonly from?: Record<string, unknown>;
}

export function quoteRequest(options: QuoteRequestOptions): Record<string, unknown> {
  return {
    quoteId: options.quoteId ?? randomUUID(),
    transactionId: randomUUID(),
    to: { idType: options.idType ?? 'MSISDN', idValue: options.payeeMsisdn },
    from: options.from ?? { idType: 'MSISDN', idValue: '254700000001', displayName: 'Payer Person', fspId: 'payerfsp' },
    amountType: options.amountType ?? 'SEND',
    amount: options.amount ?? '100',
    currency: options.currency ?? 'ZMW',
    transactionType: 'TRANSFER',
    initiator: 'PAYER',
    initiatorType: 'CONSUMER',
    ...(options.extensionList === undefined ? {} : { extensionList: options.extensionList }),
  };
}

/** The transfer the switch sends after our quote: `quote` is our own answer, `amount` the request's. */
export function transferRequest(
  quoteBody: Record<string, unknown>,
  quoteAnswer: Record<string, unknown>,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const to = quoteBody['to'] as Record<string, unknown>;
  const from = quoteBody['from'] as Record<string, unknown>;
  return {
    transferId: randomUUID(),
    quote: quoteAnswer,
    from,
    to,
    amountType: quoteBody['amountType'],
    currency: quoteBody['currency'],
    amount: quoteBody['amount'],
    transactionType: 'TRANSFER',
    note: 'test transfer',
    ilpPacket: {
      data: {
        quoteId: quoteAnswer['quoteId'],
        transactionId: quoteAnswer['transactionId'],
        payee: { partyIdInfo: { partyIdType: to['idType'], partyIdentifier: to['idValue'] } },
        payer: { partyIdInfo: { partyIdType: from['idType'], partyIdentifier: from['idValue'] } },
        amount: { amount: quoteAnswer['transferAmount'], currency: quoteAnswer['transferAmountCurrency'] },
        transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
      },
    },
    ...overrides,
  };
}

/** The final notification the switch connector sends (PUT /transfers/{id}). */
export function notification(currentState: string): Record<string, unknown> {
  return {
    currentState,
    direction: 'INBOUND',
    finalNotification: {
      completedTimestamp: '2026-11-23T10:00:01.000Z',
      transferState: currentState === 'COMPLETED' ? 'COMMITTED' : 'ABORTED',
    },
  };
}
