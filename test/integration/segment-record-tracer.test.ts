import xray from 'aws-xray-sdk-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSegmentRecordTracer } from '../../lambda/tracing/segment-record-tracer.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { type FakeXRayDaemon, startFakeXRayDaemon } from '../support/fake-xray-daemon.ts';
import { sqsRecordFactory } from '../support/sqs-event.ts';
import { waitFor } from '../support/wait-for.ts';

// The poller's record tracer against a stand-in for the X-Ray daemon: what the SDK sends over UDP when a record's
// segment closes, read back as the daemon reads it.

const ROOT = '1-5759e988-bd862e3fe1be46a994272793';
let daemon: FakeXRayDaemon;
beforeAll(async () => {
  daemon = await startFakeXRayDaemon();
  xray.setDaemonAddress(daemon.address);
});
afterAll(() => daemon.close());

const outcome = (overrides: Partial<RecordOutcome>): RecordOutcome => ({
  messageId: 'm-1',
  result: 'COMPLETED',
  acknowledged: true,
  receiveCount: 1,
  processingMs: 3,
  dbTransactionMs: 2,
  messageAgeMs: 10,
  ...overrides,
});

/** The segment the daemon received for `messageId`. */
const segmentOf = (messageId: string) =>
  daemon.segments.find((segment) => segment.annotations?.messageId === messageId);

describe('Function: createSegmentRecordTracer()', () => {
  it('sends each record a segment of its own when it closes, annotated with the record, its outcome and its producer trace', async () => {
    // Prepare
    const tracer = createSegmentRecordTracer(xray, 'case-worker', () => true);
    const record = sqsRecordFactory('{}');

    // Act
    const span = tracer.open(record, { traceId: ROOT, parentId: '53995c3f42cd8ad8', sampled: true });
    const sentBeforeClose = daemon.segments.length;
    span?.close(outcome({ messageId: record.messageId, messageType: 'PaymentCaptured' }));
    await waitFor('the segment at the daemon', () => segmentOf(record.messageId) !== undefined, 5_000);

    // Assess: nothing is sent while it runs; then one closed segment of a trace of its own.
    expect(sentBeforeClose).toBe(0);
    const segment = segmentOf(record.messageId);
    expect(segment).toMatchObject({
      name: 'case-worker',
      end_time: expect.any(Number),
      annotations: {
        messageId: record.messageId,
        producerTraceId: ROOT,
        result: 'COMPLETED',
        messageType: 'PaymentCaptured',
      },
      metadata: {
        'case-worker': { producerTrace: { traceId: ROOT, parentId: '53995c3f42cd8ad8', sampled: true } },
      },
    });
    expect(segment?.trace_id).toMatch(/^1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    expect(segment?.trace_id).not.toBe(ROOT);
    expect(segment).not.toHaveProperty('fault');
    expect(segment).not.toHaveProperty('error');
  });

  it('flags a terminal outcome as an error and a retryable one as a fault, with its failure code; no link without a producer trace', async () => {
    // Prepare
    const tracer = createSegmentRecordTracer(xray, 'case-worker', () => true);
    const terminal = sqsRecordFactory('{}');
    const retryable = sqsRecordFactory('{}');

    // Act
    tracer
      .open(terminal, undefined)
      ?.close(
        outcome({ messageId: terminal.messageId, result: 'TERMINAL_FAILURE', failureCode: 'CASE_NOT_FOUND' }),
      );
    tracer
      .open(retryable, undefined)
      ?.close(
        outcome({ messageId: retryable.messageId, result: 'RETRYABLE_FAILURE', failureCode: 'THROTTLED' }),
      );
    await waitFor(
      'both segments at the daemon',
      () => segmentOf(terminal.messageId) !== undefined && segmentOf(retryable.messageId) !== undefined,
      5_000,
    );

    // Assess
    expect(segmentOf(terminal.messageId)).toMatchObject({
      error: true,
      annotations: { result: 'TERMINAL_FAILURE' },
      metadata: { 'case-worker': { failureCode: 'CASE_NOT_FOUND' } },
    });
    expect(segmentOf(retryable.messageId)).toMatchObject({
      fault: true,
      metadata: { 'case-worker': { failureCode: 'THROTTLED' } },
    });
    expect(segmentOf(terminal.messageId)?.annotations).not.toHaveProperty('producerTraceId');
  });

  it('opens nothing and sends nothing for a record the sampler leaves out', async () => {
    // Prepare: one left out, then one sampled (the daemon's arrival order is the sending order on loopback)
    const decisions = [false, true];
    const tracer = createSegmentRecordTracer(xray, 'case-worker', () => decisions.shift() ?? false);
    const skipped = sqsRecordFactory('{}');
    const sampled = sqsRecordFactory('{}');

    // Act
    const span = tracer.open(skipped, undefined);
    tracer.open(sampled, undefined)?.close(outcome({ messageId: sampled.messageId }));
    await waitFor(
      'the sampled segment at the daemon',
      () => segmentOf(sampled.messageId) !== undefined,
      5_000,
    );

    // Assess
    expect(span).toBeUndefined();
    expect(segmentOf(skipped.messageId)).toBeUndefined();
  });
});
