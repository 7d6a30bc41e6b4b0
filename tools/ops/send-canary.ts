import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  CANARY_MESSAGE_TYPE,
  CANARY_SCHEMA_VERSION,
  type CanaryMode,
  canaryKey,
} from '../../lambda/canary/canary-message.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { SqsSender } from './collaborators.ts';
import { OperationError } from './errors.ts';

/** A canary of one smoke run: its key and the body sent (the same body for a duplicate). */
export interface Canary {
  readonly mode: CanaryMode;
  readonly key: string;
  readonly body: string;
}

/**
 * The canary envelope of `mode` for a smoke run: message type `SqsInboxWorkerCanary`, key `canary:<runId>:<mode>`,
 * aggregate `SqsInboxWorkerCanary`/`<runId>`, correlation id `smoke-<runId>` (to find its log lines). The
 * never-recovering one carries `attemptPolicy.maxBusinessAttempts` 1000, so the attempt policy never turns it
 * terminal before SQS moves it to the DLQ.
 *
 * @internal
 */
export function canary(runId: string, mode: CanaryMode, now: Date): Canary {
  const envelope: Envelope = {
    messageId: `msg_${randomUUID()}`,
    schemaVersion: CANARY_SCHEMA_VERSION,
    messageType: CANARY_MESSAGE_TYPE,
    producer: 'sqs-worker smoke',
    occurredAt: now.toISOString(),
    idempotencyKey: canaryKey(runId, mode),
    aggregateType: CANARY_MESSAGE_TYPE,
    aggregateId: runId,
    correlationId: `smoke-${runId}`,
    ...(mode === 'retry' ? { attemptPolicy: { maxBusinessAttempts: 1000 } } : {}),
    payload: { runId, mode },
  };
  return { mode, key: envelope.idempotencyKey, body: JSON.stringify(envelope) };
}

let sent = 0;

/**
 * Sends a canary's body to the source queue and returns the SQS message id. On a FIFO queue each canary is its own
 * message group, and every send its own deduplication id (SQS would drop a duplicate with the same id silently).
 *
 * @throws OperationError naming the queue when SQS refuses.
 * @internal
 */
export async function sendCanary(
  sqs: SqsSender,
  queueUrl: string,
  fifo: boolean,
  message: Canary,
): Promise<string> {
  sent += 1;
  try {
    const response = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: message.body,
        ...(fifo
          ? { MessageGroupId: message.key, MessageDeduplicationId: `${message.key}:${Date.now()}:${sent}` }
          : {}),
      }),
    );
    return response.MessageId ?? '';
  } catch (error) {
    throw new OperationError(
      `SendMessage to ${queueUrl} failed: ${(error as Error).name}: ${(error as Error).message}. Check the queue URL, the region and your credentials (sqs:SendMessage).`,
      { cause: error },
    );
  }
}
