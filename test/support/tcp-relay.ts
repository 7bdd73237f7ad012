import net from 'node:net';

/**
 * A TCP relay on loopback between the connector and a real PostgreSQL server, standing for the
 * network: each connection through it can be stalled (its bytes kept, both ways, as a network
 * that has gone quiet) and resumed (the kept bytes delivered in order), and the server's answers
 * can be rewritten on their way, a protocol message at a time (`rewriteAnswer`), to play a
 * server that says the same in other words.
 */
export interface TcpRelay {
  /** The URL to give the connector: the server's, with this relay's host and port. */
  readonly url: string;
  /** Connections opened through the relay so far. */
  connections(): number;
  stall(connection: number): void;
  resume(connection: number): void;
  /** The server gone: every connection through the relay is reset, and new ones are refused (closed at once) until `mend`. */
  cut(): void;
  mend(): void;
  close(): Promise<void>;
}

interface Link {
  readonly client: net.Socket;
  readonly server: net.Socket;
  stalled: boolean;
  readonly toServer: Buffer[];
  readonly toClient: Buffer[];
}

/**
 * The server's answers cut into protocol messages (a type byte, then a 32-bit length that counts
 * itself), each passed through `rewrite`. The connector never asks for TLS here, so every answer
 * from the first is such a message.
 */
function messageRewriter(rewrite: (message: Buffer) => Buffer): (chunk: Buffer) => Buffer {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    const out: Buffer[] = [];
    while (pending.length >= 5) {
      const end = 1 + pending.readInt32BE(1);
      if (pending.length < end) break;
      out.push(rewrite(pending.subarray(0, end)));
      pending = pending.subarray(end);
    }
    return Buffer.concat(out);
  };
}

export async function startTcpRelay(serverUrl: string, rewriteAnswer?: (message: Buffer) => Buffer): Promise<TcpRelay> {
  const target = new URL(serverUrl);
  const links: Link[] = [];
  let cut = false;
  const listener = net.createServer((client) => {
    if (cut) {
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    const server = net.connect(Number(target.port || 5432), target.hostname);
    const link: Link = { client, server, stalled: false, toServer: [], toClient: [] };
    const rewriteAnswers = rewriteAnswer === undefined ? (chunk: Buffer) => chunk : messageRewriter(rewriteAnswer);
    links.push(link);
    client.on('data', (chunk: Buffer) => (link.stalled ? link.toServer.push(chunk) : server.write(chunk)));
    server.on('data', (chunk: Buffer) => {
      const answer = rewriteAnswers(chunk);
      if (answer.length === 0) return;
      if (link.stalled) link.toClient.push(answer);
      else client.write(answer);
    });
    // Either side closing closes the other, as a real connection's end would reach the peer.
    client.on('error', () => undefined);
    server.on('error', () => undefined);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (address === null || typeof address === 'string') throw new Error('the relay has no TCP address');
  const url = new URL(serverUrl);
  url.host = `127.0.0.1:${address.port}`;
  const link = (connection: number): Link => {
    const found = links[connection];
    if (found === undefined) throw new Error(`no connection ${connection} through the relay (${links.length} so far)`);
    return found;
  };
  return {
    url: url.toString(),
    connections: () => links.length,
    stall: (connection) => {
      link(connection).stalled = true;
    },
    resume: (connection) => {
      const resumed = link(connection);
      resumed.stalled = false;
      for (const chunk of resumed.toServer.splice(0)) resumed.server.write(chunk);
      for (const chunk of resumed.toClient.splice(0)) resumed.client.write(chunk);
    },
    cut: () => {
      cut = true;
      for (const each of links) {
        each.client.resetAndDestroy();
        each.server.destroy();
      }
    },
    mend: () => {
      cut = false;
    },
    close: async () => {
      for (const each of links) {
        each.client.destroy();
        each.server.destroy();
      }
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
