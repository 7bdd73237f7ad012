import { interceptCoreBanking, type CoreBankingOperation } from '../../src/adapters/core-banking/intercept.js';
import type { CoreBanking } from '../../src/ports/core-banking.js';

/**
 * A harness override (`wrapCoreBanking`) that runs one operation of the institution the test's
 * own way (`around` gets the inner call, and the how-many-th call this is, from 1) and every
 * other operation as it is.
 */
export function interceptOne(operation: CoreBankingOperation, around: (call: () => Promise<unknown>, count: number) => Promise<unknown>): (inner: CoreBanking) => CoreBanking {
  let count = 0;
  return (inner) =>
    interceptCoreBanking(inner, <T>(name: CoreBankingOperation, call: () => Promise<T>): Promise<T> => {
      if (name !== operation) return call();
      count += 1;
      return around(call, count) as Promise<T>;
    });
}
