import { connect } from 'node:net';

/** One HTTP answer read off a raw socket. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The body as text ('' when none). */
  readonly text: string;
}

/**
 * Writes `request` to the server at `url` over a fresh TCP connection, as is, and reads one
 * answer (until Content-Length is met or the server closes). Resolves undefined when the server
 * closes without answering; rejects after `timeoutMs`. Nothing in between tidies the request up,
 * which is the point: tests of the wire contract send what a client library would refuse to.
 */
export function rawRequest(url: string, request: string | Buffer, timeoutMs = 15_000): Promise<RawAnswer | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      outcome();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
    const parsed = (): RawAnswer | undefined => {
      const split = received.indexOf('\r\n\r\n');
      if (split < 0) return undefined;
      const [statusLine = '', ...headerLines] = received.subarray(0, split).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      return { status: Number(statusLine.split(' ')[1]), headers, text: received.subarray(split + 4).toString('utf8') };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      // An interim answer (100 Continue) is followed by the real one: skip it.
      while (/^HTTP\/1\.1 1\d\d /.test(received.subarray(0, 13).toString('latin1')) && received.indexOf('\r\n\r\n') >= 0) {
        received = received.subarray(received.indexOf('\r\n\r\n') + 4);
      }
      const answer = parsed();
      const length = answer?.headers['content-length'];
      if (answer !== undefined && length !== undefined && Buffer.byteLength(answer.text) >= Number(length)) settle(() => resolve(answer));
    });
    socket.on('close', () => settle(() => resolve(parsed())));
    socket.on('error', () => undefined);
    socket.write(request);
  });
}

/** A well-formed request with Connection: close and, for a body, Content-Length. */
export function httpRequest(method: string, path: string, headers: Readonly<Record<string, string>> = {}, body?: string): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', 'Connection: close', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
