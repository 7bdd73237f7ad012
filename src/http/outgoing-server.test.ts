import { describe, expect, it } from 'vitest';
import type { OutgoingPayments } from '../aggregate/outgoing-payments.js';
import type { Logger } from '../ports/logger.js';
import { buildOutgoingServer, outgoingRequestTimeoutMs } from './outgoing-server.js';
import { createServer } from './server-common.js';

const silent: Logger = { fatal() {}, error() {}, warn() {}, info() {}, debug() {} };

function serverWith(transferTimeoutMs: number) {
  return buildOutgoingServer({} as OutgoingPayments, { checks: {}, timeoutMs: 100 }, {
    logger: silent,
    bodyLimitBytes: 65_536,
    name: 'outgoing',
    channelApiKey: 'channel-key-0123456789',
    callbackSecret: 'callback-secret-0123456789',
    callbackSecretHeader: 'x-callback-secret',
    callbackAuth: 'secret',
    transferTimeoutMs,
  });
}

describe('outgoing server time limits', () => {
  it('outlast two blocking switch calls, never below 120 s', () => {
    expect(outgoingRequestTimeoutMs(1000)).toBe(120_000);
    expect(outgoingRequestTimeoutMs(100_000)).toBe(230_000);
    expect(outgoingRequestTimeoutMs(600_000)).toBe(1_230_000);
  });

  it('are set on the server from SDK_TRANSFER_TIMEOUT_MS: a silent connection is kept while a handler may wait', async () => {
    const server = serverWith(600_000);
    try {
      expect(server.initialConfig.connectionTimeout).toBe(1_230_000);
      // Receiving the request itself is bounded apart, like the switch connector's 65 s.
      expect(server.server.requestTimeout).toBe(65_000);
      expect(server.server.headersTimeout).toBe(65_000);
    } finally {
      await server.close();
    }
  });

  it('default to 120 s of silence, 65 s to receive a request, 1024 connections and 1000 requests per connection', async () => {
    const server = createServer({ logger: silent, bodyLimitBytes: 65_536, name: 'incoming' });
    try {
      expect(server.initialConfig.connectionTimeout).toBe(120_000);
      expect(server.server.requestTimeout).toBe(65_000);
      expect(server.server.headersTimeout).toBe(65_000);
      expect(server.server.maxConnections).toBe(1024);
      expect(server.server.maxRequestsPerSocket).toBe(1000);
    } finally {
      await server.close();
    }
  });

  it('take the limits given', async () => {
    const limits = { maxConnections: 7, maxRequestsPerSocket: 3, receiveTimeoutMs: 2000, checkIntervalMs: 250 };
    const server = createServer({ logger: silent, bodyLimitBytes: 65_536, name: 'incoming', requestTimeoutMs: 65_000, limits });
    try {
      expect(server.initialConfig.connectionTimeout).toBe(65_000);
      expect([server.server.requestTimeout, server.server.headersTimeout, server.server.maxConnections, server.server.maxRequestsPerSocket]).toEqual([2000, 2000, 7, 3]);
    } finally {
      await server.close();
    }
  });
});
