import { describe, expect, it } from 'vitest';
import { UsageError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { queueTrend } from '../../tools/ops/queue-trend.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';
import { scriptedCloudWatch } from '../support/scripted-cloudwatch-client.ts';
import { createQueues, fastClock, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });
const { sqs } = await startOpsSqs();

// Six periods of 5 minutes, 11:30 to 12:00; 12:00–12:02:30 is the period in progress, left out.
const now = new Date('2026-07-06T12:02:30Z');
const at = (hhmmss: string) => new Date(`2026-07-06T${hhmmss}Z`);
const worker = { namespace: 'SqsInboxWorker', service: 'sqs-inbox-worker' };
const options = (queueUrl: string) => ({
  queueUrl,
  consumer: 'case-worker',
  sinceSeconds: 1800,
  periodSeconds: 300,
  worker,
  byType: true,
});

// Rows at known times, written as the worker writes them (completed_at after first_seen_at for a retried message).
const seeded = (async () => {
  const caseStage = (i: number) => paymentEnvelope(i, { messageType: 'CaseStageChanged' });
  const rows: Array<[ReturnType<typeof paymentEnvelope>, Parameters<typeof seedInbox>[2]]> = [
    [paymentEnvelope(1), { status: 'COMPLETED', firstSeenAt: at('11:31:00'), completedAt: at('11:31:01') }],
    [paymentEnvelope(2), { status: 'COMPLETED', firstSeenAt: at('11:32:00'), completedAt: at('11:32:03') }],
    [paymentEnvelope(3), { status: 'COMPLETED', firstSeenAt: at('11:55:00'), completedAt: at('11:57:00') }],
    [
      paymentEnvelope(4),
      { status: 'FAILED_RETRYABLE', failureCode: 'DB_TIMEOUT', firstSeenAt: at('11:56:00') },
    ],
    [caseStage(5), { status: 'FAILED_TERMINAL', failureCode: 'CASE_NOT_FOUND', firstSeenAt: at('11:58:00') }],
    // Outside the window: before it, in the period in progress, and another consumer's.
    [paymentEnvelope(6), { status: 'COMPLETED', firstSeenAt: at('11:00:00') }],
    [paymentEnvelope(7), { status: 'COMPLETED', firstSeenAt: at('12:01:00') }],
    [paymentEnvelope(8), { status: 'COMPLETED', firstSeenAt: at('11:40:00'), consumer: 'other' }],
  ];
  for (const [envelope, row] of rows) await seedInbox(db.sql, envelope, row);
})();

describe('Function: queueTrend() on PostgreSQL, locally (no CloudWatch)', () => {
  it('counts arrivals, completions and failures per period with their p50/p99, and names what it cannot show', async () => {
    // Prepare
    await seeded;
    const { queueUrl } = await createQueues(sqs, {});
    await sendAll(sqs, queueUrl, [paymentEnvelope(20), paymentEnvelope(21)]);
    const out = createMemoryOutput();

    // Act
    const result = await queueTrend({ sqs, out, clock: fastClock(now), store }, options(queueUrl));

    // Assess
    expect(result.window).toEqual({ start: at('11:30:00'), end: at('12:00:00'), periodSeconds: 300 });
    expect(result.latency).toBe('first-seen-to-completed');
    expect(result.periods.map((p) => p.start)).toEqual(
      ['11:30:00', '11:35:00', '11:40:00', '11:45:00', '11:50:00', '11:55:00'].map(at),
    );
    expect(result.periods.map((p) => p.queue)).toEqual([null, null, null, null, null, null]);
    expect(result.periods[0]?.inbox).toEqual({
      arrivals: 2,
      completions: 2,
      failures: 0,
      p50Ms: 1000,
      p99Ms: 3000,
    });
    expect(result.periods[5]?.inbox).toEqual({
      arrivals: 3,
      completions: 1,
      failures: 2,
      p50Ms: 120_000,
      p99Ms: 120_000,
    });
    expect(result.periods.slice(1, 5).map((p) => p.inbox.arrivals + p.inbox.completions)).toEqual([
      0, 0, 0, 0,
    ]);
    expect(result.byType).toEqual([
      { messageType: 'PaymentCaptured', arrivals: 4, completions: 3, failures: 1, p99Ms: 120_000 },
      { messageType: 'CaseStageChanged', arrivals: 1, completions: 0, failures: 1, p99Ms: null },
    ]);
    expect(result.now.visible).toBe(2);
    expect(result.notShown).toHaveLength(3);
    const text = out.stdout();
    expect(text).toContain('p99 seen→done');
    expect(text).toContain('Not shown here (a local SQS endpoint');
    expect(text).toContain('NumberOfMessagesSent');
    expect(text).toContain('PaymentCaptured');
    expect(text).toMatch(/Verdict: (steady|consumer slowdown|draining)/);
  });

  it('refuses a window of fewer than four periods, naming the flags', async () => {
    const error = await queueTrend(
      { sqs, out: createMemoryOutput(), clock: fastClock(now), store },
      { ...options('http://unused'), sinceSeconds: 600 },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(
      '--since must cover 4 to 288 periods of --period (given 600s / 300s = 2)',
    );
  });
});

describe('Function: queueTrend() against AWS (the scripted CloudWatch)', () => {
  it('queries the SQS metrics and ProcessingMs per period, places them by timestamp and calls a producer spike', async () => {
    // Prepare
    await seeded;
    const { queueUrl } = await createQueues(sqs, {});
    const cloudWatch = scriptedCloudWatch();
    cloudWatch.script({
      NumberOfMessagesSent: [100, 100, 100, 100, 100, 260],
      NumberOfMessagesDeleted: [100, 100, 100, 100, 100, 102],
      NumberOfMessagesReceived: [101, 100, 100, 100, 100, 104],
      ApproximateNumberOfMessagesVisible: [5, 4, 6, 5, 5, 160],
      ApproximateAgeOfOldestMessage: [2, 2, 2, 2, 2, 95],
      'ProcessingMs:p50': [40, 41, 40, 42, 40, 41],
      'ProcessingMs:p99': [120, 118, 125, 121, 119, null],
    });
    const out = createMemoryOutput();

    // Act
    const result = await queueTrend(
      { sqs, out, clock: fastClock(now), store, cloudWatch: cloudWatch.client },
      options(queueUrl),
    );

    // Assess: one request over the window, each query as CloudWatch expects it.
    const queueName = queueUrl.split('/').at(-1);
    expect(cloudWatch.requests).toHaveLength(1);
    const [request] = cloudWatch.requests;
    expect(request).toMatchObject({
      StartTime: at('11:30:00'),
      EndTime: at('12:00:00'),
      ScanBy: 'TimestampAscending',
    });
    expect(
      request?.MetricDataQueries?.map((q) => [
        q.Id,
        q.MetricStat?.Metric?.Namespace,
        q.MetricStat?.Metric?.MetricName,
        q.MetricStat?.Metric?.Dimensions,
        q.MetricStat?.Stat,
        q.MetricStat?.Period,
      ]),
    ).toEqual([
      ['sent', 'AWS/SQS', 'NumberOfMessagesSent', [{ Name: 'QueueName', Value: queueName }], 'Sum', 300],
      [
        'deleted',
        'AWS/SQS',
        'NumberOfMessagesDeleted',
        [{ Name: 'QueueName', Value: queueName }],
        'Sum',
        300,
      ],
      [
        'received',
        'AWS/SQS',
        'NumberOfMessagesReceived',
        [{ Name: 'QueueName', Value: queueName }],
        'Sum',
        300,
      ],
      [
        'visible',
        'AWS/SQS',
        'ApproximateNumberOfMessagesVisible',
        [{ Name: 'QueueName', Value: queueName }],
        'Maximum',
        300,
      ],
      [
        'age',
        'AWS/SQS',
        'ApproximateAgeOfOldestMessage',
        [{ Name: 'QueueName', Value: queueName }],
        'Maximum',
        300,
      ],
      [
        'processingP50',
        'SqsInboxWorker',
        'ProcessingMs',
        [{ Name: 'service', Value: 'sqs-inbox-worker' }],
        'p50',
        300,
      ],
      [
        'processingP99',
        'SqsInboxWorker',
        'ProcessingMs',
        [{ Name: 'service', Value: 'sqs-inbox-worker' }],
        'p99',
        300,
      ],
    ]);
    expect(result.periods.at(-1)?.queue).toEqual({
      sent: 260,
      deleted: 102,
      received: 104,
      visible: 160,
      oldestAgeSeconds: 95,
      processingP50Ms: 41,
      processingP99Ms: null,
    });
    expect(result.periods[0]?.queue?.sent).toBe(100);
    expect(result.periods[0]?.inbox.completions).toBe(2);
    expect(result.notShown).toEqual([]);
    expect(result.verdict.kind).toBe('producer-spike');
    const text = out.stdout();
    expect(text).toContain('p99 EMF');
    expect(text).toMatch(/11:55 +│? *260 +│? *102/u);
    expect(text).toContain(
      'Verdict: producer spike: sent +160% (100/period → 260/period) while deleted held (+2%, 102/period); 0 visible now.',
    );
    expect(text).not.toContain('Not shown here');
  });

  it('calls a consumer slowdown when deleted falls while sent holds', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs, {});
    const cloudWatch = scriptedCloudWatch();
    cloudWatch.script({
      NumberOfMessagesSent: [80, 80, 80, 80, 80, 80],
      NumberOfMessagesDeleted: [80, 80, 80, 80, 80, 30],
      'ProcessingMs:p99': [150, 150, 150, 150, 150, 2400],
    });
    const out = createMemoryOutput();

    // Act
    const result = await queueTrend(
      { sqs, out, clock: fastClock(now), store, cloudWatch: cloudWatch.client },
      { ...options(queueUrl), byType: false },
    );

    // Assess
    expect(result.verdict.kind).toBe('consumer-slowdown');
    expect(out.stdout()).toContain(
      'Verdict: consumer slowdown: deleted fell 63% / p99 +1500% (150 ms → 2400 ms) while sent held (+0%)',
    );
    expect(out.stdout()).not.toContain('Per message type');
  });
});
