import { afterEach, describe, expect, it } from 'vitest';
import { fxQuoteBody, fxTransferBody, startFxpHarness, type FxpHarness } from './support/fxp-harness.js';

let h: FxpHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(env: Record<string, string> = {}): Promise<FxpHarness> {
  h = await startFxpHarness({ env });
  return h;
}

async function balances(harness: FxpHarness): Promise<Record<string, string>> {
  const rows = await harness.app.ledger.balances();
  return Object.fromEntries(rows.filter((row) => row.balance !== '0' || row.held !== '0').map((row) => [row.accountId, row.held === '0' ? row.balance : `${row.balance} (held ${row.held})`]));
}

describe('FX provider mode: quote, reserve, commit', () => {
  it('SEND 100 ZMW to MWK: complete terms, RESERVED, then COMMITTED moves exactly the quoted amounts', async () => {
    const fx = await start();
    const quote = fxQuoteBody({ amountType: 'SEND', source: 'ZMW', target: 'MWK', amount: '100' });
    const quoted = await fx.call('POST', '/fxQuotes', quote);
    const terms = quote['conversionTerms'] as Record<string, unknown>;
    // Demo pair: mid 65, spread 0.5% -> rate 64.675; 100 ZMW -> 6467.5 MWK; charge 10 + 0.5% (32.3375 -> 32.34) = 42.34 MWK
    expect(quoted).toEqual({
      status: 200,
      body: {
        homeTransactionId: terms['conversionId'],
        conversionTerms: {
          ...terms,
          sourceAmount: { currency: 'ZMW', amount: '100' },
          targetAmount: { currency: 'MWK', amount: '6425.16' },
          expiration: '2026-11-23T10:01:00.000Z',
          charges: [{ chargeType: 'CONVERSION_FEE', sourceAmount: { currency: 'ZMW', amount: '0.66' }, targetAmount: { currency: 'MWK', amount: '42.34' } }],
        },
      },
    });
    const transfer = fxTransferBody(quoted.body as Record<string, unknown>);
    expect(await fx.call('POST', '/fxTransfers', transfer)).toEqual({ status: 200, body: { conversionState: 'RESERVED', homeTransactionId: terms['conversionId'] } });
    expect(await balances(fx)).toMatchObject({ 'liquidity-mwk': '50000000 (held 6425.16)', 'liquidity-zmw': '1000000' });

    expect(await fx.call('PUT', `/fxTransfers/${String(terms['conversionId'])}`, { conversionState: 'COMMITTED', completedTimestamp: '2026-11-23T10:00:30.000Z' })).toEqual({ status: 200, body: {} });
    expect(await balances(fx)).toEqual({
      'clearing-mwk': '6425.16',
      'clearing-zmw': '-100',
      'liquidity-mwk': '49993574.84',
      'liquidity-zmw': '1000100',
      'liquidity-usd': '250000',
      'liquidity-kes': '5000000',
      'liquidity-ugx': '500000000',
      'liquidity-kwd': '50000',
    });
    expect(await fx.app.ledger.conservationCheck()).toEqual({ ok: true, problems: [] });
  });

  it('RECEIVE 10000 UGX from KES (no minor unit in UGX): the source is rounded up, the charge added', async () => {
    const fx = await start();
    const quoted = await fx.call('POST', '/fxQuotes', fxQuoteBody({ amountType: 'RECEIVE', source: 'KES', target: 'UGX', amount: '10000' }));
    expect(quoted.status).toBe(200);
    const terms = (quoted.body as Record<string, Record<string, unknown>>)['conversionTerms'] ?? {};
    // rate 28.62 x 0.994 = 28.44828; 10000 / 28.44828 = 351.5152... -> 351.52 KES; charge 500 UGX -> 17.5757... -> 17.58 KES
    expect(terms['sourceAmount']).toEqual({ currency: 'KES', amount: '369.1' });
    expect(terms['targetAmount']).toEqual({ currency: 'UGX', amount: '10000' });
    expect(terms['charges']).toEqual([{ chargeType: 'CONVERSION_FEE', sourceAmount: { currency: 'KES', amount: '17.58' }, targetAmount: { currency: 'UGX', amount: '500' } }]);
  });
});
