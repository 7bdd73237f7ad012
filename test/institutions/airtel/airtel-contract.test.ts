import { systemClock } from '../../../src/ports/clock.js';
import { runCoreBankingContract } from '../core-banking-contract.js';
import { AirtelCoreBanking } from '../../../src/adapters/core-banking/airtel/airtel-core-banking.js';
import { AIRTEL_FIXTURE_DEFAULTS, startAirtelFixture } from './airtel-fixture.js';

// Airtel's documents do not settle the HTTP status of a business rejection: the contract holds both ways.
for (const rejectionsAs of [200, 400] as const) runCoreBankingContract({
  name: 'airtel',
  variant: `business rejections as HTTP ${rejectionsAs}`,
  // A collect: an enquiry and a push, each after a token and again after a refreshed one: 8 calls of (300 + 300) ms at most.
  capabilities: { outgoingFlow: 'mobile-operator', nativeHolds: false, collectTakesUpToMs: 4800 },
  barredReportedAs: 'barred',
  wire: true,
  async setup(seed) {
    const fixture = await startAirtelFixture({ ...seed, rejectionsAs });
    const coreBanking = new AirtelCoreBanking(
      {
        baseUrl: fixture.url,
        clientId: AIRTEL_FIXTURE_DEFAULTS.clientId,
        clientSecret: AIRTEL_FIXTURE_DEFAULTS.clientSecret,
        country: AIRTEL_FIXTURE_DEFAULTS.country,
        currency: seed.currency,
        pinEncrypted: AIRTEL_FIXTURE_DEFAULTS.pinEncrypted,
        dialingCode: AIRTEL_FIXTURE_DEFAULTS.dialingCode,
        timeoutMs: 300,
        connectTimeoutMs: 300,
      },
      { clock: systemClock },
    );
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
