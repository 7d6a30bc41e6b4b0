import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { parseTraceparent, parseXRayTraceHeader } from '../../lambda/tracing/trace-context.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { runEntry } from '../support/run-entry.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

/** Runs `fn` as a Lambda producer invocation whose X-Ray header is `header` (`_X_AMZN_TRACE_ID`). */
async function inProducerInvocation<T>(header: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env._X_AMZN_TRACE_ID;
  process.env._X_AMZN_TRACE_ID = header;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env._X_AMZN_TRACE_ID;
    else process.env._X_AMZN_TRACE_ID = saved;
  }
}

describe('Tracing end to end: producer → outbox → relay → fauxqs → event source mapping → worker → inbox show', () => {
  it('carries one trace id from the producer’s outbox row to the SQS message, the worker’s log line and inbox show', async () => {
    // Prepare: a producer in a Lambda invocation (its X-Ray header in the environment), and one with no trace
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 5 });
    const producerTraceId = `1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
    const traced = caseStageEnvelope(`CASE-${randomUUID()}`);
    const untraced = caseStageEnvelope(`CASE-${randomUUID()}`);
    await db.sql`insert into cases (case_id, stage, version) values (${traced.aggregateId}, 'NEW', 0), (${untraced.aggregateId}, 'NEW', 0)`;
    const enqueued = await inProducerInvocation(
      `Root=${producerTraceId};Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:1`,
      () => db.sql.begin((sql) => enqueueOutbox(sql, traced)),
    );
    const generated = await db.sql.begin((sql) => enqueueOutbox(sql, untraced));

    // Act: the real relay publishes both; the local event source mapping delivers them to the real worker
    const relayed = await relayOutbox({
      sql: db.as('relay'),
      sqs: fixture.as('relay').sqs,
      queueUrl,
      deadline: Date.now() + 10_000,
    });
    const received: SQSRecord[] = [];
    const worker = createWorker({
      consumer: 'case-worker',
      handlers: exampleHandlers,
      sql: db.as('worker', { max: 2, prepare: false }),
      sqs: fixture.as('worker').sqs,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'INFO' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      recordConcurrency: 2,
    });
    const handler = (event: SQSEvent, context: Context) => {
      received.push(...event.Records);
      return worker(event, context);
    };
    const { lines, error } = await captureOutput(async () => {
      const esm = await startEventSourceMapping({ sqs: fixture.as('worker').sqs, queueUrl, handler });
      try {
        await esm.drain();
      } finally {
        await esm.stop();
      }
    });
    const show = await runEntry(
      'bin/sqs-worker.js',
      ['inbox', 'show', traced.idempotencyKey, '--consumer', 'case-worker'],
      { DATABASE_URL: db.roleUrl('ops') },
    );

    // Assess: the producer's outbox row
    expect(error).toBeUndefined();
    expect(relayed.published).toBe(2);
    expect(enqueued.traceId).toBe(producerTraceId);
    const rows = await db.sql<{ idempotency_key: string; trace_header: string }[]>`
      select idempotency_key, trace_header from outbox_events
      where idempotency_key in ${db.sql([traced.idempotencyKey, untraced.idempotencyKey])}
    `;
    const headerOf = (key: string) => rows.find((row) => row.idempotency_key === key)?.trace_header;
    expect(parseXRayTraceHeader(headerOf(traced.idempotencyKey))).toEqual({
      traceId: producerTraceId,
      parentId: '53995c3f42cd8ad8',
      sampled: true,
    });
    // …a message whose producer had no trace got one at enqueue
    expect(generated.traceId).toMatch(/^1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    expect(parseXRayTraceHeader(headerOf(untraced.idempotencyKey))?.traceId).toBe(generated.traceId);

    // …the SQS messages as the worker received them through fauxqs: the traceparent message attribute arrives;
    // fauxqs 1.9.2 drops MessageSystemAttributes, so AWSTraceHeader does not (when an upgrade passes it, this
    // fails: then assert it carries the same trace, and update docs/tracing.md)
    expect(received).toHaveLength(2);
    const recordOf = (key: string) =>
      received.find((record) => JSON.parse(record.body).idempotencyKey === key);
    const tracedRecord = recordOf(traced.idempotencyKey);
    expect(parseTraceparent(tracedRecord?.messageAttributes.traceparent?.stringValue)).toEqual({
      traceId: producerTraceId,
      parentId: '53995c3f42cd8ad8',
      sampled: true,
    });
    expect(
      parseTraceparent(recordOf(untraced.idempotencyKey)?.messageAttributes.traceparent?.stringValue)
        ?.traceId,
    ).toBe(generated.traceId);
    expect(tracedRecord?.attributes.AWSTraceHeader).toBeUndefined();

    // …the worker's log line of each record
    const completed = lines.filter((line) => line.message === 'worker_message_completed');
    expect(completed).toHaveLength(2);
    expect(completed.find((line) => line.messageId === tracedRecord?.messageId)?.traceId).toBe(
      producerTraceId,
    );
    expect(completed.find((line) => line.idempotencyKey === untraced.idempotencyKey)?.traceId).toBe(
      generated.traceId,
    );

    // …the inbox row, and `sqs-worker inbox show`
    const [inbox] = await db.sql`
      select status, trace_id from worker_inbox where consumer = 'case-worker' and idempotency_key = ${traced.idempotencyKey}
    `;
    expect(inbox).toEqual({ status: 'COMPLETED', trace_id: producerTraceId });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`traceId\\s+│?\\s*${producerTraceId}`));
  });
});
