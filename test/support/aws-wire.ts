import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';
import type { IncomingRequest } from '../../tools/local/iam/describe-request.ts';

/**
 * A loopback HTTP server for the calling test file that keeps every request the real AWS SDK sends it (its body
 * read whole) and answers each with `answer` (default: an empty 500, which the SDK reports as an error). Stopped
 * after the file.
 */
export async function awsWire(
  answer: (request: IncomingRequest, response: ServerResponse) => void = (_, response) => {
    response.writeHead(500);
    response.end();
  },
): Promise<{ endpoint: string; requests: IncomingRequest[] }> {
  const requests: IncomingRequest[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received: IncomingRequest = {
        method: request.method ?? 'GET',
        url: request.url ?? '/',
        headers: request.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(received);
      answer(received, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}
