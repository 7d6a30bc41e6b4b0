import { Tracer } from '@aws-lambda-powertools/tracer';
import xray from 'aws-xray-sdk-core';
import { describe, expect, it } from 'vitest';
import { createRecordTracer, RECORD_SUBSEGMENT_NAME } from '../../lambda/tracing/record-tracer.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { sqsRecordFactory } from '../support/sqs-event.ts';

const ROOT = '1-5759e988-bd862e3fe1be46a994272793';

/** A Tracer as it is in Lambda (outside Lambda it disables itself). */
function lambdaTracer(enabled = true): Tracer {
  const saved = process.env.AWS_EXECUTION_ENV;
  process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs24.x';
  try {
    return new Tracer({ serviceName: 'case-worker', enabled, captureHTTPsRequests: false });
  } finally {
    if (saved === undefined) delete process.env.AWS_EXECUTION_ENV;
    else process.env.AWS_EXECUTION_ENV = saved;
  }
}

/** Runs `fn` with `segment` as the active segment of the Tracer's context, as Lambda runs a handler. */
function inSegment<T>(tracer: Tracer, segment: xray.Segment, fn: () => T): T {
  return xray.getNamespace().runAndReturn(() => {
    tracer.setSegment(segment);
    return fn();
  });
}

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

describe('Function: createRecordTracer()', () => {
  it('opens a subsegment of the active segment, annotated with the record and its producer trace', () => {
    // Prepare
    const tracer = lambdaTracer();
    const segment = new xray.Segment('case-worker');
    const record = sqsRecordFactory('{}');

    // Act
    inSegment(tracer, segment, () => {
      const span = createRecordTracer(tracer, 'case-worker').open(record, {
        traceId: ROOT,
        parentId: '53995c3f42cd8ad8',
        sampled: true,
      });
      span?.close(outcome({ messageId: record.messageId, messageType: 'PaymentCaptured' }));
    });

    // Assess
    expect(segment.subsegments?.map((s) => s.toJSON())).toEqual([
      expect.objectContaining({
        name: RECORD_SUBSEGMENT_NAME,
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
      }),
    ]);
    expect(segment.subsegments?.[0]?.toJSON()).not.toHaveProperty('fault');
  });

  it('flags a terminal outcome as an error and leaves out the link of a record without trace', () => {
    // Prepare
    const tracer = lambdaTracer();
    const segment = new xray.Segment('case-worker');

    // Act
    inSegment(tracer, segment, () => {
      createRecordTracer(tracer, 'case-worker')
        .open(sqsRecordFactory('{}'), undefined)
        ?.close(outcome({ result: 'TERMINAL_FAILURE', failureCode: 'INVALID_JSON', acknowledged: true }));
    });

    // Assess
    const [subsegment] = segment.subsegments?.map((s) => s.toJSON()) ?? [];
    expect(subsegment).toMatchObject({ error: true, annotations: { result: 'TERMINAL_FAILURE' } });
    expect(subsegment?.annotations).not.toHaveProperty('producerTraceId');
    expect(subsegment?.metadata).toEqual({ 'case-worker': { failureCode: 'INVALID_JSON' } });
  });

  it('opens nothing when the Tracer is disabled', () => {
    // Prepare
    const tracer = lambdaTracer(false);
    const segment = new xray.Segment('case-worker');

    // Act
    const span = inSegment(tracer, segment, () =>
      createRecordTracer(tracer, 'case-worker').open(sqsRecordFactory('{}'), undefined),
    );

    // Assess
    expect(span).toBeUndefined();
    expect(segment.subsegments ?? []).toEqual([]);
  });
});
