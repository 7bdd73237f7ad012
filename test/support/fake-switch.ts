import { startFakeSwitchServer, type FakeSwitchOptions, type FakeSwitchServer } from '../../bench/fake-switch-server.js';

/**
 * The fake switch connector the e2e tests run against: a real HTTP server on loopback
 * implementing the outbound API (bench/fake-switch-server.ts, shared with the benchmark).
 * Tests set GET /transfers/{id} answers (setTransferStatus), script outbound transfers by
 * homeTransactionId (script) and read every request received (requests).
 */
export type FakeSwitch = FakeSwitchServer;
export type { OutboundScript } from '../../bench/fake-switch-server.js';
/** GET /transfers/{id} as the real switch connector answers it: the hub's word in the fulfil. */
export { hubAnswer, hubHasNoSuchTransfer, hubHasNoSuchTransferAfterError, switchOwnFailure } from '../../bench/fake-switch-server.js';

export function startFakeSwitch(options: FakeSwitchOptions = {}): Promise<FakeSwitch> {
  return startFakeSwitchServer(options);
}
