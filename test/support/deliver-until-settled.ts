import { createHash, randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { BatchFailedError } from '../../lambda/errors.ts';
import type { HostileMessage } from './hostile-messages.ts';
import { lambdaContext, QUEUE_ARN } from './sqs-event.ts';

/** One message's deliveries in a {@link deliverUntilSettled} run. */
export interface MessageHistory {
  readonly message: HostileMessage;
  readonly messageId: string;
  /** Deliveries so far (its ApproximateReceiveCount at the last one). */
  deliveries: number;
  /** Acknowledged (deleted) at the last delivery, moved to the DLQ, or neither yet. */
  fate: 'deleted' | 'dlq' | 'pending';
}

/** What an invocation of a run was given and answered. */
export interface Invocation {
  readonly index: number;
  readonly messageIds: readonly string[];
  readonly failures: readonly string[];
  readonly elapsedMs: number;
}

/** Options of {@link deliverUntilSettled}. */
export interface DeliveryOptions {
  /** Records per invocation (the event source mapping's batch size). @default 10 */
  readonly batchSize?: number;
  /** Deliveries after which a reported message goes to the DLQ (RedrivePolicy maxReceiveCount). @default 5 */
  readonly maxReceiveCount?: number;
  /** The function's timeout: every invocation's context starts with this much time. */
  readonly timeoutMs: number;
  /** How long past its timeout an invocation may take before the run fails as hung. */
  readonly hangMarginMs: number;
  /** Called before and after each invocation (failure injection: stall the database for one invocation). */
  readonly around?: (index: number, run: () => Promise<SQSBatchResponse>) => Promise<SQSBatchResponse>;
}

/** An SQS record of a message at its `receiveCount`-th delivery, as Lambda gives it. */
function recordOf(history: MessageHistory, receiveCount: number): SQSRecord {
  const { message } = history;
  const now = Date.now();
  return {
    messageId: history.messageId,
    receiptHandle: `rh-${randomUUID()}`,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(now - 50),
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: String(now),
    },
    messageAttributes: message.messageAttributes as SQSRecord['messageAttributes'],
    md5OfBody: createHash('md5').update(message.body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: QUEUE_ARN,
    awsRegion: 'us-east-1',
  };
}

/**
 * Delivers `messages` to a Lambda `handler` the way a standard queue's event source mapping does for one warm
 * execution environment, until every message is deleted or in the DLQ: batches of `batchSize` in queue order, one
 * invocation at a time with a fresh context of `timeoutMs`, the records not in `batchItemFailures` deleted, the
 * others delivered again (receive count + 1) at the back of the queue, and moved to the DLQ once delivered
 * `maxReceiveCount` times. A reported message is delivered again at once: the run does not wait out backoffs
 * (they are the engine's visibility changes, tested elsewhere), so a run that goes on deferring spends its
 * receive counts in seconds, which is what the property is after.
 *
 * Rejects when the handler rejects (the engine must never throw for a record's content) or takes more than
 * `hangMarginMs` past its timeout.
 */
export async function deliverUntilSettled(
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  messages: readonly HostileMessage[],
  options: DeliveryOptions,
): Promise<{ histories: MessageHistory[]; invocations: Invocation[] }> {
  const batchSize = options.batchSize ?? 10;
  const maxReceiveCount = options.maxReceiveCount ?? 5;
  const histories: MessageHistory[] = messages.map((message) => ({
    message,
    messageId: randomUUID(),
    deliveries: 0,
    fate: 'pending',
  }));
  const queue = [...histories];
  const invocations: Invocation[] = [];
  while (queue.length > 0) {
    const batch = queue.splice(0, batchSize);
    for (const history of batch) history.deliveries += 1;
    const event: SQSEvent = { Records: batch.map((history) => recordOf(history, history.deliveries)) };
    const index = invocations.length;
    const started = Date.now();
    const invoke = () => withHangGuard(handler(event, lambdaContext(options.timeoutMs)), options, index);
    const failures = failuresOf(
      await settle(options.around ? options.around(index, invoke) : invoke()),
      event,
    );
    invocations.push({
      index,
      messageIds: batch.map((history) => history.messageId),
      failures,
      elapsedMs: Date.now() - started,
    });
    for (const history of batch) {
      if (!failures.includes(history.messageId)) history.fate = 'deleted';
      else if (history.deliveries >= maxReceiveCount) history.fate = 'dlq';
      else queue.push(history);
    }
  }
  return { histories, invocations };
}

/**
 * A function error fails the whole batch, as Lambda treats it: the worker fails its invocation on purpose when every
 * record failed (`BatchFailedError`, so the event source mapping backs off). Any other rejection is the engine
 * throwing, which it must never do: it fails the run.
 */
async function settle(invocation: Promise<SQSBatchResponse>): Promise<SQSBatchResponse | BatchFailedError> {
  try {
    return await invocation;
  } catch (error) {
    if (error instanceof BatchFailedError) return error;
    throw error;
  }
}

const failuresOf = (answer: SQSBatchResponse | BatchFailedError, event: SQSEvent): string[] =>
  answer instanceof BatchFailedError
    ? event.Records.map((record) => record.messageId)
    : answer.batchItemFailures.map((failure) => failure.itemIdentifier);

async function withHangGuard<T>(work: Promise<T>, options: DeliveryOptions, index: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = options.timeoutMs + options.hangMarginMs;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `invocation ${index} still running ${limit} ms after it started (timeout ${options.timeoutMs} ms): the engine hung`,
          ),
        ),
      limit,
    );
  });
  try {
    return await Promise.race([work, hung]);
  } finally {
    clearTimeout(timer);
  }
}
