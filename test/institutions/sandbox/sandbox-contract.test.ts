import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutgoingFlow } from '../../../src/ports/core-banking.js';
import { SqliteDatabase } from '../../../src/adapters/store/sqlite-database.js';
import {
  SandboxCoreBanking,
  SandboxLedger,
  sandboxMigrations,
  seedSandbox,
  type AccountBalance,
  type SandboxAccounts,
} from '../../../src/adapters/core-banking/sandbox/index.js';
import { runCoreBankingContract, type ContractBooks } from '../core-banking-contract.js';
import type { FixtureSeed } from '../fixture-books.js';

/**
 * The sandbox institution through the same contract as the HTTP adapters, on a real SQLite
 * file, in both flows. It has no wire, so the wire-fault cases are skipped (by declaration);
 * FaultyCoreBanking covers faults above the sandbox in the connector's own tests.
 */

const FLOAT_ACCOUNT = 'float-contract';

function sandboxAccounts(seed: FixtureSeed): SandboxAccounts {
  return {
    currency: seed.currency,
    float: { accountId: FLOAT_ACCOUNT, balance: seed.floatBalance },
    customers: seed.accounts.map((account) => ({
      accountId: `acc-${account.idValue}`,
      idType: account.idType,
      idValue: account.idValue,
      firstName: account.firstName,
      lastName: account.lastName,
      status: account.status ?? 'active',
      balance: account.balance,
    })),
  };
}

function booksOf(ledger: SandboxLedger, currency: string): ContractBooks {
  const account = async (accountId: string): Promise<AccountBalance> => {
    const found = (await ledger.balances()).find((candidate) => candidate.accountId === accountId);
    if (found === undefined) throw new Error(`sandbox: no account ${accountId}`);
    return found;
  };
  return {
    accountIdOf: (idValue) => `acc-${idValue}`,
    balanceOf: async (idValue) => (await account(`acc-${idValue}`)).balance,
    floatBalance: async () => (await account(FLOAT_ACCOUNT)).balance,
    floatAvailable: async () => (await account(FLOAT_ACCOUNT)).available,
    // One account model: customer debits land in the float and refunds are paid from it.
    settlementBalance: async () => (await account(FLOAT_ACCOUNT)).balance,
    // The sandbox audits itself from its journal; the contract then compares the total.
    async total() {
      const report = await ledger.conservationCheck();
      if (!report.ok) throw new Error(`sandbox books do not balance: ${report.problems.join('; ')}`);
      const totals = report.currencies.find((candidate) => candidate.currency === currency);
      if (totals === undefined) throw new Error(`sandbox: no books in ${currency}`);
      return totals.totalBalance;
    },
    approveCollection: async (reference) => {
      await ledger.settleCollection(reference, true);
    },
    rejectCollection: async (reference) => {
      await ledger.settleCollection(reference, false);
    },
    // In the bank flow the channel's debit is an immediate collection under the original reference.
    debitByChannel: async (reference, idValue, amount) => {
      await ledger.collect(reference, idValue, { amount, currency }, { pending: false });
    },
  };
}

for (const outgoingFlow of ['bank', 'mobile-operator'] as const satisfies readonly OutgoingFlow[]) {
  runCoreBankingContract({
    name: 'sandbox',
    capabilities: { outgoingFlow, nativeHolds: true },
    barredReportedAs: 'barred',
    wire: false,
    async setup(seed) {
      const dir = mkdtempSync(join(tmpdir(), 'sandbox-contract-'));
      const database = new SqliteDatabase(join(dir, 'books.sqlite'));
      await database.migrate(sandboxMigrations);
      const ledger = new SandboxLedger(database);
      await seedSandbox(ledger, sandboxAccounts(seed));
      return {
        coreBanking: new SandboxCoreBanking(ledger, { outgoingFlow }),
        books: booksOf(ledger, seed.currency),
        async close() {
          await database.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  });
}
