import { SdkClient } from '../../src/adapters/switch/sdk-client.js';
import type { OutboundTransferRequest, TransferContinuation } from '../../src/ports/outgoing-switch.js';
import type { PlatformAnswer, PlatformIdentifier, SwitchConnector } from '../../src/ports/switch-connector.js';

/**
 * The real SdkClient against a fake switch connector, whose registrations (POST /accounts) can
 * be held on their way, as a slow platform holds a batch of 10,000, and whose removals a test
 * may wrap (to let time pass during one, say).
 */
export class GatedSwitch implements SwitchConnector {
  readonly client: SdkClient;
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  #entered: (() => void) | undefined;
  /** Runs around each removal; by default sends it. */
  removal: (item: Omit<PlatformIdentifier, 'currency'>, send: () => Promise<PlatformAnswer>) => Promise<PlatformAnswer> = (_item, send) => send();

  constructor(baseUrl: string, timeoutMs = 2000) {
    this.client = new SdkClient({ baseUrl, timeoutMs });
  }

  /** Holds the next registrations until `release`; resolves once the first of them is on its way. */
  hold(): Promise<void> {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
    return new Promise((resolve) => (this.#entered = resolve));
  }

  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  getTransfer(transferId: string) {
    return this.client.getTransfer(transferId);
  }

  initiateTransfer(request: OutboundTransferRequest) {
    return this.client.initiateTransfer(request);
  }

  continueTransfer(transferId: string, continuation: TransferContinuation) {
    return this.client.continueTransfer(transferId, continuation);
  }

  async registerIdentifiers(items: readonly PlatformIdentifier[]): Promise<PlatformAnswer> {
    const gate = this.#gate;
    this.#entered?.();
    if (gate !== undefined) await gate;
    return this.client.registerIdentifiers(items);
  }

  deregisterIdentifier(item: Omit<PlatformIdentifier, 'currency'>): Promise<PlatformAnswer> {
    return this.removal(item, () => this.client.deregisterIdentifier(item));
  }
}
