import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { expect } from 'vitest';
import { z } from 'zod';
import { RetryableError } from '../../lambda/errors.ts';
import { parseRetryAfter } from '../../lambda/retry-after.ts';
import { parseRetryPolicy } from '../../lambda/retry-policy-setting.ts';
import {
  createWorker,
  type WorkerHandler,
  type WorkerOptions,
} from '../../lambda/runtimes/lambda/create-worker.ts';
import type { DynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { captureOutput } from '../support/capture-output.ts';
import { envelopeFactory, lambdaContext, receivedRecord, sqsEvent } from '../support/sqs-event.ts';
import type { LocalQueueFixture } from './local-queue-fixture.ts';

/** The message type of the scenario's handler: it calls a partner that fails with `payload.code`. */
export const PARTNER_CALL = 'PartnerCallRequested';

/** The policy of the scenario, in its text form (`WORKER_RETRY_POLICY`), read as the worker reads it. */
export const SCENARIO_POLICY = parseRetryPolicy(
  'PARTNER_DOWN=3:3,PARTNER_RATE_LIMITED=1:6',
  'WORKER_RETRY_POLICY',
  {
    codes: ['PARTNER_DOWN', 'PARTNER_RATE_LIMITED'],
    setting: 'WORKER_HANDLER_FAILURE_CODES',
  },
).policy;

/**
 * The real engine of the scenario on a store (`sql` or a DynamoDB `store`): its retry policy, a default curve of 1 s,
 * the top of every jitter range, the worker's SQS role, WARN logs (the retryable lines), each outcome kept.
 */
export function scenarioWorker(
  fixture: LocalQueueFixture,
  storage: Pick<WorkerOptions, 'handlers'> & ({ sql: postgres.Sql } | { store: DynamoStore }),
): (outcomes: RecordOutcome[]) => WorkerHandler {
  return (outcomes) =>
    createWorker({
      consumer: 'case-worker',
      ...storage,
      sqs: fixture.as('worker').sqs,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'WARN' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onOutcome: (outcome) => outcomes.push(outcome),
      retryPolicy: SCENARIO_POLICY,
      backoff: { baseSeconds: 1, maxSeconds: 1 },
      random: () => 0.999999,
      failInvocationOnFullBatchFailure: false,
    });
}

/**
 * The scenario's handler, for `defineHandler` or `defineDynamoHandler`: throws its payload's code, retryable, asking
 * for its `Retry-After` (read with `parseRetryAfter`) when the payload carries one.
 */
export const partnerCallHandler = {
  messageType: PARTNER_CALL,
  schemaVersion: 1,
  payload: z.object({ code: z.string(), retryAfter: z.string().optional(), note: z.string() }),
  async handle({ payload }: { payload: { code: string; retryAfter?: string | undefined } }): Promise<never> {
    throw new RetryableError(payload.code, 'the partner API refused the call', {
      retryAfterSeconds: parseRetryAfter(payload.retryAfter, Date.now()),
    });
  },
};

/** One failing delivery of a message through the real engine, and what SQS and the log line say of it. */
export interface FailedDelivery {
  readonly idempotencyKey: string;
  readonly response: unknown;
  readonly messageId: string;
  /** Milliseconds until fauxqs makes the message visible again, read right after the invocation. */
  readonly visibleInMs: number;
  /** A receive right after the invocation (undefined: the message stayed invisible). */
  readonly receivedAtOnce: Message | undefined;
  /** The next delivery (a long poll), and the milliseconds it took to come. */
  readonly next: Message | undefined;
  readonly nextAfterMs: number;
  /** The record's log line (`worker_message_retryable_failure`), and the whole output of the invocation. */
  readonly logLine: Record<string, unknown> | undefined;
  readonly rawOutput: string;
  readonly outcome: RecordOutcome | undefined;
}

/**
 * Sends one message whose handler fails with `code` (asking `retryAfter`, when given) to a fresh queue, delivers it
 * once to `worker` as the event source mapping would, and reads its visibility from the emulator, a receive at once,
 * and the next delivery.
 */
export async function failOnce(
  fixture: LocalQueueFixture,
  worker: (outcomes: RecordOutcome[]) => WorkerHandler,
  payload: { code: string; retryAfter?: string },
): Promise<FailedDelivery> {
  const client = fixture.sqs;
  const name = `retry-policy-${randomUUID().slice(0, 8)}`;
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30' } }),
  );
  const url = QueueUrl as string;
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  fixture.bindQueue(url);
  const idempotencyKey = `partner:${randomUUID()}`;
  // `note` stands for the payload's data: it must appear in no log line.
  const envelope = envelopeFactory({
    messageType: PARTNER_CALL,
    idempotencyKey,
    payload: { ...payload, note: 'Retry-After-Marker' },
  });
  await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify(envelope) }));
  const receive = async (waitSeconds: number) =>
    (
      await client.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          WaitTimeSeconds: waitSeconds,
          MessageSystemAttributeNames: ['All'],
          MaxNumberOfMessages: 1,
        }),
      )
    ).Messages?.[0];
  const first = (await receive(5)) as Message;
  const outcomes: RecordOutcome[] = [];
  const handler = worker(outcomes);
  const run = await captureOutput(() =>
    handler(sqsEvent([receivedRecord(first, Attributes?.QueueArn as string)]), lambdaContext()),
  );
  const inflight = fixture
    .inspectQueue(name)
    ?.messages.inflight.find((entry) => entry.message.messageId === first.MessageId);
  const visibleInMs = (inflight?.visibilityDeadline ?? 0) - Date.now();
  const receivedAtOnce = await receive(0);
  const waitFrom = Date.now();
  const next = await receive(10);
  return {
    idempotencyKey,
    response: run.result,
    messageId: first.MessageId as string,
    visibleInMs,
    receivedAtOnce,
    next,
    nextAfterMs: Date.now() - waitFrom,
    logLine: run.lines.find((line) => line.message === 'worker_message_retryable_failure'),
    rawOutput: run.raw,
    outcome: outcomes[0],
  };
}

/**
 * Checks a failed delivery: reported, invisible for `seconds` (the ChangeMessageVisibility the worker sent), delivered
 * again only after them, and logged with the delay and its source, without the payload.
 */
export function expectDelay(
  delivery: FailedDelivery,
  seconds: number,
  source: 'policy' | 'handler' | 'default',
): void {
  expect(delivery.response).toEqual({ batchItemFailures: [{ itemIdentifier: delivery.messageId }] });
  expect(delivery.visibleInMs).toBeGreaterThan(seconds * 1000 - 1000);
  expect(delivery.visibleInMs).toBeLessThanOrEqual(seconds * 1000);
  expect(delivery.receivedAtOnce).toBeUndefined();
  expect(delivery.next?.MessageId).toBe(delivery.messageId);
  expect(delivery.next?.Attributes?.ApproximateReceiveCount).toBe('2');
  expect(delivery.nextAfterMs).toBeGreaterThan(seconds * 1000 - 1500);
  expect(delivery.outcome).toMatchObject({ visibilitySeconds: seconds, visibilitySource: source });
  expect(delivery.logLine).toMatchObject({
    idempotencyKey: delivery.idempotencyKey,
    visibilitySeconds: seconds,
    visibilitySource: source,
  });
  expect(delivery.rawOutput).not.toContain('Retry-After-Marker');
}
