import { runCoreBankingContract } from '../core-banking-contract.js';
import { MiniBankCoreBanking } from '../../../src/adapters/core-banking/minibank/minibank-core-banking.js';
import { MINIBANK_FIXTURE_API_KEY, startMiniBankFixture } from './minibank-fixture.js';

runCoreBankingContract({
  name: 'minibank',
  capabilities: { outgoingFlow: 'bank', nativeHolds: false },
  // MiniBank freezes accounts; it has no separate "barred" state.
  barredReportedAs: 'blocked',
  wire: true,
  async setup(seed) {
    const fixture = await startMiniBankFixture(seed);
    const coreBanking = new MiniBankCoreBanking({ baseUrl: fixture.url, apiKey: MINIBANK_FIXTURE_API_KEY, timeoutMs: 300 });
    return {
      coreBanking,
      books: fixture,
      faults: fixture,
      async close() {
        await coreBanking.close();
        await fixture.close();
      },
    };
  },
});
