import type { OutgoingFlow } from '../../../src/ports/core-banking.js';
import { runCoreBankingContract } from '../core-banking-contract.js';
import { RestCoreBanking } from '../../../src/adapters/core-banking/rest/rest-core-banking.js';
import { startRestFixture } from './rest-fixture.js';

/** The reference API adapter in both flows, since REST_CBS_OUTGOING_FLOW is a setting. */
for (const outgoingFlow of ['bank', 'mobile-operator'] as const satisfies readonly OutgoingFlow[]) {
  runCoreBankingContract({
    name: 'rest',
    // A collect is one call of (300 + 300) ms at most.
    capabilities: { outgoingFlow, nativeHolds: true, collectTakesUpToMs: 600 },
    barredReportedAs: 'barred',
    wire: true,
    async setup(seed) {
      const fixture = await startRestFixture({ ...seed, apiKey: 'contract-key' });
      const coreBanking = new RestCoreBanking({
        baseUrl: fixture.url,
        apiKey: 'contract-key',
        outgoingFlow,
        callbackUrl: undefined,
        timeoutMs: 300,
        connectTimeoutMs: 300,
      });
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
}
