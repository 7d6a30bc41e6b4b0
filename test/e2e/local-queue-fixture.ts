import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, afterEach } from 'vitest';
import type { IamRefusal } from '../../tools/local/iam/iam-authorizer.ts';
import { startIamProxy } from '../../tools/local/iam/iam-proxy.ts';
import { describeRefusal, type LocalIam, startLocalIam } from '../../tools/local/iam/local-iam.ts';
import { type LocalComponent, localCredentials } from '../../tools/local/iam/local-identities.ts';
import {
  createLocalQueues,
  type LocalQueues,
  type LocalQueuesOptions,
} from '../../tools/local/local-queues.ts';
import { s3ClientFor } from '../../tools/local/local-s3.ts';
import { type LocalSqs, startLocalSqs } from '../../tools/local/local-sqs.ts';
import { sqsClientFor } from '../../tools/local/sqs-client-for.ts';

/** One message to send with {@link LocalQueueFixture.send}. */
export interface OutgoingMessage {
  readonly body: string;
  readonly groupId?: string;
  readonly deduplicationId?: string;
  readonly attributes?: Record<string, MessageAttributeValue>;
}

/** Options of {@link localQueueFixture}. */
export interface LocalQueueFixtureOptions {
  /**
   * The local IAM layer in front of fauxqs (tools/local/iam/): each component's client signs as its role and is
   * refused what the synthesized stack does not grant it. `false` talks to fauxqs unchecked: pass it only where a
   * test must, with a one-line reason next to it. @default true
   */
  readonly iam?: boolean;
  /** Whose stack's roles apply: `dynamodb` takes the worker's from the `dev-dynamodb` stage. @default 'postgres' */
  readonly store?: 'postgres' | 'dynamodb';
}

/** Options of {@link LocalQueueFixture.queues}. */
export type FixtureQueuesOptions = Omit<LocalQueuesOptions, 'name'> & {
  /** A DynamoDB table the queues' deployment writes to (its grants are scoped to it). */
  readonly tableName?: string;
};

/** The SQS and S3 clients of one component, signed with its local key. */
export interface FixtureClients {
  readonly sqs: SQSClient;
  readonly s3: S3Client;
}

/**
 * fauxqs for one test file behind the local IAM layer, with helpers to create queues, send and read the DLQ.
 *
 * `sqs` and `s3` are the operator's (`admin`: the test's own setup and inspection, allowed everything);
 * {@link LocalQueueFixture.as} gives the clients a component runs with (the worker and the local event source
 * mapping, the poller, the relay). A call the component's role does not allow is refused as AWS refuses it, and
 * fails the test it happened in, naming the component, its role and the action (see docs/testing.md).
 */
export interface LocalQueueFixture {
  /** The operator's SQS client (queue setup, sending, inspection). */
  readonly sqs: SQSClient;
  /** The operator's S3 client (buckets, uploads). */
  readonly s3: S3Client;
  /** The endpoint every client uses: the IAM layer's in front of fauxqs (fauxqs's own with `iam: false`). */
  readonly endpoint: string;
  readonly region: string;
  /** The local IAM layer; undefined with `iam: false`. */
  readonly iam: LocalIam | undefined;
  /** The clients `component` runs with (created once, destroyed after the file). */
  as(component: LocalComponent): FixtureClients;
  /** Creates a fresh queue + DLQ with a unique name, bound to the IAM layer as the stack's queue and DLQ. */
  queues(options?: FixtureQueuesOptions): Promise<LocalQueues>;
  /** Binds a queue created another way (its own attributes) as the stack's source queue (and DLQ, when given). */
  bindQueue(queueUrl: string, deadLetterQueueUrl?: string): void;
  /** Creates a bucket (a unique name unless given), bound as the stack's payload bucket (with `tableName`, beside that table). */
  bucket(name?: string, options?: { readonly tableName?: string }): Promise<string>;
  /**
   * Puts the IAM layer in front of a DynamoDB endpoint (DynamoDB Local) too, and returns the endpoint to use;
   * {@link LocalQueueFixture.dynamodbAs} then gives a component's client on it.
   */
  frontDynamoDb(upstream: string): Promise<string>;
  /** A DynamoDB client of `component` on the endpoint {@link LocalQueueFixture.frontDynamoDb} returned. */
  dynamodbAs(component: LocalComponent): DynamoDBClient;
  /**
   * The refusals since the last call, taken: a test that expects one takes it, so the check after the test does
   * not fail it.
   */
  takeRefusals(): IamRefusal[];
  /** Sends messages with SendMessageBatch (10 per call), in order. */
  send(queueUrl: string, messages: readonly (string | OutgoingMessage)[]): Promise<void>;
  /** Receives every visible message of a queue (used for DLQs), leaving them in flight. */
  receiveAll(queueUrl: string): Promise<{ body: string; receiveCount: number; messageId: string }[]>;
  /**
   * When a message of the queue became visible again (epoch ms): at once when it waits to be received, its visibility
   * deadline once that passed while it is in flight; undefined while it is invisible (or gone). fauxqs moves an
   * expired message back only on a receive, so GetQueueAttributes alone still counts it in flight.
   */
  visibleSince(queueUrl: string, messageId: string): number | undefined;
  /** fauxqs's own view of a queue (by name): ready, delayed and in-flight messages with their deadlines. */
  inspectQueue(name: string): ReturnType<LocalSqs['inspectQueue']>;
}

const nameOf = (queueUrl: string) => queueUrl.split('/').at(-1) ?? '';

/** The refusals as one error naming each (component, role, action, resource), or undefined for none. */
function refusalError(refusals: readonly IamRefusal[], when: string): Error | undefined {
  if (refusals.length === 0) return undefined;
  return new Error(
    [
      `The local IAM layer refused ${refusals.length} call(s) ${when}: grant it in lib/ if the deployed code makes it, or fix the test's identity (fixture.as(component))`,
      ...refusals.map((refusal) => `  ${describeRefusal(refusal)}`),
    ].join('\n'),
  );
}

/**
 * Starts fauxqs for the calling test file behind the local IAM layer ({@link LocalQueueFixtureOptions.iam}), and
 * stops both after the file. After each test, a refusal the test did not take fails it.
 */
export async function localQueueFixture(options: LocalQueueFixtureOptions = {}): Promise<LocalQueueFixture> {
  const region = 'us-east-1';
  const local = await startLocalSqs({ region });
  const refusals: IamRefusal[] = [];
  const onRefusal = (refusal: IamRefusal) => {
    refusals.push(refusal);
  };
  // The stack's policies are synthesized once per run by the global setup; this reads them from its cache.
  const iam =
    options.iam === false
      ? undefined
      : await startLocalIam({
          store: options.store ?? 'postgres',
          region,
          sqsUpstream: local.endpoint,
          onRefusal,
        });
  const endpoint = iam?.sqsEndpoint ?? local.endpoint;
  const stops: (() => Promise<void>)[] = [];
  const clients = new Map<LocalComponent, FixtureClients>();
  const as = (component: LocalComponent): FixtureClients => {
    const existing = clients.get(component);
    if (existing) return existing;
    const made = {
      sqs: sqsClientFor(endpoint, region, component),
      s3: s3ClientFor(endpoint, region, component),
    };
    clients.set(component, made);
    return made;
  };
  let dynamodbEndpoint: string | undefined;
  const dynamodbClients = new Map<LocalComponent, DynamoDBClient>();
  const bind = iam ? iam.bind : () => {};
  const admin = as('admin');
  afterEach(() => {
    const error = refusalError(refusals.splice(0), 'during this test');
    if (error) throw error;
  });
  afterAll(async () => {
    for (const made of clients.values()) {
      made.sqs.destroy();
      made.s3.destroy();
    }
    for (const client of dynamodbClients.values()) client.destroy();
    for (const stop of stops) await stop();
    await iam?.stop();
    await local.stop();
    const error = refusalError(refusals.splice(0), 'after the last test of the file');
    if (error) throw error;
  });
  return {
    sqs: admin.sqs,
    s3: admin.s3,
    endpoint,
    region,
    iam,
    as,
    async queues(queueOptions = {}) {
      const { tableName, ...rest } = queueOptions;
      const queues = await createLocalQueues(admin.sqs, {
        visibilityTimeoutSeconds: 1,
        ...rest,
        name: `q-${randomBytes(4).toString('hex')}`,
      });
      bind({
        queueName: nameOf(queues.queueUrl),
        deadLetterQueueName: nameOf(queues.dlqUrl),
        ...(tableName ? { tableName } : {}),
      });
      return queues;
    },
    bindQueue(queueUrl, deadLetterQueueUrl) {
      const queueName = nameOf(queueUrl);
      bind({
        queueName,
        deadLetterQueueName: deadLetterQueueUrl ? nameOf(deadLetterQueueUrl) : `${queueName}-dlq`,
      });
    },
    async bucket(name = `b-${randomBytes(4).toString('hex')}`, options = {}) {
      await admin.s3.send(new CreateBucketCommand({ Bucket: name }));
      // A bucket of its own deployment: the queue names are the stack's, no local queue has them.
      bind({
        queueName: `${name}-queue`,
        deadLetterQueueName: `${name}-queue-dlq`,
        bucketName: name,
        ...(options.tableName ? { tableName: options.tableName } : {}),
      });
      return name;
    },
    async frontDynamoDb(upstream) {
      if (!iam) {
        dynamodbEndpoint = upstream;
        return upstream;
      }
      const proxy = await startIamProxy({ upstream, authorizer: iam.authorizer, region, onRefusal });
      stops.push(() => proxy.stop());
      dynamodbEndpoint = proxy.endpoint;
      return proxy.endpoint;
    },
    dynamodbAs(component) {
      if (!dynamodbEndpoint) {
        throw new Error('localQueueFixture: call frontDynamoDb(endpoint) before dynamodbAs(component)');
      }
      const existing = dynamodbClients.get(component);
      if (existing) return existing;
      const made = new DynamoDBClient({
        endpoint: dynamodbEndpoint,
        region,
        credentials: localCredentials(component),
      });
      dynamodbClients.set(component, made);
      return made;
    },
    takeRefusals: () => refusals.splice(0),
    async send(queueUrl, messages) {
      for (let start = 0; start < messages.length; start += 10) {
        const entries = messages.slice(start, start + 10).map((item, index) => {
          const message = typeof item === 'string' ? { body: item } : item;
          return {
            Id: String(index),
            MessageBody: message.body,
            ...(message.groupId ? { MessageGroupId: message.groupId } : {}),
            ...(message.deduplicationId ? { MessageDeduplicationId: message.deduplicationId } : {}),
            ...(message.attributes ? { MessageAttributes: message.attributes } : {}),
          };
        });
        const result = await admin.sqs.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
        );
        if (result.Failed?.length)
          throw new Error(`SendMessageBatch failed: ${JSON.stringify(result.Failed)}`);
      }
    },
    visibleSince(queueUrl, messageId) {
      const state = local.inspectQueue(nameOf(queueUrl))?.messages;
      if (state?.ready.some((message) => message.messageId === messageId)) return Date.now();
      const held = state?.inflight.find((entry) => entry.message.messageId === messageId);
      return held && held.visibilityDeadline <= Date.now() ? held.visibilityDeadline : undefined;
    },
    inspectQueue: (name) => local.inspectQueue(name),
    async receiveAll(queueUrl) {
      const received: { body: string; receiveCount: number; messageId: string }[] = [];
      for (;;) {
        const { Messages = [] } = await admin.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
            VisibilityTimeout: 60,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        if (Messages.length === 0) return received;
        for (const message of Messages) {
          received.push({
            body: message.Body ?? '',
            receiveCount: Number(message.Attributes?.ApproximateReceiveCount),
            messageId: message.MessageId ?? '',
          });
        }
      }
    },
  };
}
