import { SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';

/** A local SQS emulator started by {@link startLocalSqs}. */
export interface LocalSqs {
  /** HTTP endpoint to give an SQS client. */
  readonly endpoint: string;
  /** Region the emulator answers for. */
  readonly region: string;
  /** A real AWS SDK client pointed at the emulator. */
  client(): SQSClient;
  /** Non-destructive view of a queue's messages (ready, delayed, in flight with their visibility deadlines). */
  inspectQueue(name: string): ReturnType<FauxqsServer['inspectQueue']>;
  /** Stops the emulator. */
  stop(): Promise<void>;
}

/**
 * Creates an AWS SDK SQS client for an explicit endpoint (the local emulator, LocalStack, …).
 * `useQueueUrlAsEndpoint: false` keeps requests on `endpoint` even when a queue URL names another host; a TCP
 * connection that does not open within 5 s fails the request.
 */
export function sqsClientFor(endpoint: string, region = 'us-east-1'): SQSClient {
  return new SQSClient({
    endpoint,
    region,
    useQueueUrlAsEndpoint: false,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    // An endpoint where nothing answers the TCP handshake fails its request after 5 s instead of never. (No
    // request timeout: long polls wait up to 20 s for an answer.)
    requestHandler: { connectionTimeout: 5000 },
  });
}

/**
 * Starts the `fauxqs` SQS emulator in this process on a free loopback port.
 *
 * @example
 * ```ts
 * const sqs = await startLocalSqs();
 * const client = sqs.client();
 * ```
 */
export async function startLocalSqs(options: { region?: string } = {}): Promise<LocalSqs> {
  const region = options.region ?? 'us-east-1';
  const server = await startFauxqs({ port: 0, logger: false, host: '127.0.0.1', defaultRegion: region });
  const endpoint = `http://127.0.0.1:${server.port}`;
  const clients: SQSClient[] = [];
  return {
    endpoint,
    region,
    client() {
      const client = sqsClientFor(endpoint, region);
      clients.push(client);
      return client;
    },
    inspectQueue: (name) => server.inspectQueue(name),
    async stop() {
      for (const client of clients) client.destroy();
      await server.stop();
    },
  };
}
