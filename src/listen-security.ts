import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';

/**
 * Where each server listens and with what transport security, and the rules that keep a
 * zero-configuration start safe: with the documented demo credentials nothing listens beyond
 * loopback. Files are named in the settings and read once at start-up.
 */

/** A server's certificate and key (PEM files); with `caFile`, clients must present a certificate that CA signed (mutual TLS). */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string | undefined;
}

export interface ListenConfig {
  readonly host: string;
  readonly tls: TlsFiles | undefined;
}

/** The client side of the link to the switch connector's outbound API (https SDK_BASE_URL). */
export interface ClientTlsFiles {
  /** CA that signed the switch connector's certificate, when not a public one. */
  readonly caFile: string | undefined;
  /** Our client certificate and key, when the switch connector asks for one (mutual TLS). */
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

/** The PEM contents, read at start-up. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export interface ClientTlsMaterial {
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}

/** True for an address only this machine can reach: localhost, 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopbackHost(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost') return true;
  const v4 = name.startsWith('::ffff:') ? name.slice('::ffff:'.length) : name;
  if (isIP(v4) === 4) return v4.split('.')[0] === '127';
  if (isIP(name) === 6) return new URL(`http://[${name}]/`).hostname === '[::1]';
  return false;
}

type Setting = (name: string) => string | undefined;

/**
 * Reads `<PREFIX>_HOST` (default HOST, default 127.0.0.1) and `<PREFIX>_TLS_CERT_FILE`,
 * `_TLS_KEY_FILE`, `_TLS_CA_FILE`; pushes a problem for a half-configured TLS.
 */
export function readListen(setting: Setting, prefix: 'INCOMING' | 'OUTGOING' | 'OPERATIONS', problems: string[]): ListenConfig {
  const host = setting(`${prefix}_HOST`) ?? setting('HOST') ?? '127.0.0.1';
  const certFile = setting(`${prefix}_TLS_CERT_FILE`);
  const keyFile = setting(`${prefix}_TLS_KEY_FILE`);
  const caFile = setting(`${prefix}_TLS_CA_FILE`);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push(`${prefix}_TLS_CERT_FILE and ${prefix}_TLS_KEY_FILE: set both or neither`);
    return { host, tls: undefined };
  }
  if (certFile === undefined || keyFile === undefined) {
    if (caFile !== undefined) problems.push(`${prefix}_TLS_CA_FILE: mutual TLS needs the server's own ${prefix}_TLS_CERT_FILE and ${prefix}_TLS_KEY_FILE`);
    return { host, tls: undefined };
  }
  return { host, tls: { certFile, keyFile, caFile } };
}

export function readClientTls(setting: Setting, problems: string[]): ClientTlsFiles | undefined {
  const caFile = setting('SDK_TLS_CA_FILE');
  const certFile = setting('SDK_TLS_CERT_FILE');
  const keyFile = setting('SDK_TLS_KEY_FILE');
  if ((certFile === undefined) !== (keyFile === undefined)) problems.push('SDK_TLS_CERT_FILE and SDK_TLS_KEY_FILE: set both or neither');
  if (caFile === undefined && certFile === undefined && keyFile === undefined) return undefined;
  return { caFile, certFile, keyFile };
}

/**
 * The demo credentials are published in the README: a server reachable from other machines with
 * them would let anyone send money (outgoing) or complete payments by callback. Refused.
 */
export function checkDemoCredentialsStayLocal(
  listen: Readonly<Partial<Record<'INCOMING' | 'OUTGOING' | 'OPERATIONS', ListenConfig>>>,
  demoCredentials: boolean,
  problems: string[],
  credentials = 'OUTGOING_API_KEY or CALLBACK_SECRET',
): void {
  if (!demoCredentials) return;
  for (const [prefix, config] of Object.entries(listen)) {
    if (config === undefined || isLoopbackHost(config.host)) continue;
    problems.push(
      `${prefix}_HOST (or HOST): "${config.host}" is reachable from other machines while the demo ${credentials} is in use; set your own secrets (README, "Security") or listen on 127.0.0.1`,
    );
  }
}

/**
 * ALLOWED_HOSTS names what a proxy forwards to the servers from other machines: the demo
 * credentials, published in the README, must not be in use then either.
 */
export function checkDemoCredentialsNotProxied(allowedHosts: readonly string[], demoCredentials: boolean, problems: string[], credentials = 'OUTGOING_API_KEY or CALLBACK_SECRET'): void {
  if (!demoCredentials || allowedHosts.length === 0) return;
  problems.push(`ALLOWED_HOSTS: names other machines reach through a proxy while the demo ${credentials} is in use; set your own secrets (README, "Security")`);
}

export async function readTlsMaterial(files: TlsFiles, prefix: string): Promise<TlsMaterial> {
  return {
    cert: await readPem(files.certFile, `${prefix}_TLS_CERT_FILE`),
    key: await readPem(files.keyFile, `${prefix}_TLS_KEY_FILE`),
    ca: files.caFile === undefined ? undefined : await readPem(files.caFile, `${prefix}_TLS_CA_FILE`),
  };
}

export async function readClientTlsMaterial(files: ClientTlsFiles): Promise<ClientTlsMaterial> {
  return {
    ca: files.caFile === undefined ? undefined : await readPem(files.caFile, 'SDK_TLS_CA_FILE'),
    cert: files.certFile === undefined ? undefined : await readPem(files.certFile, 'SDK_TLS_CERT_FILE'),
    key: files.keyFile === undefined ? undefined : await readPem(files.keyFile, 'SDK_TLS_KEY_FILE'),
  };
}

async function readPem(path: string, setting: string): Promise<Buffer> {
  let contents: Buffer;
  try {
    contents = await readFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new Error(`${setting}: cannot read ${path} (${typeof code === 'string' ? code : 'unreadable'})`, { cause: error });
  }
  if (!contents.toString('latin1').includes('-----BEGIN ')) throw new Error(`${setting}: ${path} is not a PEM file`);
  return contents;
}
