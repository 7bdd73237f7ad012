import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the switch connector's outbound API on loopback. Tests set how it answers
 * GET /transfers/{id}; every request it receives is recorded.
 */
export interface FakeSwitch {
  readonly url: string;
  readonly requests: Array<{ method: string; path: string; body: unknown }>;
  /** The answer to GET /transfers/{id}: a status and body, or 'hang' to never answer. */
  setTransferStatus(transferId: string, answer: { status: number; body: unknown } | 'hang'): void;
  close(): Promise<void>;
}

export async function startFakeSwitch(): Promise<FakeSwitch> {
  const statuses = new Map<string, { status: number; body: unknown } | 'hang'>();
  const requests: FakeSwitch['requests'] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const path = request.url ?? '/';
      requests.push({ method: request.method ?? 'GET', path, body });
      const match = /^\/transfers\/([^/]+)$/.exec(path);
      if (request.method === 'GET' && match?.[1] !== undefined) {
        const answer = statuses.get(decodeURIComponent(match[1]));
        if (answer === 'hang') {
          hanging.add(response);
          return;
        }
        const chosen = answer ?? { status: 404, body: { statusCode: '3208', message: 'not found' } };
        response.writeHead(chosen.status, { 'content-type': 'application/json' }).end(JSON.stringify(chosen.body));
        return;
      }
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: '3002', message: 'no route' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setTransferStatus: (transferId, answer) => statuses.set(transferId, answer),
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
