import { formatMinorUnits, toMinorUnits, AMOUNT_PATTERN } from '../../../src/domain/money.js';
import { isRecord } from '../../../src/adapters/core-banking/shared/wire-reader.js';
import { startFixtureServer, type FixtureReply, type FixtureRequest, type FixtureServer } from '../../institutions/fixture-server.js';

/**
 * A provider's exchange implementing docs/reference-exchange-api.yaml on loopback, written from
 * that document alone; each behaviour names the part it follows:
 * - "Money model": liquidity per currency; a hold takes target liquidity out of what is
 *   available; a commit credits the source and pays the held target out; a release frees it.
 * - "Rules that hold for every operation": writes idempotent on `reference` (a repeat with the
 *   same content answers 200 as it stands, other content 409 REFERENCE_CONFLICT); 400
 *   INVALID_REQUEST and 401 UNAUTHORIZED on every operation.
 * - POST /holds/{reference}/release: with no hold, 404 HOLD_NOT_FOUND and the reference is
 *   recorded released, so a later hold under it answers 409 HOLD_RELEASED.
 * - GET /rates: every pair one way with rate, charge and limits, and `asOf`.
 * The fixture server's faults add the ambiguous outcomes (a write applied but answered after the
 * adapter's timeout, applied then 5xx, refused with 5xx).
 */

export interface RestExchangeSeed {
  readonly liquidity: Readonly<Record<string, string>>;
  readonly pairs: ReadonlyArray<Record<string, unknown>>;
  readonly apiKey?: string;
  /** When the table was priced, as the fixture answers it. */
  readonly asOf: () => Date;
}

interface Hold {
  readonly reference: string;
  readonly currency: string;
  readonly minor: bigint;
  state: 'HELD' | 'COMMITTED' | 'RELEASED';
  source?: { readonly currency: string; readonly minor: bigint };
}

export interface RestExchangeFixture {
  readonly server: FixtureServer;
  readonly url: string;
  /** Liquidity balance and held amount of a currency, as decimal strings. */
  liquidity(currency: string): { balance: string; held: string };
  close(): Promise<void>;
}

const REFERENCE = /^[0-9A-Za-z][0-9A-Za-z-]{0,63}$/;

export async function startRestExchangeFixture(seed: RestExchangeSeed): Promise<RestExchangeFixture> {
  const balances = new Map<string, bigint>(Object.entries(seed.liquidity).map(([currency, amount]) => [currency, toMinorUnits(amount, currency)]));
  const held = new Map<string, bigint>();
  const holds = new Map<string, Hold>();
  const released = new Set<string>();

  const error = (status: number, code: string, message: string): FixtureReply => ({ status, body: { code, message } });
  const body = (hold: Hold): unknown => ({
    reference: hold.reference,
    // Two decimals where the currency has them, as many systems write: the adapter must compare by value.
    target: { amount: formatMinorUnits(hold.minor, hold.currency), currency: hold.currency },
    ...(hold.source === undefined ? {} : { source: { amount: formatMinorUnits(hold.source.minor, hold.source.currency), currency: hold.source.currency } }),
    state: hold.state,
  });
  const money = (value: unknown): { currency: string; minor: bigint } | undefined => {
    if (!isRecord(value) || typeof value['currency'] !== 'string' || typeof value['amount'] !== 'string' || !AMOUNT_PATTERN.test(value['amount'])) return undefined;
    try {
      return { currency: value['currency'], minor: toMinorUnits(value['amount'], value['currency']) };
    } catch {
      return undefined;
    }
  };
  const available = (currency: string): bigint => (balances.get(currency) ?? 0n) - (held.get(currency) ?? 0n);

  const handle = (request: FixtureRequest): FixtureReply => {
    if (seed.apiKey !== undefined && request.headers.authorization !== `Bearer ${seed.apiKey}`) return error(401, 'UNAUTHORIZED', 'missing or wrong API key');
    const parts = request.path.split('/').filter((part) => part !== '').map(decodeURIComponent);
    const reference = parts[1] ?? '';
    if (request.method === 'GET' && request.path === '/health') return { status: 200, body: { status: 'UP' } };
    if (request.method === 'GET' && request.path === '/rates') return { status: 200, body: { asOf: seed.asOf().toISOString(), pairs: seed.pairs } };
    if (request.method === 'POST' && request.path === '/holds') {
      if (!isRecord(request.body) || typeof request.body['reference'] !== 'string' || !REFERENCE.test(request.body['reference'])) return error(400, 'INVALID_REQUEST', 'reference');
      const target = money(request.body['target']);
      if (target === undefined) return error(400, 'INVALID_REQUEST', 'target');
      const ref = request.body['reference'];
      if (released.has(ref)) return error(409, 'HOLD_RELEASED', 'released before the hold arrived');
      const existing = holds.get(ref);
      if (existing !== undefined) return existing.currency === target.currency && existing.minor === target.minor ? { status: 200, body: body(existing) } : error(409, 'REFERENCE_CONFLICT', 'other content');
      if (!balances.has(target.currency)) return error(422, 'CURRENCY_NOT_SUPPORTED', target.currency);
      if (available(target.currency) < target.minor) return error(422, 'INSUFFICIENT_LIQUIDITY', 'short');
      held.set(target.currency, (held.get(target.currency) ?? 0n) + target.minor);
      const hold: Hold = { reference: ref, currency: target.currency, minor: target.minor, state: 'HELD' };
      holds.set(ref, hold);
      return { status: 201, body: body(hold) };
    }
    if (request.method === 'GET' && parts[0] === 'holds' && parts.length === 2) {
      const hold = holds.get(reference);
      return hold === undefined ? error(404, 'HOLD_NOT_FOUND', 'unknown') : { status: 200, body: body(hold) };
    }
    if (request.method === 'POST' && parts[0] === 'holds' && parts[2] === 'commit') {
      const source = isRecord(request.body) ? money(request.body['source']) : undefined;
      const target = isRecord(request.body) ? money(request.body['target']) : undefined;
      if (source === undefined || target === undefined) return error(400, 'INVALID_REQUEST', 'source and target');
      const hold = holds.get(reference);
      if (hold === undefined) return error(404, 'HOLD_NOT_FOUND', 'nothing held');
      if (hold.currency !== target.currency || hold.minor !== target.minor) return error(409, 'REFERENCE_CONFLICT', 'target differs from the hold');
      if (hold.state === 'RELEASED') return error(409, 'HOLD_RELEASED', 'released');
      if (hold.state === 'COMMITTED') {
        const same = hold.source?.currency === source.currency && hold.source.minor === source.minor;
        return same ? { status: 200, body: body(hold) } : error(409, 'REFERENCE_CONFLICT', 'committed with another source');
      }
      held.set(hold.currency, (held.get(hold.currency) ?? 0n) - hold.minor);
      balances.set(hold.currency, (balances.get(hold.currency) ?? 0n) - hold.minor);
      balances.set(source.currency, (balances.get(source.currency) ?? 0n) + source.minor);
      hold.state = 'COMMITTED';
      hold.source = source;
      return { status: 200, body: body(hold) };
    }
    if (request.method === 'POST' && parts[0] === 'holds' && parts[2] === 'release') {
      const hold = holds.get(reference);
      if (hold === undefined) {
        released.add(reference);
        return error(404, 'HOLD_NOT_FOUND', 'nothing held');
      }
      if (hold.state === 'COMMITTED') return error(409, 'HOLD_COMMITTED', 'committed');
      if (hold.state === 'HELD') {
        held.set(hold.currency, (held.get(hold.currency) ?? 0n) - hold.minor);
        hold.state = 'RELEASED';
      }
      return { status: 200, body: body(hold) };
    }
    return error(400, 'INVALID_REQUEST', 'no such route');
  };

  const server = await startFixtureServer({ handle, isWrite: (request) => request.method === 'POST' });
  return {
    server,
    url: server.url,
    liquidity: (currency) => ({ balance: formatMinorUnits(balances.get(currency) ?? 0n, currency), held: formatMinorUnits(held.get(currency) ?? 0n, currency) }),
    close: () => server.close(),
  };
}
