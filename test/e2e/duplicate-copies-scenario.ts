import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { expect } from 'vitest';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';
import type { LocalQueueFixture } from './local-queue-fixture.ts';

/** A worker handler as the local event source mapping invokes it. */
type WorkerHandler = (event: SQSEvent, context: Context) => Promise<unknown>;

/**
 * The worker's telemetry sinks that print: a real Powertools Metrics (EMF on stdout, whatever
 * POWERTOOLS_METRICS_DISABLED the fixtures set) and an INFO logger, so the scenario's lines can be captured.
 */
export function printingTelemetry(): { logger: Logger; metrics: Metrics } {
  const disabled = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' });
  process.env.POWERTOOLS_METRICS_DISABLED = disabled;
  return { logger: new Logger({ serviceName: 'case-worker', logLevel: 'INFO' }), metrics };
}

/**
 * Injects both kinds of duplicate of one message through the local event source mapping, on any store's worker:
 * 1. a REDELIVERY: the first delivery commits, its delete is dropped (a crash between commit and delete), and the
 *    queue hands the same SQS message back after its visibility timeout;
 * 2. a RESEND: the same body sent again, a new SQS messageId with the same idempotency key.
 * Returns the EMF sums of the duplicate metrics, the ReceiveCount values, the receive counts the records' log lines
 * name, and the duplicates' log fields.
 */
export async function injectRedeliveryAndResend(input: {
  fixture: LocalQueueFixture;
  sqs: SQSClient;
  handler: WorkerHandler;
  body: string;
  /** The queue's visibility timeout: the redelivery's wait. @default 1 */
  visibilityTimeoutSeconds?: number;
  /** The DynamoDB store's table, bound to the queues' deployment (its role's grants name it). */
  tableName?: string;
}) {
  const { fixture, sqs, handler, body } = input;
  const { queueUrl } = await fixture.queues({
    visibilityTimeoutSeconds: input.visibilityTimeoutSeconds ?? 1,
    ...(input.tableName ? { tableName: input.tableName } : {}),
  });
  const running: EventSourceMapping[] = [];
  // Only the first delivery's delete is lost: the resend's own delete goes through.
  let dropped = false;
  const dropFirstDelete = () => {
    if (dropped) return false;
    dropped = true;
    return true;
  };
  const { lines, error } = await captureOutput(async () => {
    try {
      await fixture.send(queueUrl, [body]);
      const redelivery = await startEventSourceMapping({
        sqs,
        queueUrl,
        handler,
        hooks: { dropDeleteAfterSuccess: dropFirstDelete },
      });
      running.push(redelivery);
      await redelivery.drain();
      await fixture.send(queueUrl, [body]);
      await redelivery.drain();
    } finally {
      await Promise.all(running.map((esm) => esm.stop()));
    }
  });
  if (error) throw error;
  const receiveCounts = lines
    .filter((line) => '_aws' in line && 'ReceiveCount' in line)
    .flatMap((line) => [line.ReceiveCount].flat() as number[]);
  return {
    lines,
    redeliveries: emfSum(lines, 'DuplicateRedelivery'),
    resends: emfSum(lines, 'DuplicateResend'),
    duplicates: emfSum(lines, 'Duplicate'),
    receiveCounts: receiveCounts.sort((a, b) => a - b),
    recordReceiveCounts: lines
      .filter((line) => String(line.message).startsWith('worker_message_'))
      .map((line) => line.receiveCount as number)
      .sort((a, b) => a - b),
    duplicateLogs: lines
      .filter((line) => line.message === 'worker_message_duplicate')
      .map((line) => ({ duplicateCopy: line.duplicateCopy, receiveCount: line.receiveCount })),
  };
}

/**
 * Asserts what {@link injectRedeliveryAndResend} saw: two duplicates, one of each kind, in EMF and in the duplicates'
 * log lines, and one ReceiveCount value per record (its own). The redelivery has been received more than once (a slow
 * first run may make it 3); the resend once.
 */
export function expectRedeliveryThenResend(
  seen: Awaited<ReturnType<typeof injectRedeliveryAndResend>>,
): void {
  expect({ duplicates: seen.duplicates, redeliveries: seen.redeliveries, resends: seen.resends }).toEqual({
    duplicates: 2,
    redeliveries: 1,
    resends: 1,
  });
  expect(seen.duplicateLogs).toEqual([
    { duplicateCopy: 'REDELIVERY', receiveCount: expect.any(Number) },
    { duplicateCopy: 'RESEND', receiveCount: 1 },
  ]);
  expect(seen.duplicateLogs[0]?.receiveCount).toBeGreaterThanOrEqual(2);
  expect(seen.receiveCounts).toEqual(seen.recordReceiveCounts);
}
