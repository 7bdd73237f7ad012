import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../support/seeded-random.js';
import { quoteRequest, transferRequest } from '../support/backend-bodies.js';
import { TEST_CALLBACK_SECRET, TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { sendMoneyBody } from '../support/outgoing-bodies.js';
import { httpRequest, rawRequest, type RawAnswer } from '../support/raw-http.js';
import { startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * Seeded wire fuzzing of both servers (FUZZ_SEED, FUZZ_REQUESTS): thousands of requests built
 * from valid bodies and mutated, odd paths, methods, headers and plain garbage, sent over raw
 * TCP. Every answer must be below 500, and every non-2xx must be exactly the error contract
 * {statusCode: 4 digits, message: 1-128 characters}. The run prints what it covered.
 */

/** An integer setting of the run, at least `min`; anything else stops the run rather than fuzz nothing. */
function integerSetting(name: string, fallback: string, min: number): number {
  const text = process.env[name] ?? fallback;
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer of at least ${min}, got ${JSON.stringify(text)}`);
  return value;
}

const SEED = integerSetting('FUZZ_SEED', '10010', 0);
const REQUESTS = integerSetting('FUZZ_REQUESTS', '6000', 1);
const CONCURRENCY = 8;

type Server = 'incoming' | 'outgoing';
interface Case {
  readonly kind: string;
  readonly server: Server;
  readonly request: string | Buffer;
  readonly head: boolean;
}

class Fuzzer {
  readonly #random: () => number;
  constructor(seed: number) {
    this.#random = seededRandom(seed);
  }

  int(below: number): number {
    return Math.floor(this.#random() * below);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  chance(probability: number): boolean {
    return this.#random() < probability;
  }

  /** An odd string: control characters, lone surrogates, long, unicode, numbers as text, empty. */
  oddText(): string {
    switch (this.int(10)) {
      case 0:
        return `a\u0000b`;
      case 1:
        return `x${String.fromCharCode(this.int(32))}y`;
      case 2:
        return `\ud800${this.pick(['', 'z'])}`;
      case 3:
        return 'é'.repeat(1 + this.int(300));
      case 4:
        return 'x'.repeat(100 + this.int(3000));
      case 5:
        return '';
      case 6:
        return this.pick(['-1', '0', '1e3', '00.5', '12345678901234567890123.45', 'NaN', '1.', '.5', ' 1']);
      case 7:
        return '\u{1F600}\u202E\u2028';
      case 8:
        return this.pick(['../../etc/passwd', '%00', '<script>', "' OR 1=1 --", '${jndi:ldap://x}']);
      default:
        return `\u007f\u0085${this.int(1000)}`;
    }
  }

  /** Any JSON value of a type other than the usual. */
  oddValue(): unknown {
    switch (this.int(8)) {
      case 0:
        return this.int(2) === 0 ? 12.5 : -1;
      case 1:
        return null;
      case 2:
        return [];
      case 3:
        return {};
      case 4:
        return true;
      case 5:
        return [this.oddText()];
      case 6:
        return { nested: { deeper: this.oddText() } };
      default:
        return this.oddText();
    }
  }

  /** Half the time one change (reaching business rules past validation), else many. */
  vary(body: unknown): unknown {
    return this.chance(0.5) ? this.mutateOne(body) : this.mutate(body);
  }

  /** A copy of `body` with one field, anywhere in it, deleted or given an odd value. */
  mutateOne(body: unknown): unknown {
    const copy: unknown = JSON.parse(JSON.stringify(body));
    const holders: Array<{ holder: Record<string, unknown> | unknown[]; key: string | number }> = [];
    const stack: unknown[] = [copy];
    while (stack.length > 0) {
      const value = stack.pop();
      if (Array.isArray(value)) value.forEach((item, index) => (holders.push({ holder: value, key: index }), stack.push(item)));
      else if (typeof value === 'object' && value !== null) {
        for (const [key, item] of Object.entries(value)) {
          holders.push({ holder: value as Record<string, unknown>, key });
          stack.push(item);
        }
      }
    }
    if (holders.length === 0) return this.oddValue();
    const { holder, key } = this.pick(holders);
    if (!Array.isArray(holder) && typeof key === 'string' && this.chance(0.3)) delete holder[key];
    else (holder as Record<string | number, unknown>)[key] = this.oddValue();
    return copy;
  }

  /** A copy of `body` with a few fields deleted, retyped, given odd text, or added. */
  mutate(body: unknown, depth = 0): unknown {
    if (typeof body === 'string') return this.chance(0.3) ? this.oddText() : body;
    if (Array.isArray(body)) return body.map((item) => this.mutate(item, depth + 1));
    if (typeof body !== 'object' || body === null) return this.chance(0.2) ? this.oddValue() : body;
    const result: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(body)) {
      const roll = this.#random();
      if (roll < 0.08) continue;
      result[key] = roll < 0.18 ? this.oddValue() : this.mutate(value, depth + 1);
    }
    if (this.chance(0.1)) result[this.pick(['extra', 'constructor', '__proto__', 'x\u0001', 'amount'])] = this.oddValue();
    return result;
  }
}

/** Builds one case; `kind` names the family, for the coverage report. */
function buildCase(f: Fuzzer, ids: { quote: Record<string, unknown>; transfer: Record<string, unknown> }): Case {
  const family = f.int(100);
  const channel = { 'Content-Type': 'application/json', 'x-api-key': TEST_CHANNEL_API_KEY };
  const json = { 'Content-Type': f.pick(['application/json', 'application/json; charset=utf-8', 'Application/JSON']) };
  if (family < 22) {
    const fresh = quoteRequest({ payeeMsisdn: f.pick(['260971000001', '260971000003', '260971999999', '260971000004']) });
    // Some reuse the real quote's id, so that a changed repeat meets the stored one.
    const body = JSON.stringify(f.vary(f.chance(0.2) ? { ...fresh, quoteId: ids.quote['quoteId'] } : fresh));
    return { kind: 'incoming quote, mutated', server: 'incoming', request: httpRequest('POST', '/quoterequests', json, body), head: false };
  }
  if (family < 34) {
    const body = JSON.stringify(f.vary(ids.transfer));
    return { kind: 'incoming transfer, mutated', server: 'incoming', request: httpRequest('POST', '/transfers', json, body), head: false };
  }
  if (family < 42) {
    const states = ['COMPLETED', 'ABORTED', 'RESERVED', 'completed', 'COMPLETED ', 'ERROR_OCCURRED', f.oddText()];
    const body = JSON.stringify(f.mutate({ currentState: f.pick(states), finalNotification: { transferState: f.pick(states), completedTimestamp: '2026-11-23T10:00:00.000Z' } }));
    const id = f.pick([String(ids.transfer['transferId']), '01JDV6M3AZ6XK1B0SPZ8Q4W2RA', encodeOdd(f.oddText()).slice(0, 600)]);
    return { kind: 'incoming notification', server: 'incoming', request: httpRequest(f.pick(['PUT', 'PATCH']), `/transfers/${id}`, json, body), head: false };
  }
  if (family < 54) {
    const segment = f.pick([
      '260971000001',
      'x'.repeat(1 + f.int(700)),
      encodeOdd(f.oddText()),
      '%E0%A4%A',
      '%ZZ',
      '%00',
      '..%2F..%2F',
      '260971000001?x=%00',
      `a/${'b'.repeat(f.int(200))}`,
    ]);
    const path = f.pick([`/parties/${f.pick(['MSISDN', 'ALIAS', 'IBAN', 'msisdn', ''])}/${segment}`, `/transfers/${segment}`, `/${segment}`, `/health?${segment}`]);
    const method = f.pick(['GET', 'GET', 'HEAD', 'DELETE', 'OPTIONS', 'PROPFIND', 'POST']);
    return { kind: 'incoming paths and methods', server: 'incoming', request: httpRequest(method, path), head: method === 'HEAD' };
  }
  if (family < 70) {
    const body = JSON.stringify(f.vary(sendMoneyBody()));
    const path = f.pick(['/send-money', '/merchant-payment', '/merchant-payments']);
    return { kind: 'outgoing send-money, mutated', server: 'outgoing', request: httpRequest('POST', path, channel, body), head: false };
  }
  if (family < 78) {
    const body = JSON.stringify(f.mutate(f.pick([{ acceptQuote: true }, { acceptQuote: false }, { transaction: { id: 'x', status_code: 'TS' } }, { reference: 'x', status: 'SUCCEEDED' }])));
    const path = f.pick(['/send-money/01JDV6M3AZ6XK1B0SPZ8Q4W2RA', `/send-money/${encodeOdd(f.oddText()).slice(0, 700)}`, '/callback']);
    const headers = path === '/callback' ? { 'Content-Type': 'application/json', 'x-callback-secret': f.pick([TEST_CALLBACK_SECRET, 'wrong-secret-0000000']) } : channel;
    return { kind: 'outgoing accept and callback, mutated', server: 'outgoing', request: httpRequest(f.pick(['PUT', 'POST']), path, headers, body), head: false };
  }
  if (family < 86) {
    const server: Server = f.pick(['incoming', 'outgoing']);
    const headers: Record<string, string> = f.pick([
      { 'Content-Type': 'text/plain' },
      { 'Content-Type': 'application/x-www-form-urlencoded' },
      { 'Content-Type': 'application/json; charset=latin1' },
      {},
      { 'x-api-key': 'wrong-key' },
      { 'x-api-key': TEST_CHANNEL_API_KEY, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      { 'x-api-key': TEST_CHANNEL_API_KEY, 'Content-Type': 'application/json', Expect: '100-continue' },
    ]);
    const body = f.pick(['{"a":1}', '', '[', `${'['.repeat(40 + f.int(3000))}`, '{"quoteId":"\\ud800"}', 'null', '"text"', '12']);
    const path = server === 'incoming' ? f.pick(['/quoterequests', '/transfers']) : f.pick(['/send-money', '/callback']);
    return { kind: 'content types, encodings and raw bodies', server, request: httpRequest('POST', path, headers, body), head: false };
  }
  const server: Server = f.pick(['incoming', 'outgoing']);
  const garbage = f.pick([
    'HELLO\r\n\r\n',
    'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost x\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    'POST /quoterequests HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n',
    `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000 + f.int(20_000))}\r\n\r\n`,
    `GET /${'%'.repeat(1 + f.int(50))} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    'GET /health HTTP/1.0\r\n\r\n',
    `\u0000\u0001\u0002 / HTTP/1.1\r\n\r\n`,
    'GET /health HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n',
  ]);
  return { kind: 'malformed HTTP', server, request: Buffer.from(garbage, 'latin1'), head: false };
}

/** Percent-encodes text; a lone surrogate (which encodeURIComponent refuses) as its bad UTF-8 bytes. */
function encodeOdd(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ED%A0%80';
  }
}

const CONTRACT_KEYS = ['message', 'statusCode'];

/** What is wrong with an answer, or undefined when it keeps the contract. */
function violation(answer: RawAnswer | undefined, head: boolean): string | undefined {
  if (answer === undefined) return undefined;
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 200)}`;
  if (answer.status < 400 || head) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `status ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`;
  }
  if (typeof body !== 'object' || body === null) return `status ${answer.status} with body ${answer.text.slice(0, 200)}`;
  const record = body as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  if (keys.join(',') !== CONTRACT_KEYS.join(',')) return `status ${answer.status} with keys ${keys.join(',')}: ${answer.text.slice(0, 200)}`;
  if (typeof record['statusCode'] !== 'string' || !/^[0-9]{4}$/.test(record['statusCode'])) return `statusCode ${String(record['statusCode'])}`;
  if (typeof record['message'] !== 'string' || record['message'].length < 1 || record['message'].length > 128) return `message of ${String(record['message']).length} characters`;
  return undefined;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { REQUEST_RECEIVE_TIMEOUT_MS: '3000' } });
});
afterAll(async () => {
  await h.close();
});

describe(`wire fuzz (seed ${SEED}, ${REQUESTS} requests)`, () => {
  it('answers every request below 500 and every error in the contract', async () => {
    // A real quote and its transfer, so that mutations of them reach deep into the handlers.
    const quoteBody = quoteRequest({ payeeMsisdn: '260971000001' });
    const quoted = await h.call('POST', '/quoterequests', quoteBody);
    expect(quoted.status).toBe(200);
    const transfer = transferRequest(quoteBody, quoted.body as Record<string, unknown>);
    const fuzzer = new Fuzzer(SEED);
    const cases = Array.from({ length: REQUESTS }, () => buildCase(fuzzer, { quote: quoteBody, transfer }));

    const byKind = new Map<string, number>();
    const byStatus = new Map<string, number>();
    const problems: string[] = [];
    let unanswered = 0;
    let sent = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < cases.length) {
        const index = next;
        next += 1;
        const item = cases[index] as Case;
        const answer = await rawRequest(item.server === 'incoming' ? h.incomingUrl : h.outgoingUrl, item.request, 20_000);
        sent += 1;
        byKind.set(item.kind, (byKind.get(item.kind) ?? 0) + 1);
        if (answer === undefined) unanswered += 1;
        const code = answer === undefined ? 'closed' : item.head ? `HEAD ${answer.status}` : answer.status >= 400 ? `${answer.status} ${/"statusCode":"(\d{4})"/.exec(answer.text)?.[1] ?? '?'}` : String(answer.status);
        byStatus.set(code, (byStatus.get(code) ?? 0) + 1);
        const wrong = violation(answer, item.head);
        if (wrong !== undefined && problems.length < 20) problems.push(`#${index} ${item.kind}: ${wrong}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));

    const sorted = (map: Map<string, number>): string => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, count]) => `${key}: ${count}`).join(', ');
    console.log(
      [
        `wire fuzz seed ${SEED} (rerun with FUZZ_SEED=${SEED}): ${REQUESTS} requests, ${unanswered} closed without an answer`,
        `  by family: ${sorted(byKind)}`,
        `  by answer (status and statusCode): ${sorted(byStatus)}`,
        `  off-contract answers: ${problems.length}`,
      ].join('\n'),
    );
    expect(problems).toEqual([]);
    expect(sent).toBe(REQUESTS);
    // Every request is answered, garbage included (with 400): a closed connection is a crash or a hang.
    expect(unanswered).toBe(0);
    // Nothing the fuzz sent broke either server.
    expect((await h.call('GET', '/health')).status).toBe(200);
    expect((await h.callOutgoing('GET', '/payments/needing-attention')).status).toBe(200);
    expect(await h.app.sandbox?.conservationCheck()).toMatchObject({ ok: true });
  }, 300_000);
});
