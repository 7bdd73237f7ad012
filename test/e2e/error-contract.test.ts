import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteRequest } from '../support/backend-bodies.js';
import { TEST_CHANNEL_API_KEY } from '../support/harness.js';
import { sendMoneyBody } from '../support/outgoing-bodies.js';
import { rawRequest } from '../support/raw-http.js';
import { startHarness, type Harness } from '../support/sandbox-harness.js';

/**
 * One error contract, no exceptions: every non-2xx of either server, whether the connector,
 * Fastify or Node's HTTP parser produced it, is exactly {statusCode: 4 digits, message}. Raw
 * requests go over a TCP socket so that nothing in between tidies them up.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { REQUEST_RECEIVE_TIMEOUT_MS: '1000', BODY_LIMIT_BYTES: '4096' } });
});
afterAll(async () => {
  await h.close();
});

/** A raw request's answer, with its JSON body parsed. */
async function raw(url: string, text: string, options: { keepOpenMs?: number } = {}): Promise<{ status: number; headers: Readonly<Record<string, string>>; body: unknown }> {
  const answer = await rawRequest(url, text, options.keepOpenMs ?? 15_000);
  if (answer === undefined) throw new Error('the server closed without answering');
  return { status: answer.status, headers: answer.headers, body: answer.text === '' ? undefined : JSON.parse(answer.text) };
}

function expectContract(answer: { status: number; body: unknown }, status: number, statusCode: string, message?: RegExp): void {
  expect(answer.status).toBe(status);
  expect(Object.keys(answer.body as object).sort()).toEqual(['message', 'statusCode']);
  expect((answer.body as { statusCode: string }).statusCode).toBe(statusCode);
  if (message !== undefined) expect((answer.body as { message: string }).message).toMatch(message);
}

const get = (path: string, headers = ''): string => `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${headers}\r\n`;
const post = (path: string, body: string, headers = ''): string =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;

describe('the error contract on raw HTTP', () => {
  it('bad percent-encoding in the path is 400 3101', async () => {
    expectContract(await raw(h.incomingUrl, get('/parties/MSISDN/%E0%A4%A')), 400, '3101', /not validly percent-encoded/);
    expectContract(await raw(h.outgoingUrl, get('/send-money/%ZZ', `x-api-key: ${TEST_CHANNEL_API_KEY}\r\n`)), 400, '3101');
  });

  it('a request line that is not HTTP is 400 3101; an unknown method token too', async () => {
    expectContract(await raw(h.incomingUrl, 'HELLO THERE\r\n\r\n'), 400, '3101', /not valid HTTP\/1\.1 \(HPE_/);
    expectContract(await raw(h.incomingUrl, 'FR(B /health HTTP/1.1\r\nHost: x\r\n\r\n'), 400, '3101');
  });

  it('headers over Node\'s size limit are 431 3104', async () => {
    const answer = await raw(h.incomingUrl, get('/health', `X-Padding: ${'a'.repeat(20_000)}\r\n`));
    expectContract(answer, 431, '3104', /headers are over the size limit/);
  });

  it('a client that never finishes its headers gets 408 3000 after REQUEST_RECEIVE_TIMEOUT_MS', async () => {
    const answer = await raw(h.incomingUrl, 'GET /health HTTP/1.1\r\nHost: localhost\r\n', { keepOpenMs: 10_000 });
    expectContract(answer, 408, '3000', /not received in time/);
    expect(answer.headers['connection']).toBe('close');
  });

  it('a body over BODY_LIMIT_BYTES is 413 3104', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(5000) });
    expectContract(await raw(h.incomingUrl, post('/quoterequests', body)), 413, '3104');
  });

  it('an unknown route or method is 404 3002', async () => {
    expectContract(await raw(h.incomingUrl, get('/nowhere')), 404, '3002');
    expectContract(await raw(h.incomingUrl, 'PROPFIND /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'), 404, '3002');
  });
});

describe('path parameters and identifiers', () => {
  it('routes a 128-character identifier, and refuses a longer one in the contract', async () => {
    const alias = await startHarness({ env: { SUPPORTED_ID_TYPE: 'ALIAS' } });
    try {
      expectContract(await alias.call('GET', `/parties/ALIAS/${'a'.repeat(128)}`), 404, '3204');
      expectContract(await alias.call('GET', `/parties/ALIAS/${'a'.repeat(129)}`), 400, '3100');
      expectContract(await alias.call('GET', `/parties/ALIAS/${'a'.repeat(600)}`), 400, '3100', /longer than 512 characters/);
    } finally {
      await alias.close();
    }
  });

  it('refuses control characters and lone surrogates in path parameters', async () => {
    expectContract(await h.call('GET', '/parties/MSISDN/26097%001'), 400, '3100', /path parameter idValue has a control character U\+0000/);
    // A lone surrogate cannot be percent-encoded as UTF-8: the bytes of one are a bad encoding.
    expectContract(await h.call('GET', '/parties/MSISDN/260971%ED%A0%80'), 400, '3101');
    expectContract(await h.call('GET', '/parties/MSISDN/260971%7F'), 400, '3100', /control character U\+007F/);
  });

  it('checks the payee\'s and the payer\'s identifiers against their type', async () => {
    expectContract(await h.call('GET', '/parties/MSISDN/not-a-number'), 400, '3100', /the payee's MSISDN must be an E\.164 number/);
    const quote = quoteRequest({ payeeMsisdn: '260971000001', from: { idType: 'MSISDN', idValue: 'abc', displayName: 'Payer Person' } });
    expectContract(await h.call('POST', '/quoterequests', quote), 400, '3100', /from\.idValue \(MSISDN\) must be an E\.164 number/);
    const unknownType = quoteRequest({ payeeMsisdn: '260971000001', from: { idType: 'NICKNAME', idValue: 'abc' } });
    expect((await h.call('POST', '/quoterequests', unknownType)).status).toBe(400);
  });
});

describe('JSON bodies', () => {
  it('refuses nesting deeper than 32 levels with a clear 400, however deep, and the server stays up', async () => {
    // 2,000 levels within BODY_LIMIT_BYTES (4 KiB here); the scan refuses it before any parse.
    const deep = `${'['.repeat(2000)}${']'.repeat(2000)}`;
    expectContract(await raw(h.incomingUrl, post('/quoterequests', deep)), 400, '3100', /nests deeper than 32 levels/);
    const justOver = JSON.stringify({ quoteId: 'x', extensionList: JSON.parse(`${'['.repeat(32)}${']'.repeat(32)}`) });
    expectContract(await h.call('POST', '/quoterequests', JSON.parse(justOver)), 400, '3100', /nests deeper than 32 levels/);
    expect((await h.call('GET', '/health')).status).toBe(200);
  });

  it('refuses control characters and lone surrogates in any text, naming the field', async () => {
    const nul = sendMoneyBody({ payer: { name: 'Jane\u0000Doe', payerId: '260971000002' } });
    expectContract(await h.callOutgoing('POST', '/send-money', nul), 400, '3100', /body\/payer\/name has a control character U\+0000 at character 5/);
    const escape = sendMoneyBody({ transactionDescription: 'Lunch\u001b[31m' });
    expectContract(await h.callOutgoing('POST', '/send-money', escape), 400, '3100', /body\/transactionDescription has a control character U\+001B/);
    const surrogate = `{"homeTransactionId":"h-\\ud800","payeeId":"1"}`;
    const answer = await raw(h.outgoingUrl, post('/send-money', surrogate, `x-api-key: ${TEST_CHANNEL_API_KEY}\r\n`));
    expectContract(answer, 400, '3100', /body\/homeTransactionId has a lone surrogate U\+D800/);
    const pair = await h.callOutgoing('POST', '/send-money', sendMoneyBody({ transactionDescription: 'Lunch \u{1F35C}' }));
    expect(pair.status).toBe(200);
  });

  it('refuses a field the channel API does not define in the contract, naming it', async () => {
    const body = JSON.stringify({ ...sendMoneyBody(), payeeIdSubValue: 'till-7' });
    const answer = await raw(h.outgoingUrl, post('/send-money', body, `x-api-key: ${TEST_CHANNEL_API_KEY}\r\n`));
    expectContract(answer, 400, '3100', /^Generic validation error: body\/payeeIdSubValue is not a field of this request$/);
  });

  it('refuses keys that reach an object\'s prototype', async () => {
    const answer = await raw(h.incomingUrl, post('/quoterequests', '{"__proto__":{"admin":true}}'));
    expectContract(answer, 400, '3100', /body\/__proto__ is a reserved key/);
  });

  it('refuses a body that is not JSON, or empty, with 3101', async () => {
    expectContract(await raw(h.incomingUrl, post('/quoterequests', '{"quoteId":')), 400, '3101', /not valid JSON/);
    expectContract(await raw(h.incomingUrl, post('/quoterequests', '')), 400, '3101');
  });
});
