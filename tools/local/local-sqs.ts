import type { SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { sqsClientFor } from './sqs-client-for.ts';

export { sqsClientFor } from './sqs-client-for.ts';

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
