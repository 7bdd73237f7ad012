import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { isLoopbackHost } from './listen-security.js';

const SECRETS = { OUTGOING_API_KEY: 'our-channel-key-0123456789', CALLBACK_SECRET: 'our-callback-secret-0123456789', OPERATOR_CREDENTIALS: 'ops:our-operator-token-0123456789' };

describe('isLoopbackHost', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1'])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });
  it.each(['0.0.0.0', '::', '10.0.0.5', '192.168.1.1', '128.0.0.1', 'example.org', 'localhost.example.org', '::2', '', '::ffff:10.0.0.1'])('%j is not', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('where the servers listen', () => {
  it('loopback by default, for both servers', () => {
    expect(loadConfig({}).listen).toEqual({ incoming: { host: '127.0.0.1', tls: undefined }, outgoing: { host: '127.0.0.1', tls: undefined } });
  });

  it('HOST sets both, INCOMING_HOST and OUTGOING_HOST each one; beyond loopback only with secrets of the institution\'s own', () => {
    expect(loadConfig({ ...SECRETS, HOST: '0.0.0.0', OUTGOING_HOST: '10.0.0.5' }).listen).toEqual({
      incoming: { host: '0.0.0.0', tls: undefined },
      outgoing: { host: '10.0.0.5', tls: undefined },
    });
    expect(() => loadConfig({ OUTGOING_HOST: '10.0.0.5' })).toThrow('OUTGOING_HOST (or HOST): "10.0.0.5" is reachable from other machines while the demo');
    // One demo credential left is enough to refuse.
    expect(() => loadConfig({ OUTGOING_API_KEY: SECRETS.OUTGOING_API_KEY, INCOMING_HOST: '0.0.0.0' })).toThrow('INCOMING_HOST (or HOST): "0.0.0.0"');
    expect(loadConfig({ HOST: 'localhost' }).listen.incoming.host).toBe('localhost');
    // The operations server follows HOST too, and refuses the demo operator beyond loopback.
    expect(loadConfig({ ...SECRETS, HOST: '0.0.0.0' }).operations.listen).toEqual({ host: '0.0.0.0', tls: undefined });
    expect(() => loadConfig({ OUTGOING_API_KEY: SECRETS.OUTGOING_API_KEY, CALLBACK_SECRET: SECRETS.CALLBACK_SECRET, OPERATIONS_HOST: '10.0.0.5' })).toThrow(
      'OPERATIONS_HOST (or HOST): "10.0.0.5" is reachable from other machines while the demo OPERATOR_CREDENTIALS is in use',
    );
  });

  it('keeps the published demo operator token on loopback whatever the name beside it or the entries around it', () => {
    const secrets = { OUTGOING_API_KEY: SECRETS.OUTGOING_API_KEY, CALLBACK_SECRET: SECRETS.CALLBACK_SECRET, HOST: '0.0.0.0' };
    const refusal = 'OPERATIONS_HOST (or HOST): "0.0.0.0" is reachable from other machines while the demo OPERATOR_CREDENTIALS is in use';
    for (const credentials of [
      'demo-operator:demo-operator-token-change-me',
      'demo-operator:demo-operator-token-change-me,alice:alice-real-token-0123456789abcdef',
      'admin:demo-operator-token-change-me',
      'demo-operator:demo-operator-token-change-me,',
      ' alice:alice-real-token-0123456789abcdef , root:demo-operator-token-change-me ',
    ]) {
      expect(() => loadConfig({ ...secrets, OPERATOR_CREDENTIALS: credentials }), credentials).toThrow(refusal);
    }
    // On loopback the demo token under any name is the demo, and allowed.
    expect(loadConfig({ OPERATOR_CREDENTIALS: 'admin:demo-operator-token-change-me,' }).operations).toMatchObject({
      operators: [{ name: 'admin', token: 'demo-operator-token-change-me' }],
      demoOperator: true,
    });
    expect(loadConfig({ ...secrets, OPERATOR_CREDENTIALS: 'alice:alice-real-token-0123456789abcdef,' }).operations).toMatchObject({ demoOperator: false });
  });

  it('refuses an operator token that is also the channel key or the callback secret, naming neither', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({
        OUTGOING_API_KEY: 'shared-secret-0123456789abcdef',
        CALLBACK_SECRET: 'other-shared-secret-0123456789ab',
        OPERATOR_CREDENTIALS: 'alice:shared-secret-0123456789abcdef,bob:other-shared-secret-0123456789ab,carol:carol-own-token-0123456789abc',
      });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'OPERATOR_CREDENTIALS: the token of alice must differ from OUTGOING_API_KEY',
      'OPERATOR_CREDENTIALS: the token of bob must differ from CALLBACK_SECRET',
    ]);
    // The demo defaults count too: an operator holding the published callback secret is refused on loopback as well.
    expect(() => loadConfig({ OPERATOR_CREDENTIALS: 'alice:demo-callback-secret-change-me' })).toThrow('OPERATOR_CREDENTIALS: the token of alice must differ from CALLBACK_SECRET');
  });

  it('reads ALLOWED_HOSTS as lower-case names or bracketed addresses without a port', () => {
    expect(loadConfig({}).allowedHosts).toEqual([]);
    expect(loadConfig({ ...SECRETS, ALLOWED_HOSTS: 'Connector.Bank.Example, 10.0.0.5,[FD00::1],connector.bank.example' }).allowedHosts).toEqual(['connector.bank.example', '10.0.0.5', '[fd00::1]']);
    let problems: readonly string[] = [];
    try {
      loadConfig({ ...SECRETS, ALLOWED_HOSTS: 'bank.example:443,fd00::1,*.bank.example' });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'ALLOWED_HOSTS: "bank.example:443" is not a host name or address without a port',
      'ALLOWED_HOSTS: "fd00::1" is not a host name or address without a port',
      'ALLOWED_HOSTS: "*.bank.example" is not a host name or address without a port',
    ]);
  });

  it('refuses the demo credentials with ALLOWED_HOSTS, which names what a proxy forwards from other machines (found by review)', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig({ ALLOWED_HOSTS: 'payments.bank.example' });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    // Before, it loaded: the published demo key, secret and operator token served through the proxy.
    expect(problems).toEqual([
      'ALLOWED_HOSTS: names other machines reach through a proxy while the demo OUTGOING_API_KEY or CALLBACK_SECRET is in use; set your own secrets (README, "Security")',
      'ALLOWED_HOSTS: names other machines reach through a proxy while the demo OPERATOR_CREDENTIALS is in use; set your own secrets (README, "Security")',
    ]);
    expect(loadConfig({ ...SECRETS, ALLOWED_HOSTS: 'payments.bank.example' }).allowedHosts).toEqual(['payments.bank.example']);
  });

  it('reads TLS files per server and refuses half a configuration', () => {
    const config = loadConfig({ INCOMING_TLS_CERT_FILE: '/etc/cc/in.crt', INCOMING_TLS_KEY_FILE: '/etc/cc/in.key', INCOMING_TLS_CA_FILE: '/etc/cc/switch-ca.crt' });
    expect(config.listen.incoming.tls).toEqual({ certFile: '/etc/cc/in.crt', keyFile: '/etc/cc/in.key', caFile: '/etc/cc/switch-ca.crt' });
    expect(config.listen.outgoing.tls).toBeUndefined();
    expect(() => loadConfig({ OUTGOING_TLS_CERT_FILE: '/etc/cc/out.crt' })).toThrow('OUTGOING_TLS_CERT_FILE and OUTGOING_TLS_KEY_FILE: set both or neither');
    expect(() => loadConfig({ INCOMING_TLS_CA_FILE: '/etc/cc/ca.crt' })).toThrow('INCOMING_TLS_CA_FILE: mutual TLS needs the server\'s own INCOMING_TLS_CERT_FILE and INCOMING_TLS_KEY_FILE');
  });

  it('reads the client TLS of the link to the switch connector, for an https SDK_BASE_URL only', () => {
    expect(loadConfig({}).sdkTls).toBeUndefined();
    expect(loadConfig({ SDK_BASE_URL: 'https://sdk:4001', SDK_TLS_CA_FILE: '/ca.crt', SDK_TLS_CERT_FILE: '/c.crt', SDK_TLS_KEY_FILE: '/c.key' }).sdkTls).toEqual({
      caFile: '/ca.crt',
      certFile: '/c.crt',
      keyFile: '/c.key',
    });
    expect(() => loadConfig({ SDK_TLS_CA_FILE: '/ca.crt' })).toThrow('SDK_TLS_*: set only with an https SDK_BASE_URL');
    expect(() => loadConfig({ SDK_BASE_URL: 'https://sdk:4001', SDK_TLS_KEY_FILE: '/c.key' })).toThrow('SDK_TLS_CERT_FILE and SDK_TLS_KEY_FILE: set both or neither');
  });
});
