import { randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';

/**
 * "send-money round trip (initiate and accept) against the fake switch": each connection loops
 * POST /send-money (the connector calls the fake switch's POST /transfers and checks the quote),
 * then PUT /send-money/{transferId} {acceptQuote: true} (bank flow: the fake switch completes).
 * Every payment is durable: two SQLite transitions per request, each committed.
 */
export const BENCH_CHANNEL_API_KEY = 'bench-channel-key-0123456789';
export const BENCH_CALLBACK_SECRET = 'bench-callback-secret-0123456789';

const headers = { 'content-type': 'application/json', 'x-api-key': BENCH_CHANNEL_API_KEY };

export function sendMoneyRoundTrip(payerMsisdn: string): autocannon.Request[] {
  return [
    {
      method: 'POST',
      path: '/send-money',
      headers,
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({
          homeTransactionId: randomUUID(),
          payeeId: '265991234567',
          payeeIdType: 'MSISDN',
          sendAmount: '10',
          sendCurrency: 'ZMW',
          receiveCurrency: 'ZMW',
          transactionType: 'TRANSFER',
          payer: { name: 'Bench Payer', payerId: payerMsisdn },
        }),
      }),
      onResponse: (status, body, context) => {
        const answer: unknown = status === 200 ? JSON.parse(body) : undefined;
        slots(context).transferId = typeof answer === 'object' && answer !== null && 'transferId' in answer ? answer.transferId : undefined;
      },
    },
    {
      method: 'PUT',
      headers,
      setupRequest: (req, context) => {
        const transferId = slots(context).transferId;
        // Without terms there is nothing to accept: autocannon skips to the next loop.
        if (typeof transferId !== 'string') return undefined as unknown as autocannon.Request;
        return { ...req, path: `/send-money/${transferId}`, body: JSON.stringify({ acceptQuote: true }) };
      },
    },
  ];
}

/** autocannon's per-connection context, which this scenario fills itself. */
function slots(context: object): { transferId?: unknown } {
  return context;
}
