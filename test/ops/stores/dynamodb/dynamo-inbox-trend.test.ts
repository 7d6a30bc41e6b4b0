import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { queueTrend } from '../../../../tools/ops/queue-trend.ts';
import { dynamoInboxTrend } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-trend.ts';
import { dynamoOpsStore } from '../../../../tools/ops/stores/dynamodb/dynamo-ops-store.ts';
import { trendWindow } from '../../../../tools/ops/trend-window.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { createQueues, fastClock, startOpsSqs } from '../../ops-fixture.ts';

const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();
let table: string;

const now = new Date('2026-07-06T12:02:30Z');
const iso = (hhmmss: string) => `2026-07-06T${hhmmss}.000Z`;
const window = trendWindow(now, 1800, 300); // 11:30 to 12:00, six periods

/** An inbox item as the store writes it (the gate's firstSeenAt/startedAt, the completion's completedAt). */
const inbox = (key: string, item: Record<string, unknown>, consumer = 'case-worker') => ({
  PK: `IDEMP#${key}`,
  SK: `WORKER#${consumer}`,
  requestHash: 'h',
  aggregateId: key,
  leaseExpiresAt: 0,
  leaseToken: 't',
  attempts: 1,
  ttl: 2_000_000_000,
  ...item,
});

beforeAll(async () => {
  table = await dynamo.createTable('trend');
  const items = [
    inbox('a', {
      status: 'COMPLETED',
      messageType: 'PaymentCaptured',
      firstSeenAt: iso('11:31:00'),
      startedAt: iso('11:31:00'),
      completedAt: '2026-07-06T11:31:00.040Z',
    }),
    inbox('b', {
      status: 'COMPLETED',
      messageType: 'PaymentCaptured',
      firstSeenAt: iso('11:32:00'),
      startedAt: iso('11:32:00'),
      completedAt: '2026-07-06T11:32:00.250Z',
    }),
    // Retried: first seen at 11:55, its completing attempt took 700 ms at 11:57; failedAt stays from the failure.
    inbox('c', {
      status: 'COMPLETED',
      messageType: 'PaymentCaptured',
      firstSeenAt: iso('11:55:00'),
      failedAt: iso('11:55:00'),
      startedAt: iso('11:57:00'),
      completedAt: '2026-07-06T11:57:00.700Z',
      attempts: 2,
    }),
    inbox('d', {
      status: 'FAILED_TERMINAL',
      messageType: 'CaseStageChanged',
      firstSeenAt: iso('11:58:00'),
      startedAt: iso('11:58:00'),
      failedAt: iso('11:58:01'),
      failureCode: 'CASE_NOT_FOUND',
    }),
    // Outside: before the window, in the period in progress, another consumer's, a quarantine item.
    inbox('e', {
      status: 'COMPLETED',
      messageType: 'PaymentCaptured',
      firstSeenAt: iso('11:00:00'),
      startedAt: iso('11:00:00'),
      completedAt: iso('11:00:01'),
    }),
    inbox('f', {
      status: 'COMPLETED',
      messageType: 'PaymentCaptured',
      firstSeenAt: iso('12:01:00'),
      startedAt: iso('12:01:00'),
      completedAt: iso('12:01:01'),
    }),
    inbox(
      'g',
      {
        status: 'COMPLETED',
        messageType: 'PaymentCaptured',
        firstSeenAt: iso('11:40:00'),
        startedAt: iso('11:40:00'),
        completedAt: iso('11:40:01'),
      },
      'other',
    ),
    {
      PK: 'QUAR#abc',
      SK: 'WORKER#case-worker',
      firstQuarantinedAt: iso('11:40:00'),
      failedAt: iso('11:40:00'),
    },
  ];
  await dynamo.doc.send(
    new BatchWriteCommand({ RequestItems: { [table]: items.map((Item) => ({ PutRequest: { Item } })) } }),
  );
});

const target = () => ({ doc: dynamo.doc, tableName: table });

describe('Function: dynamoInboxTrend()', () => {
  it('counts the window per period and per type, with the processing p50/p99 of the completing attempt', async () => {
    // Act
    const trend = await dynamoInboxTrend(target(), { consumer: 'case-worker', window });

    // Assess
    expect(trend.latency).toBe('processing');
    expect(trend.scan).toEqual({ scanned: 8, bound: 100_000, complete: true });
    expect(trend.periods.map((p) => [p.arrivals, p.completions, p.failures, p.p50Ms, p.p99Ms])).toEqual([
      [2, 2, 0, 40, 250],
      [0, 0, 0, null, null],
      [0, 0, 0, null, null],
      [0, 0, 0, null, null],
      [0, 0, 0, null, null],
      [2, 1, 2, 700, 700],
    ]);
    expect(trend.byType).toEqual([
      { messageType: 'PaymentCaptured', arrivals: 3, completions: 3, failures: 1, p99Ms: 700 },
      { messageType: 'CaseStageChanged', arrivals: 1, completions: 0, failures: 1, p99Ms: null },
    ]);
  });

  it('stops at its bound and says the figures are partial', async () => {
    const trend = await dynamoInboxTrend(target(), { consumer: 'case-worker', window, bound: 2 });
    expect(trend.scan).toEqual({ scanned: 2, bound: 2, complete: false });
  });
});

describe('Function: queueTrend() on the DynamoDB store, locally', () => {
  it('prints the inbox figures per period and type beside the queue now', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs, {});
    const store = dynamoOpsStore({ target });
    const out = createMemoryOutput();

    // Act
    const result = await queueTrend(
      { sqs, out, clock: fastClock(now), store },
      {
        queueUrl,
        consumer: 'case-worker',
        sinceSeconds: 1800,
        periodSeconds: 300,
        worker: { namespace: 'SqsInboxWorker', service: 'sqs-inbox-worker' },
        byType: true,
      },
    );

    // Assess
    expect(result.periods[5]?.inbox).toEqual({
      arrivals: 2,
      completions: 1,
      failures: 2,
      p50Ms: 700,
      p99Ms: 700,
    });
    const text = out.stdout();
    expect(text).toContain('p99 processing');
    expect(text).toContain('CaseStageChanged');
    expect(text).not.toContain('PARTIAL');
    expect(text).toContain('Inbox (DynamoDB): the Scan read 8 items of the table (bound 100000).');
    expect(text).toContain('Not shown here');
  });
});
