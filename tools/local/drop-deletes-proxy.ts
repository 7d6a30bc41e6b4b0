import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** A message as the proxy saw it received. */
export interface ReceivedMessage {
  readonly body: string;
  /** Its `ApproximateReceiveCount` on this receive. */
  readonly receiveCount: number;
}

/** A running proxy, returned by {@link startDropDeletesProxy}. */
export interface DropDeletesProxy {
  /** The SQS endpoint to give the component instead of the real one. */
  readonly endpoint: string;
  /** Deletes answered as successful and never passed on. */
  readonly dropped: number;
  stop(): Promise<void>;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const readBody = (stream: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });

/**
 * The crash between a commit and its delete, injected into a process of its own (the poller's child process, which
 * runs the real `bin/poller.ts` and takes no hook): an HTTP proxy in front of SQS (AWS JSON protocol) that forwards
 * every call unchanged, except the deletes of messages `shouldDrop` picked when they were received — those it answers
 * as successful without passing them on. SQS never hears of them, as if the process had died after its commit, so
 * they come back when their visibility timeout ends and are delivered again. The `Host` header is forwarded as is,
 * so queue URLs keep naming the endpoint behind.
 *
 * @internal
 */
export async function startDropDeletesProxy(options: {
  /** The SQS endpoint behind (the local IAM layer's, or fauxqs). */
  readonly upstream: string;
  /** Whether the delete of a message received so must be dropped. */
  shouldDrop(message: ReceivedMessage): boolean;
}): Promise<DropDeletesProxy> {
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });
  /** Receipt handles whose delete is dropped. */
  const doomed = new Set<string>();
  let dropped = 0;

  const forward = (request: IncomingMessage, body: Buffer): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const outgoing = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: request.method,
          path: request.url,
          headers: { ...request.headers, 'content-length': String(body.length) },
          agent,
        },
        (answer) => {
          readBody(answer).then(
            (answerBody) =>
              resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: answerBody }),
            reject,
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  /** The call, with the doomed deletes taken out (and answered), or unchanged. */
  async function handle(request: IncomingMessage, body: Buffer): Promise<Answer> {
    const target = String(request.headers['x-amz-target'] ?? '');
    if (target === 'AmazonSQS.DeleteMessageBatch') {
      const call = JSON.parse(body.toString('utf8')) as { Entries?: { Id: string; ReceiptHandle: string }[] };
      const entries = call.Entries ?? [];
      const kept = entries.filter((entry) => !doomed.has(entry.ReceiptHandle));
      const gone = entries.filter((entry) => doomed.has(entry.ReceiptHandle));
      if (gone.length === 0) return forward(request, body);
      dropped += gone.length;
      for (const entry of gone) doomed.delete(entry.ReceiptHandle);
      const answer =
        kept.length > 0
          ? await forward(request, Buffer.from(JSON.stringify({ ...call, Entries: kept })))
          : {
              status: 200,
              headers: { 'content-type': 'application/x-amz-json-1.0' },
              body: Buffer.from('{}'),
            };
      const result = JSON.parse(answer.body.toString('utf8') || '{}') as { Successful?: { Id: string }[] };
      const merged = {
        ...result,
        Successful: [...(result.Successful ?? []), ...gone.map(({ Id }) => ({ Id }))],
      };
      return { ...answer, body: Buffer.from(JSON.stringify(merged)) };
    }
    if (target === 'AmazonSQS.DeleteMessage') {
      const call = JSON.parse(body.toString('utf8')) as { ReceiptHandle?: string };
      if (call.ReceiptHandle && doomed.delete(call.ReceiptHandle)) {
        dropped += 1;
        return {
          status: 200,
          headers: { 'content-type': 'application/x-amz-json-1.0' },
          body: Buffer.from('{}'),
        };
      }
      return forward(request, body);
    }
    const answer = await forward(request, body);
    if (target === 'AmazonSQS.ReceiveMessage' && answer.status === 200) {
      const { Messages = [] } = JSON.parse(answer.body.toString('utf8') || '{}') as {
        Messages?: { ReceiptHandle: string; Body: string; Attributes?: Record<string, string> }[];
      };
      for (const message of Messages) {
        const receiveCount = Number(message.Attributes?.ApproximateReceiveCount ?? 0);
        if (options.shouldDrop({ body: message.Body, receiveCount })) doomed.add(message.ReceiptHandle);
      }
    }
    return answer;
  }

  const server = createServer((request, response) => {
    readBody(request)
      .then((body) => handle(request, body))
      .then(({ status, headers, body }) => {
        const { 'transfer-encoding': _chunked, ...rest } = headers;
        response.writeHead(status, { ...rest, 'content-length': String(body.length) });
        response.end(body);
      })
      .catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get dropped() {
      return dropped;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
