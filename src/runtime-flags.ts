import { setFlagsFromString } from 'node:v8';

/**
 * Keeps WebAssembly in V8's baseline tier (Liftoff). The only WebAssembly the connector runs is
 * the HTTP parser of undici (llhttp), its client to the switch connector and the institutions.
 * V8's optimising tier recompiles that parser in the background a few requests after the first
 * outgoing call, and the compilation holds about 35 MiB of native memory for a moment: under the
 * benchmark that moment set the process's peak resident size (173 MiB with the optimising tier,
 * 147 MiB without). Parsing response heads is a small share of the work, and the send-money
 * benchmark showed no loss of throughput in the baseline tier.
 *
 * Called first by each entry point, before any HTTP client connects (undici compiles the parser
 * on its first connection); NODE_OPTIONS does not accept this flag.
 */
export function applyRuntimeFlags(): void {
  setFlagsFromString('--liftoff-only');
}
