import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { SQSRecord } from 'aws-lambda';
import xray from 'aws-xray-sdk-core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { createRecordTracer, RECORD_SUBSEGMENT_NAME } from '../../lambda/tracing/record-tracer.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { alwaysRetryable, slowLedgerWrite } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** A new X-Ray trace id, and its AWSTraceHeader. */
function newTrace() {
  const hex = randomUUID().replaceAll('-', '');
  const traceId = `1-${hex.slice(0, 8)}-${hex.slice(8, 32)}`;
  return { traceId, header: `Root=${traceId};Parent=${hex.slice(0, 16)};Sampled=1` };
}

/** The same trace as a W3C traceparent message attribute. */
function traceparentAttribute(traceId: string): SQSRecord['messageAttributes'] {
  const hex = traceId.slice(2).replace('-', '');
  return {
    traceparent: {
      dataType: 'String',
      stringValue: `00-${hex}-53995c3f42cd8ad8-01`,
      stringListValues: [],
      binaryListValues: [],
    },
  };
}

/** A record of `envelope` with an AWSTraceHeader system attribute. */
function tracedRecord(envelope: object, header: string | undefined): SQSRecord {
  const record = sqsRecordFactory(envelope);
  if (header !== undefined) record.attributes.AWSTraceHeader = header;
  return record;
}

/** `TraceBarrier`: a handler that returns only once `count` of its messages are being handled at the same time. */
function barrierHandler(count: number) {
  let arrived = 0;
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return defineHandler({
    messageType: 'TraceBarrier',
    schemaVersion: 1,
    payload: z.object({}),
    async handle({ sql }) {
      arrived += 1;
      if (arrived === count) open();
      await opened;
      await sql`select 1`;
      return { resultRef: 'barrier' };
    },
  });
}

/** A slow message (the handler sleeps in the database) so records of one batch overlap. */
function slowEnvelope(sleepMs = 150) {
  const paymentId = `PAY-${randomUUID()}`;
  return envelopeFactory({
    messageType: 'SlowLedgerWrite',
    idempotencyKey: `slow:${paymentId}`,
    payload: { paymentId, sleepMs },
  });
}

function telemetry() {
  return {
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'INFO' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  };
}

const inboxTrace = async (key: string) => {
  const [row] = await db.sql<{ trace_id: string | null; status: string }[]>`
    select trace_id, status from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}
  `;
  return row;
};

describe('Worker: the producer trace id on the record', () => {
  it('puts each record’s own trace id on its log line and inbox row with recordConcurrency 4', async () => {
    // Prepare: four records whose handlers all wait until the four are running, each of its own trace (one carries
    // it as a traceparent only)
    const traces = [newTrace(), newTrace(), newTrace(), newTrace()];
    const envelopes = traces.map(() =>
      envelopeFactory({
        messageType: 'TraceBarrier',
        idempotencyKey: `barrier:${randomUUID()}`,
        payload: {},
      }),
    );
    const records = envelopes.map((envelope, index) =>
      index === 3
        ? { ...sqsRecordFactory(envelope), messageAttributes: traceparentAttribute(traces[3]?.traceId ?? '') }
        : tracedRecord(envelope, traces[index]?.header),
    );
    const worker = exampleWorker(db.client({ max: 4 }), {
      handlers: [...exampleHandlers, barrierHandler(4)],
      recordConcurrency: 4,
      ...telemetry(),
    });

    // Act: a short invocation, so that records run one by one would fail (the barrier would never open)
    const { result, lines } = await captureOutput(() => worker(sqsEvent(records), lambdaContext(8_000)));

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    const recordLines = lines.filter((line) => line.message === 'worker_message_completed');
    expect(recordLines).toHaveLength(4);
    for (const [index, record] of records.entries()) {
      const line = recordLines.find((l) => l.messageId === record.messageId);
      expect(line?.traceId).toBe(traces[index]?.traceId);
      expect((await inboxTrace(envelopes[index]?.idempotencyKey ?? ''))?.trace_id).toBe(
        traces[index]?.traceId,
      );
    }
  });

  it('ignores a garbage trace header: the record completes, without a trace id, and the header is never logged', async () => {
    // Prepare: a header that carries payload-like text, and a record without any header beside it
    const leak = `card-${randomUUID()}`;
    const garbage = tracedRecord(
      envelopeFactory({ idempotencyKey: `garbage:${randomUUID()}` }),
      `Root=${leak};Parent=x`,
    );
    garbage.messageAttributes = {
      traceparent: { ...traceparentAttribute('1-x-y').traceparent, stringValue: leak } as never,
    };
    const plain = sqsRecordFactory(envelopeFactory({ idempotencyKey: `plain:${randomUUID()}` }));
    const worker = exampleWorker(db.sql, { ...telemetry() });

    // Act
    const { result, lines, raw } = await captureOutput(() =>
      worker(sqsEvent([garbage, plain]), lambdaContext()),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    const recordLines = lines.filter((line) => line.message === 'worker_message_completed');
    expect(recordLines.map((line) => line.messageId).sort()).toEqual(
      [garbage.messageId, plain.messageId].sort(),
    );
    for (const line of recordLines) expect(line).not.toHaveProperty('traceId');
    expect(raw).not.toContain(leak);
    expect(await inboxTrace(JSON.parse(garbage.body).idempotencyKey)).toEqual({
      trace_id: null,
      status: 'COMPLETED',
    });
  });

  it('records the trace of a failed delivery (bookkeeping) and of a batch claim (per-batch mode)', async () => {
    // Prepare
    const failing = newTrace();
    const retryKey = `retry:${randomUUID()}`;
    const retry = tracedRecord(
      envelopeFactory({ messageType: 'AlwaysRetryable', idempotencyKey: retryKey, payload: {} }),
      failing.header,
    );
    const batchTraces = [newTrace(), newTrace()];
    const batchEnvelopes = batchTraces.map((_, i) =>
      envelopeFactory({ idempotencyKey: `batch-${i}:${randomUUID()}` }),
    );
    const perMessage = exampleWorker(db.sql, {
      handlers: [...exampleHandlers, alwaysRetryable],
      failInvocationOnFullBatchFailure: false,
      ...telemetry(),
    });
    const perBatch = exampleWorker(db.sql, { commitMode: 'per-batch', recordConcurrency: 1, ...telemetry() });

    // Act
    const { result: failed } = await captureOutput(() => perMessage(sqsEvent([retry]), lambdaContext()));
    const { result: batched } = await captureOutput(() =>
      perBatch(
        sqsEvent(batchEnvelopes.map((envelope, i) => tracedRecord(envelope, batchTraces[i]?.header))),
        lambdaContext(),
      ),
    );

    // Assess
    expect(failed).toEqual({ batchItemFailures: [{ itemIdentifier: retry.messageId }] });
    expect(await inboxTrace(retryKey)).toEqual({ trace_id: failing.traceId, status: 'FAILED_RETRYABLE' });
    expect(batched).toEqual({ batchItemFailures: [] });
    for (const [i, envelope] of batchEnvelopes.entries()) {
      expect(await inboxTrace(envelope.idempotencyKey)).toEqual({
        trace_id: batchTraces[i]?.traceId,
        status: 'COMPLETED',
      });
    }
  });

  it('keeps the trace of the delivery that completed a key when a duplicate of another trace arrives', async () => {
    // Prepare
    const envelope = envelopeFactory({ idempotencyKey: `dup:${randomUUID()}` });
    const first = newTrace();
    const second = newTrace();
    const worker = exampleWorker(db.sql, { ...telemetry() });
    await captureOutput(() => worker(sqsEvent([tracedRecord(envelope, first.header)]), lambdaContext()));

    // Act
    const { lines } = await captureOutput(() =>
      worker(sqsEvent([tracedRecord(envelope, second.header)]), lambdaContext()),
    );

    // Assess: the duplicate's own line carries its trace; the inbox keeps the effect's
    expect(lines.find((line) => line.message === 'worker_message_duplicate')?.traceId).toBe(second.traceId);
    expect(await inboxTrace(envelope.idempotencyKey)).toEqual({
      trace_id: first.traceId,
      status: 'COMPLETED',
    });
  });
});

describe('Worker: a subsegment per record when tracing is on', () => {
  it('opens one subsegment per record under the invocation segment, linked to its producer trace, with recordConcurrency 3', async () => {
    // Prepare: a Tracer as in Lambda (it records nothing elsewhere), and the invocation's segment captured
    const saved = process.env.AWS_EXECUTION_ENV;
    process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs24.x';
    const tracer = new Tracer({ serviceName: 'case-worker', enabled: true, captureHTTPsRequests: false });
    if (saved === undefined) delete process.env.AWS_EXECUTION_ENV;
    else process.env.AWS_EXECUTION_ENV = saved;
    const segment = new xray.Segment('case-worker');
    const traces = [newTrace(), newTrace()];
    const records = [
      tracedRecord(slowEnvelope(100), traces[0]?.header),
      tracedRecord(slowEnvelope(100), traces[1]?.header),
      tracedRecord(envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} }), undefined),
    ];
    const worker = exampleWorker(db.client({ max: 3 }), {
      handlers: [...exampleHandlers, slowLedgerWrite, alwaysRetryable],
      recordConcurrency: 3,
      tracer: createRecordTracer(tracer, 'case-worker'),
      ...telemetry(),
    });

    // Act: the handler runs in the invocation's context, as Lambda runs it
    const { result } = await captureOutput(
      () =>
        new Promise((resolve, reject) => {
          xray.getNamespace().run(() => {
            tracer.setSegment(segment);
            worker(sqsEvent(records), lambdaContext()).then(resolve, reject);
          });
        }),
    );

    // Assess: one closed subsegment per record, side by side under the segment, each with its own link
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: records[2]?.messageId }] });
    const subsegments = (segment.subsegments ?? []).map((s) => s.toJSON());
    expect(subsegments).toHaveLength(3);
    for (const [index, record] of records.entries()) {
      const subsegment = subsegments.find((s) => s.annotations?.messageId === record.messageId);
      expect(subsegment).toMatchObject({ name: RECORD_SUBSEGMENT_NAME, end_time: expect.any(Number) });
      expect(subsegment?.annotations?.producerTraceId).toBe(traces[index]?.traceId);
    }
    const failed = subsegments.find((s) => s.annotations?.messageId === records[2]?.messageId);
    expect(failed).toMatchObject({
      fault: true,
      annotations: { result: 'RETRYABLE_FAILURE', messageType: 'AlwaysRetryable' },
      metadata: { 'case-worker': { failureCode: 'DOWNSTREAM_UNAVAILABLE' } },
    });
  });
});
