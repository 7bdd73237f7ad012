import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SdkClient } from '../../src/adapters/switch/sdk-client.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certificates.js';

/**
 * Found by review: a switch call's time did not count the opening of its connection (TCP and the
 * TLS handshake, up to SDK_TIMEOUT_MS or 10 s), so an accept could reach the switch connector
 * after its deadline, when the recovery worker of another replica may already have given it up
 * as lost and refunded the customer.
 */
describe('a switch call whose connection opens slowly', () => {
  let certificates: TestCertificates | undefined;
  let net: NetServer | undefined;
  let https: HttpsServer | undefined;
  let sdk: SdkClient | undefined;
  afterEach(async () => {
    await sdk?.close();
    net?.close();
    https?.close();
    certificates?.remove();
  });

  it('is given up at its deadline and never reaches the switch connector afterwards', async () => {
    certificates = makeTestCertificates();
    const tls = certificates;
    const received: number[] = [];
    const started = Date.now();
    https = createHttpsServer({ key: tls.read(tls.serverKeyFile), cert: tls.read(tls.serverCertFile) }, (request, response) => {
      received.push(Date.now() - started);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"currentState":"COMPLETED"}');
    });
    const server = https;
    // The TLS handshake is answered 1 s late (a slow network, a busy switch connector).
    net = createNetServer((socket) => setTimeout(() => server.emit('connection', socket), 1000));
    const listening = net;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const address = listening.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    sdk = new SdkClient({ baseUrl: `https://localhost:${port}`, timeoutMs: 5000, transferTimeoutMs: 300, tls: { ca: tls.read(tls.caFile), cert: undefined, key: undefined } });

    const answer = await sdk.continueTransfer('t-1', { acceptQuote: true });
    expect(answer).toEqual({ outcome: 'unknown', reason: 'Switch connector timed out: PUT /transfers/t-1' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Before, the accept was written once the handshake was done (at about 1 s) and completed.
    expect(received).toEqual([]);
  });
});
