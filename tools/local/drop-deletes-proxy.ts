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
  const proxy: ProxyState = {
    upstream: new URL(options.upstream),
    agent: new Agent({ keepAlive: true }),
    shouldDrop: options.shouldDrop,
    doomed: new Set<string>(),
    dropped: 0,
  };
  const server = createServer((request, response) => {
    readBody(request)
      .then((body) => handle(proxy, request, body))
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
      return proxy.dropped;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.agent.destroy();
    },
  };
}

/** What the steps of one proxy share: the endpoint behind, its connections, and the deletes it drops. */
interface ProxyState {
  readonly upstream: URL;
  readonly agent: Agent;
  readonly shouldDrop: (message: ReceivedMessage) => boolean;
  /** Receipt handles whose delete is dropped. */
  readonly doomed: Set<string>;
  dropped: number;
}

/** SQS's answer to a call it never heard of: success, with an empty body. */
const emptySuccess = (): Answer => ({
  status: 200,
  headers: { 'content-type': 'application/x-amz-json-1.0' },
  body: Buffer.from('{}'),
});

/** The call, with the doomed deletes taken out (and answered), or unchanged. */
async function handle(proxy: ProxyState, request: IncomingMessage, body: Buffer): Promise<Answer> {
  const target = String(request.headers['x-amz-target'] ?? '');
  if (target === 'AmazonSQS.DeleteMessageBatch') return deleteBatch(proxy, request, body);
  if (target === 'AmazonSQS.DeleteMessage') {
    const call = JSON.parse(body.toString('utf8')) as { ReceiptHandle?: string };
    if (call.ReceiptHandle && proxy.doomed.delete(call.ReceiptHandle)) {
      proxy.dropped += 1;
      return emptySuccess();
    }
    return forward(proxy, request, body);
  }
  const answer = await forward(proxy, request, body);
  if (target === 'AmazonSQS.ReceiveMessage' && answer.status === 200) noteReceived(proxy, answer);
  return answer;
}

/** A DeleteMessageBatch: the doomed entries answered as successful, the others passed on. */
async function deleteBatch(proxy: ProxyState, request: IncomingMessage, body: Buffer): Promise<Answer> {
  const call = JSON.parse(body.toString('utf8')) as { Entries?: { Id: string; ReceiptHandle: string }[] };
  const entries = call.Entries ?? [];
  const kept = entries.filter((entry) => !proxy.doomed.has(entry.ReceiptHandle));
  const gone = entries.filter((entry) => proxy.doomed.has(entry.ReceiptHandle));
  if (gone.length === 0) return forward(proxy, request, body);
  proxy.dropped += gone.length;
  for (const entry of gone) proxy.doomed.delete(entry.ReceiptHandle);
  const answer =
    kept.length > 0
      ? await forward(proxy, request, Buffer.from(JSON.stringify({ ...call, Entries: kept })))
      : emptySuccess();
  const result = JSON.parse(answer.body.toString('utf8') || '{}') as { Successful?: { Id: string }[] };
  const merged = {
    ...result,
    Successful: [...(result.Successful ?? []), ...gone.map(({ Id }) => ({ Id }))],
  };
  return { ...answer, body: Buffer.from(JSON.stringify(merged)) };
}

/** Dooms the deletes of the messages of a ReceiveMessage answer that `shouldDrop` picks. */
function noteReceived(proxy: ProxyState, answer: Answer): void {
  const { Messages = [] } = JSON.parse(answer.body.toString('utf8') || '{}') as {
    Messages?: { ReceiptHandle: string; Body: string; Attributes?: Record<string, string> }[];
  };
  for (const message of Messages) {
    const receiveCount = Number(message.Attributes?.ApproximateReceiveCount ?? 0);
    if (proxy.shouldDrop({ body: message.Body, receiveCount })) proxy.doomed.add(message.ReceiptHandle);
  }
}

/** Passes a call on to the endpoint behind and reads its answer whole. */
function forward(proxy: ProxyState, request: IncomingMessage, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: proxy.upstream.hostname,
        port: proxy.upstream.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, 'content-length': String(body.length) },
        agent: proxy.agent,
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
}
