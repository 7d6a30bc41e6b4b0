import { createHash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { bigPaymentJson } from './big-payment.ts';
import type { DemoCheck } from './demo-scenario.ts';
import type { InvocationReport } from './event-source-mapping.ts';
import { exampleEnvelope } from './example-envelope.ts';
import type { FunctionSettings } from './function-host.ts';
import { type LocalQueues, queueCounts } from './local-queues.ts';
import type { PollerTaskExit, PollerTaskSettings } from './poller-process.ts';
import { putLargeObject } from './put-large-object.ts';
import { waitFor } from './wait-for.ts';

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
  /**
   * Uploads the object, sends the message to the queue and waits until it is applied (`applied`: its inbox row or
   * item COMPLETED, in the store's words) or in the DLQ, or `timeoutMs` passed.
   */
  run(options: {
    readonly sqs: SQSClient;
    readonly queues: LocalQueues;
    readonly timeoutMs: number;
    readonly applied: (idempotencyKey: string) => Promise<boolean>;
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
      const dlqCount = async () => {
        const counts = await queueCounts(run.sqs, run.queues.dlqUrl);
        return counts.visible + counts.inFlight;
      };
      const dlqBefore = await dlqCount();
      const answer = await run.sqs.send(
        new SendMessageCommand({
          QueueUrl: run.queues.queueUrl,
          MessageBody: JSON.stringify({ ...envelope, payloadRef }),
        }),
      );
      messageId = answer.MessageId;
      sent = true;
      let fate: BigPayloadFigures['fate'] = 'unsettled';
      await waitFor(async () => {
        if (await run.applied(idempotencyKey)) fate = 'completed';
        else if ((await dlqCount()) > dlqBefore) fate = 'dlq';
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

/**
 * The payload-memory case of a scenario run given `payloadBytes` (`--payload-mib`), S3 and a bucket, on either store,
 * and the variables it forces on the consumer: above the stack's `PAYLOAD_MAX_BYTES` for the component's memory (its
 * variables), that limit is forced up to `payloadBytes` (a setting `cdk synth` refuses for this memory).
 *
 * @internal
 */
export function payloadMemoryCaseOf(options: {
  readonly runId: string;
  readonly payloadBytes: number | undefined;
  readonly memoryOverridden: boolean | undefined;
  readonly s3: S3Client | undefined;
  readonly bucket: string | undefined;
  readonly worker: FunctionSettings | undefined;
  readonly poller: PollerTaskSettings | undefined;
}): { readonly bigCase: BigPayloadCase | undefined; readonly variables: Readonly<Record<string, string>> } {
  const { payloadBytes, s3, bucket } = options;
  if (!payloadBytes || !s3 || !bucket) return { bigCase: undefined, variables: {} };
  const stackLimitBytes = Number(
    (options.worker?.environment ?? options.poller?.environment)?.PAYLOAD_MAX_BYTES ?? 0,
  );
  const bigCase = bigPayloadCase({
    runId: options.runId,
    bytes: payloadBytes,
    stackLimitBytes,
    memoryMb: options.worker?.memorySizeMb ?? options.poller?.memoryMiB ?? 0,
    memoryOverridden: options.memoryOverridden,
    s3,
    bucket,
  });
  return {
    bigCase,
    variables: payloadBytes > stackLimitBytes ? { PAYLOAD_MAX_BYTES: String(payloadBytes) } : {},
  };
}

/**
 * The checks of the payload-memory case: at or below the stack's limit, applied and never killed for memory. A run of
 * a setting `cdk synth` refuses (`unsafe`) shows what becomes of it (the figures), it is not checked.
 *
 * @internal
 */
export function bigPayloadChecks(big: BigPayloadFigures | undefined): DemoCheck[] {
  if (!big || big.unsafe) return [];
  const ok = big.fate === 'completed' && big.outOfMemoryKills === 0;
  return [
    {
      name: "a payloadRef at the stack's limit is applied within the worker's memory",
      ok,
      detail: `${formatMiB(big.bytes)} (limit ${formatMiB(big.stackLimitBytes)}): ${big.fate}, peak ${big.peakMb ?? '?'} of ${big.memoryMb} MB${big.outOfMemoryKills ? `, ${big.outOfMemoryKills} killed for memory` : ''}`,
    },
  ];
}

/** `40 MiB`, `1.5 MiB`. @internal */
export const formatMiB = (bytes: number): string => `${Number((bytes / MIB).toFixed(1))} MiB`;
