/** The sandbox institution: what the composition root and tests use. */
export { sandboxMigrations } from './sandbox-migrations.js';
export { SandboxLedger, type SandboxLedgerOptions, type SandboxTransactionStatus } from './ledger.js';
export { ALL_FLOAT_SHARDS, FLOAT_LANES, FLOAT_LANE_SPACE, floatLaneOf, type FloatLane } from './ledger-float.js';
export { SandboxCoreBanking, partyDetailsOf, type SandboxCoreBankingOptions } from './sandbox-core-banking.js';
export { seedSandbox } from './seed.js';
export { parseSandboxAccountsFile, sandboxAccountsProblems } from './accounts-file.js';
export { demoAccounts } from './demo-accounts.js';
export { type SandboxAccounts, type SandboxCustomer, type SandboxCustomerSeed } from './sandbox-accounts.js';
export type { AccountBalance, ConservationReport, CurrencyTotals } from './ledger-audit.js';
export type { DebitOutcome } from './debit-operations.js';
