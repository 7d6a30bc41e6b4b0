import { createHash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { bigPaymentJson } from './big-payment.ts';
import type { InvocationReport } from './event-source-mapping.ts';
import { exampleEnvelope } from './example-envelope.ts';
import type { PollerTaskExit } from './poller-process.ts';
import { putLargeObject } from './put-large-object.ts';

const MIB = 1024 * 1024;

/** What became of the big payload. */
export interface BigPayloadFigures {
  readonly bytes: number;
  /** The worker's `PAYLOAD_MAX_BYTES` as the stack derives it for its memory. */
  readonly stackLimitBytes: number;
  /**
   * Why this run is one `cdk synth` would refuse, if it is: `PAYLOAD_MAX_BYTES` forced up to `bytes` (above the
   * stack's limit), or the memory lowered below the stage's (the stage's limit no longer fits it).
   */
  readonly unsafe?: string;
  /** The memory of the function (MB) or of the task (MiB). */
  readonly memoryMb: number;
  /** Applied (its inbox row COMPLETED), moved to the DLQ, or neither within the time given. */
  readonly fate: 'completed' | 'dlq' | 'unsettled';
  /** Deliveries (invocations or poller tasks) that were killed for memory while holding it. */
  readonly outOfMemoryKills: number;
  /** The highest peak of an invocation or a task that held it, MB (the memory size when it was killed). */
  readonly peakMb: number | undefined;
}

/** The big-payload case of a scenario: built first, sent after the rest drained, watched until it settles. */
export interface BigPayloadCase {
  readonly idempotencyKey: string;
  /** Feed every invocation report of the mapping here. */
  onInvocation(report: InvocationReport): void;
  /** Feed every poller task exit here. */
  onTaskExit(exit: PollerTaskExit): void;
  /** Uploads the object, sends the message and waits until it is applied or in the DLQ (or `timeoutMs` passed). */
  run(options: {
    readonly sqs: SQSClient;
    readonly queueUrl: string;
    readonly side: postgres.Sql;
    readonly consumer: string;
    readonly timeoutMs: number;
    readonly waitFor: (predicate: () => Promise<boolean>, timeoutMs: number) => Promise<boolean>;
    /** Messages in the DLQ (visible and in flight). */
    readonly dlqCount: () => Promise<number>;
  }): Promise<BigPayloadFigures>;
}

/**
 * The payload-memory case of `npm start -- --payload-mib N`: one `PaymentCaptured` whose payload, `bytes` of JSON
 * line items ({@link bigPaymentJson}), goes by reference (`payloadRef` to S3). Sent alone once the scenario drained,
 * so its batch holds only it. At or below the stack's limit it is applied within the worker's memory (the peak is
 * reported); above it, `PAYLOAD_MAX_BYTES` is forced up (a setting `cdk synth` refuses for this memory) and the worker
 * runs out of memory on it: each delivery killed, until SQS moves it to the DLQ. Its ids start with `big-`, outside
 * the scenario's, so the scenario's checks do not count it.
 */
export function bigPayloadCase(options: {
  readonly runId: string;
  readonly bytes: number;
  readonly stackLimitBytes: number;
  readonly memoryMb: number;
  /** The memory is not the stage's (`npm start -- --memory-mb`). */
  readonly memoryOverridden?: boolean;
  readonly s3: S3Client;
  readonly bucket: string;
}): BigPayloadCase {
  const paymentId = `big-${options.runId}`;
  const idempotencyKey = `big-${options.runId}:payment`;
  let messageId: string | undefined;
  let sent = false;
  let kills = 0;
  let peakMb: number | undefined;
  const peak = (mb: number) => {
    peakMb = Math.max(peakMb ?? 0, mb);
  };
  return {
    idempotencyKey,
    onInvocation(report) {
      if (!messageId || !report.messageIds.includes(messageId)) return;
      if (report.reason === 'out-of-memory') kills += 1;
      if (report.function) peak(report.function.maxMemoryUsedMb);
    },
    onTaskExit(exit) {
      // A task killed while the big message was in flight: the only message in flight by then.
      if (!sent) return;
      if (exit.outOfMemory) kills += 1;
      peak(exit.peakMiB);
    },
    async run(run) {
      const body = bigPaymentJson(paymentId, options.bytes);
      const key = `${options.runId}/big-payment.json`;
      await putLargeObject(options.s3, options.bucket, key, body);
      const payloadRef: PayloadRef = {
        bucket: options.bucket,
        key,
        sha256: createHash('sha256').update(body).digest('hex'),
        size: body.length,
      };
      const { payload: _inline, ...envelope } = exampleEnvelope({
        messageType: 'PaymentCaptured',
        idempotencyKey,
        aggregateType: 'Payment',
        aggregateId: paymentId,
        payload: {},
      });
      const dlqBefore = await run.dlqCount();
      const answer = await run.sqs.send(
        new SendMessageCommand({
          QueueUrl: run.queueUrl,
          MessageBody: JSON.stringify({ ...envelope, payloadRef }),
        }),
      );
      messageId = answer.MessageId;
      sent = true;
      let fate: BigPayloadFigures['fate'] = 'unsettled';
      await run.waitFor(async () => {
        const [row] = await run.side<{ status: string }[]>`
          select status from worker_inbox where consumer = ${run.consumer} and idempotency_key = ${idempotencyKey}
        `;
        if (row?.status === 'COMPLETED') fate = 'completed';
        else if ((await run.dlqCount()) > dlqBefore) fate = 'dlq';
        return fate !== 'unsettled';
      }, run.timeoutMs);
      return {
        bytes: options.bytes,
        stackLimitBytes: options.stackLimitBytes,
        ...(options.bytes > options.stackLimitBytes
          ? { unsafe: `PAYLOAD_MAX_BYTES forced up to ${formatMiB(options.bytes)}` }
          : options.memoryOverridden
            ? { unsafe: `memory lowered to ${options.memoryMb} MB` }
            : {}),
        memoryMb: options.memoryMb,
        fate,
        outOfMemoryKills: kills,
        peakMb,
      };
    },
  };
}

/** `40 MiB`, `1.5 MiB`. @internal */
export const formatMiB = (bytes: number): string => `${Number((bytes / MIB).toFixed(1))} MiB`;
