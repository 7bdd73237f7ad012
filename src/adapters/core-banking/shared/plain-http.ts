import { isIP } from 'node:net';

/**
 * The warning for an institution or exchange reached over plain http on another machine: its
 * credentials (a password, an API key, a client secret) and the customers' data would cross the
 * network in clear. Undefined for https, and for http to this machine (a sidecar or a tunnel that
 * adds TLS, a test). Plain http is not refused: a bank's network may encrypt below HTTP (a service
 * mesh's mutual TLS), which the connector cannot see.
 */
export function plainHttpWarning(setting: string, baseUrl: string): string | undefined {
  const url = new URL(baseUrl);
  if (url.protocol !== 'http:' || isLoopback(url.hostname)) return undefined;
  return `${setting} uses plain http to ${url.hostname}: credentials and customer data cross the network unencrypted unless something below HTTP encrypts them; use https`;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./i.test(host) || /^::ffff:7f[0-9a-f]{2}:/i.test(host);
  return false;
}
