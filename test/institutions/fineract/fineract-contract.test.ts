import { systemClock } from '../../../src/ports/clock.js';
import { runCoreBankingContract } from '../core-banking-contract.js';
import { FineractCoreBanking } from '../../../src/adapters/core-banking/fineract/fineract-core-banking.js';
import { FINERACT_FIXTURE_DEFAULTS, startFineractFixture } from './fineract-fixture.js';

runCoreBankingContract({
  name: 'fineract',
  capabilities: { outgoingFlow: 'bank', nativeHolds: true },
  // Fineract has sub-statuses for blocked accounts but no notion of a barred one.
  barredReportedAs: 'blocked',
  wire: true,
  // Fineract finds no transaction by our reference (its search covers accounts, not transactions).
  statusByReference: false,
  // A commit first repeats the reservation's hold (answered from Fineract's store), then books the credit.
  commitWritesBeforeCredit: 1,
  async setup(seed) {
    const fixture = await startFineractFixture(seed);
    const coreBanking = new FineractCoreBanking(
      {
        baseUrl: fixture.url,
        tenant: FINERACT_FIXTURE_DEFAULTS.tenant,
        username: FINERACT_FIXTURE_DEFAULTS.username,
        password: FINERACT_FIXTURE_DEFAULTS.password,
        floatAccountId: FINERACT_FIXTURE_DEFAULTS.floatAccountId,
        paymentTypeId: FINERACT_FIXTURE_DEFAULTS.paymentTypeId,
        timeZone: 'UTC',
        timeoutMs: 300,
        connectTimeoutMs: 300,
        maxResponseBytes: 1_048_576,
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
