import { ConnectorError } from '../../../domain/errors.js';
import { sandboxAccountsProblems } from './accounts-file.js';
import type { SandboxLedger } from './ledger.js';
import type { SandboxAccounts } from './sandbox-accounts.js';

/**
 * Opens the sandbox books from `accounts` on first start; answers false (and changes nothing)
 * when the books exist already. The accounts are checked again here because a TypeScript
 * module, unlike a parsed file, has not been through the file parser.
 */
export async function seedSandbox(ledger: SandboxLedger, accounts: SandboxAccounts): Promise<boolean> {
  const problems = sandboxAccountsProblems(accounts);
  if (problems.length > 0) throw new ConnectorError('ValidationFailed', `sandbox accounts: ${problems.join('; ')}`);
  return ledger.openBooks(accounts);
}
