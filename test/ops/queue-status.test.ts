import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import type { CloudWatchReader } from '../../tools/ops/oldest-message-age.ts';
import { queueStatus } from '../../tools/ops/queue-status.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, fastClock, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });
const { sqs } = await startOpsSqs();

describe('Function: queueStatus()', () => {
  it('reports depth, in flight, DLQ depth, retention and the oldest unfinished message', async () => {
    // Prepare
    const now = new Date('2026-07-06T12:00:00Z');
    const { queueUrl, dlqUrl } = await createQueues(sqs, { maxReceiveCount: 5 });
    await sendAll(
      sqs,
      queueUrl,
      [0, 1, 2, 3].map((i) => paymentEnvelope(i)),
    );
    await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 60 }),
    );
    await sendAll(sqs, dlqUrl, [paymentEnvelope(9)]);
    const stuck = paymentEnvelope(5);
    await seedInbox(db.sql, stuck, {
      status: 'FAILED_RETRYABLE',
      failureCode: 'DB_TIMEOUT',
      firstSeenAt: new Date(now.getTime() - 90_000),
    });
    const out = createMemoryOutput();

    // Act
    const result = await queueStatus(
      { sqs, out, clock: fastClock(now), store },
      { queueUrl, dlqUrl, consumer: 'case-worker' },
    );

    // Assess
    expect(result.source).toMatchObject({
      visible: 3,
      inFlight: 1,
      retentionSeconds: 4 * 86_400,
      maxReceiveCount: 5,
    });
    expect(result.dlq).toMatchObject({ visible: 1, inFlight: 0, retentionSeconds: 14 * 86_400 });
    expect(result.oldestUnfinishedAgeSeconds).toBe(90);
    expect(result.oldestUnfinishedKey).toBe(stuck.idempotencyKey);
    expect(out.stdout()).toContain('dlq peek');
    expect(out.stdout()).toContain('1m 30s');
  });

  it('reads the oldest queued message age from CloudWatch when a client is given (AWS)', async () => {
    // Prepare: CloudWatch is an AWS API the emulator does not have; a recording fake answers GetMetricData.
    const { queueUrl } = await createQueues(sqs, {});
    const requests: unknown[] = [];
    const cloudWatch = {
      send: async (command: { input: unknown }) => {
        requests.push(command.input);
        return { MetricDataResults: [{ Id: 'age', Values: [412.6, 300] }] };
      },
    } as unknown as CloudWatchReader;
    const out = createMemoryOutput();
    const now = new Date('2026-07-06T12:00:00Z');

    // Act
    const result = await queueStatus(
      { sqs, out, clock: fastClock(now), cloudWatch },
      { queueUrl, consumer: 'case-worker' },
    );

    // Assess
    expect(result.oldestMessageAgeSeconds).toBe(413);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      EndTime: now,
      MetricDataQueries: [
        {
          MetricStat: {
            Metric: {
              Namespace: 'AWS/SQS',
              MetricName: 'ApproximateAgeOfOldestMessage',
              Dimensions: [{ Name: 'QueueName', Value: queueUrl.split('/').at(-1) }],
            },
            Stat: 'Maximum',
          },
        },
      ],
    });
    expect(out.stdout()).toContain(
      'Age of the oldest queued message (CloudWatch ApproximateAgeOfOldestMessage): 6m 53s',
    );
  });

  it('fails with exit code 1 naming the URL when the queue does not exist', async () => {
    // Act
    const error = await queueStatus(
      { sqs, out: createMemoryOutput(), clock: fastClock() },
      { queueUrl: 'http://127.0.0.1:1/000000000000/missing', consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain(
      'GetQueueAttributes failed for http://127.0.0.1:1/000000000000/missing',
    );
  });
});
