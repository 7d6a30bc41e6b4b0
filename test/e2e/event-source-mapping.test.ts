import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type EventSourceMapping,
  type EventSourceMappingOptions,
  type InvocationReport,
  startEventSourceMapping,
} from '../../tools/local/event-source-mapping.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const fixture = await localQueueFixture();
// The mapping polls with the worker function's role, as Lambda's does; so do the handlers' own calls.
const worker = fixture.as('worker');
const running: EventSourceMapping[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((esm) => esm.stop()));
});

/** A test handler that records every invocation and answers with `respond`. */
function recordingHandler(
  respond: (event: SQSEvent, context: Context, invocation: number) => unknown = () => undefined,
) {
  const invocations: { records: SQSRecord[]; context: Context; remainingAtStart: number }[] = [];
  const deliveries = new Map<string, number>();
  const handler = async (event: SQSEvent, context: Context) => {
    invocations.push({
      records: event.Records,
      context,
      remainingAtStart: context.getRemainingTimeInMillis(),
    });
    for (const record of event.Records) deliveries.set(record.body, (deliveries.get(record.body) ?? 0) + 1);
    return respond(event, context, invocations.length);
  };
  return { handler, invocations, deliveries };
}

async function start(options: Omit<EventSourceMappingOptions, 'sqs'>) {
  const reports: InvocationReport[] = [];
  const esm = await startEventSourceMapping({
    sqs: worker.sqs,
    maxConcurrency: 2,
    functionTimeoutMs: 5000,
    onInvocation: (report) => reports.push(report),
    ...options,
  });
  running.push(esm);
  return { esm, reports };
}

describe('Function: startEventSourceMapping()', () => {
  it('passes Lambda-shaped records with every field and a Lambda context', async () => {
    // Prepare
    const { queueUrl, queueArn } = await fixture.queues();
    const body = JSON.stringify({ hello: 'world' });
    await fixture.send(queueUrl, [
      {
        body,
        attributes: {
          traceId: { DataType: 'String', StringValue: 'abc' },
          amount: { DataType: 'Number', StringValue: '42' },
          blob: { DataType: 'Binary', BinaryValue: Buffer.from('bytes') },
        },
      },
    ]);
    const { handler, invocations } = recordingHandler();

    // Act
    const { esm } = await start({ queueUrl, handler, functionName: 'case-worker', functionTimeoutMs: 7000 });
    await esm.drain();

    // Assess
    expect(invocations).toHaveLength(1);
    const [{ records, context, remainingAtStart }] = invocations as [(typeof invocations)[number]];
    const [record] = records as [SQSRecord];
    expect(record).toEqual({
      messageId: expect.any(String),
      receiptHandle: expect.any(String),
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d{13}$/),
        SenderId: expect.any(String),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d{13}$/),
      },
      messageAttributes: {
        traceId: { stringValue: 'abc', stringListValues: [], binaryListValues: [], dataType: 'String' },
        amount: { stringValue: '42', stringListValues: [], binaryListValues: [], dataType: 'Number' },
        blob: {
          binaryValue: Buffer.from('bytes').toString('base64'),
          stringListValues: [],
          binaryListValues: [],
          dataType: 'Binary',
        },
      },
      md5OfBody: createHash('md5').update(body).digest('hex'),
      md5OfMessageAttributes: expect.stringMatching(/^[0-9a-f]{32}$/),
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion: 'us-east-1',
    });
    expect(context.functionName).toBe('case-worker');
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.invokedFunctionArn).toBe('arn:aws:lambda:us-east-1:000000000000:function:case-worker');
    expect(remainingAtStart).toBeGreaterThan(6000);
    expect(remainingAtStart).toBeLessThanOrEqual(7000);
    expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it.each([
    ['a void response', undefined],
    ['a null response', null],
    ['an empty object', {}],
    ['an empty batchItemFailures list', { batchItemFailures: [] }],
    ['a null batchItemFailures list', { batchItemFailures: null }],
  ])('deletes the whole batch after %s', async (_name, response) => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a', 'b', 'c']);
    const { handler, deliveries } = recordingHandler(() => response);

    // Act
    const { esm, reports } = await start({ queueUrl, handler, maxBatchingWindowMs: 300 });
    await esm.drain(); // an undeleted message would stay in flight and come back after 1 s

    // Assess
    expect([...deliveries.values()]).toEqual([1, 1, 1]);
    expect(esm.stats.deleted).toBe(3);
    expect(reports.every((report) => report.result === 'success')).toBe(true);
    expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('deletes the successes and leaves exactly the reported records on the queue', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['ok-1', 'fail', 'ok-2']);
    const { handler, deliveries, invocations } = recordingHandler((event) => ({
      batchItemFailures: event.Records.filter(
        (record) => record.body === 'fail' && record.attributes.ApproximateReceiveCount === '1',
      ).map((record) => ({ itemIdentifier: record.messageId })),
    }));

    // Act
    const { esm, reports } = await start({ queueUrl, handler, maxBatchingWindowMs: 300 });
    await esm.drain();

    // Assess
    // How the three are split into batches depends on the receives, and a busy machine may outlast the queue's 1 s
    // visibility timeout before a delete: so the invariants, not the schedule. The one invocation that reported
    // 'fail' deleted every other record of its batch and left exactly that one; nothing else was ever left.
    expect(deliveries.get('ok-1')).toBeGreaterThanOrEqual(1);
    expect(deliveries.get('ok-2')).toBeGreaterThanOrEqual(1);
    expect(deliveries.get('fail')).toBeGreaterThanOrEqual(2);
    const partial = reports.filter((report) => report.result === 'partial-failure');
    expect(partial).toHaveLength(1);
    expect(partial[0]?.failedMessageIds).toHaveLength(1);
    expect(partial[0]?.deleted).toBe((partial[0]?.messageIds.length ?? 0) - 1);
    expect(reports.every((report) => report === partial[0] || report.result === 'success')).toBe(true);
    const failures = invocations.flatMap(({ records }) => records).filter((record) => record.body === 'fail');
    expect(partial[0]?.failedMessageIds).toEqual([failures[0]?.messageId]);
    expect(Number(failures.at(-1)?.attributes.ApproximateReceiveCount)).toBeGreaterThanOrEqual(2);
  });

  it.each([
    ['an empty itemIdentifier', () => ({ batchItemFailures: [{ itemIdentifier: '' }] })],
    ['a null itemIdentifier', () => ({ batchItemFailures: [{ itemIdentifier: null }] })],
    [
      'a bad key name',
      (event: SQSEvent) => ({ batchItemFailures: [{ itemId: event.Records[0]?.messageId }] }),
    ],
    [
      'an itemIdentifier not in the batch',
      () => ({ batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] }),
    ],
    ['batchItemFailures that is not a list', () => ({ batchItemFailures: 'all' })],
    ['a response that is not an object', () => 'done'],
  ])('fails the whole batch on %s', async (_name, invalid) => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a', 'b', 'c']);
    const { handler, deliveries } = recordingHandler((event, _context, invocation) =>
      invocation === 1 ? invalid(event) : undefined,
    );

    // Act
    const { esm, reports } = await start({ queueUrl, handler, maxBatchingWindowMs: 300 });
    await esm.drain();

    // Assess
    expect(reports[0]?.messageIds).toHaveLength(3);
    expect(reports[0]).toMatchObject({ result: 'batch-failure', reason: 'invalid-response', deleted: 0 });
    expect(Object.fromEntries(deliveries)).toEqual({ a: 2, b: 2, c: 2 });
    expect(esm.stats.invalidResponses).toBe(1);
  });

  it('fails the whole batch when the handler throws', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a', 'b']);
    const { handler, deliveries } = recordingHandler((_event, _context, invocation) => {
      if (invocation === 1) throw new Error('database unreachable');
      return undefined;
    });

    // Act
    const { esm, reports } = await start({ queueUrl, handler, maxBatchingWindowMs: 300 });
    await esm.drain();

    // Assess
    expect(reports[0]).toMatchObject({ result: 'batch-failure', reason: 'error', deleted: 0 });
    expect(reports[0]?.detail).toContain('database unreachable');
    expect(Object.fromEntries(deliveries)).toEqual({ a: 2, b: 2 });
    expect(esm.stats.errors).toBe(1);
  });

  it('fails the whole batch when the handler outlives the function timeout', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 2 });
    await fixture.send(queueUrl, ['slow']);
    let remainingAtTimeout = -1;
    const { handler, deliveries } = recordingHandler(async (_event, context, invocation) => {
      if (invocation > 1) return undefined;
      await sleep(700);
      remainingAtTimeout = context.getRemainingTimeInMillis();
      return undefined; // too late: the invocation already timed out
    });

    // Act
    const { esm, reports } = await start({ queueUrl, handler, functionTimeoutMs: 500 });
    await esm.drain();

    // Assess
    expect(reports[0]).toMatchObject({ result: 'batch-failure', reason: 'timeout', deleted: 0 });
    expect(reports[0]?.detail).toContain('Task timed out after 0.50 seconds');
    expect(remainingAtTimeout).toBe(0);
    expect(deliveries.get('slow')).toBe(2);
    expect(esm.stats.timeouts).toBe(1);
  });

  it('gathers up to batchSize records within the batching window', async () => {
    // Prepare: 30 messages queued before the mapping starts, so no send can fall outside the window however
    // slow the machine. One receive returns at most 10: only gathering within the window makes a batch of 25.
    const { queueUrl } = await fixture.queues();
    await fixture.send(
      queueUrl,
      Array.from({ length: 30 }, (_, index) => `m-${index}`),
    );
    const { handler, invocations } = recordingHandler();

    // Act
    const { esm } = await start({
      queueUrl,
      handler,
      batchSize: 25,
      maxBatchingWindowMs: 1500,
      maxConcurrency: 1,
    });
    await esm.drain();

    // Assess
    expect(invocations.map((invocation) => invocation.records.length)).toEqual([25, 5]);
  });

  it('invokes with what one receive returned when there is no batching window', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a', 'b', 'c', 'd']);
    const { handler, invocations } = recordingHandler();

    // Act
    const { esm } = await start({ queueUrl, handler, batchSize: 3, maxConcurrency: 1 });
    await esm.drain();

    // Assess
    expect(invocations.map((invocation) => invocation.records.length)).toEqual([3, 1]);
  });

  it('never runs more invocations at once than maxConcurrency', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 10 });
    await fixture.send(
      queueUrl,
      Array.from({ length: 12 }, (_, index) => `m-${index}`),
    );
    let current = 0;
    let highest = 0;
    const { handler, invocations } = recordingHandler(async () => {
      current += 1;
      highest = Math.max(highest, current);
      await sleep(150);
      current -= 1;
      return undefined;
    });

    // Act
    const { esm } = await start({ queueUrl, handler, batchSize: 1, maxConcurrency: 3, pollers: 5 });
    await esm.drain();

    // Assess
    expect(invocations).toHaveLength(12);
    expect(highest).toBe(3);
    expect(esm.stats.maxObservedConcurrency).toBe(3);
  });

  it('receives nothing while disabled, and polls again when enabled (UpdateEventSourceMapping Enabled)', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a', 'b', 'c']);
    const { handler, invocations } = recordingHandler();

    // Act
    const { esm } = await start({ queueUrl, handler, enabled: false, waitTimeSeconds: 1 });
    await sleep(500);
    const whileDisabled = { receives: esm.stats.receives, counts: await queueCounts(fixture.sqs, queueUrl) };
    const modifiedBefore = esm.lastModified;
    esm.setEnabled(true);
    await esm.drain();

    // Assess
    expect(whileDisabled).toEqual({ receives: 0, counts: { visible: 3, inFlight: 0, delayed: 0 } });
    expect(
      invocations.flatMap((invocation) => invocation.records.map((record) => record.body)).sort(),
    ).toEqual(['a', 'b', 'c']);
    expect(esm.enabled).toBe(true);
    expect(esm.lastModified).toBeGreaterThanOrEqual(modifiedBefore);
  });

  it('changes MaximumConcurrency while running, never above the new limit once it is lowered', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 10 });
    await fixture.send(
      queueUrl,
      Array.from({ length: 12 }, (_, index) => `m-${index}`),
    );
    let current = 0;
    let highestAfterLowering = 0;
    let lowered = false;
    const { handler, invocations } = recordingHandler(async () => {
      current += 1;
      if (lowered) highestAfterLowering = Math.max(highestAfterLowering, current);
      await sleep(100);
      current -= 1;
      return undefined;
    });
    const { esm } = await start({ queueUrl, handler, batchSize: 1, maxConcurrency: 4, pollers: 4 });

    // Act: lower to 1 once the first invocations are running, after they have drained
    await sleep(50);
    esm.setMaxConcurrency(1);
    await sleep(150); // the invocations started under 4 end
    lowered = true;
    await esm.drain();

    // Assess
    expect(invocations).toHaveLength(12);
    expect(esm.maxConcurrency).toBe(1);
    expect(highestAfterLowering).toBe(1);
    expect(() => esm.setMaxConcurrency(0)).toThrow(
      'maxConcurrency must be a whole number from 1 to 1000 (given 0)',
    );
  });

  it('leaves a failed record to its visibility timeout, which the handler may change', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 3 });
    await fixture.send(queueUrl, ['retry-now', 'retry-later']);
    const seenAt = new Map<string, number[]>();
    const { handler } = recordingHandler(async (event) => {
      const failures = [];
      for (const record of event.Records) {
        seenAt.set(record.body, [...(seenAt.get(record.body) ?? []), Date.now()]);
        if (record.attributes.ApproximateReceiveCount !== '1') continue;
        failures.push({ itemIdentifier: record.messageId });
        if (record.body === 'retry-now') {
          await worker.sqs.send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: queueUrl,
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: 0,
            }),
          );
        }
      }
      return { batchItemFailures: failures };
    });

    // Act
    const { esm } = await start({ queueUrl, handler, maxBatchingWindowMs: 300 });
    await esm.drain();

    // Assess
    const [nowFirst = 0, nowSecond = 0] = seenAt.get('retry-now') ?? [];
    const [laterFirst = 0, laterSecond = 0] = seenAt.get('retry-later') ?? [];
    expect(nowSecond - nowFirst).toBeLessThan(1000);
    // Its visibility timeout is 3 s; 2 s tells "waited it out" from "came back at once" with room for timers.
    expect(laterSecond - laterFirst).toBeGreaterThanOrEqual(2000);
  });

  it('lets SQS move a message that keeps failing to the DLQ after maxReceiveCount, body intact', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 3 });
    const body = JSON.stringify({ poison: true, text: 'ünïcode ✓' });
    await fixture.send(queueUrl, [body]);
    const receiveCounts: string[] = [];
    const { handler } = recordingHandler((event) => {
      receiveCounts.push(...event.Records.map((record) => record.attributes.ApproximateReceiveCount));
      throw new Error('never recovers');
    });

    // Act
    const { esm } = await start({ queueUrl, handler });
    await esm.drain();

    // Assess
    expect(receiveCounts).toEqual(['1', '2', '3']);
    const dead = await fixture.receiveAll(dlqUrl);
    expect(dead.map((message) => message.body)).toEqual([body]);
  });

  it('delivers again a record whose delete was dropped after success (crash after commit)', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['crash', 'fine']);
    const { handler, deliveries, invocations } = recordingHandler();

    // Act
    const { esm, reports } = await start({
      queueUrl,
      handler,
      maxBatchingWindowMs: 300,
      hooks: {
        dropDeleteAfterSuccess: (record) =>
          record.body === 'crash' && record.attributes.ApproximateReceiveCount === '1',
      },
    });
    await esm.drain();

    // Assess
    expect(Object.fromEntries(deliveries)).toEqual({ crash: 2, fine: 1 });
    expect(reports[0]).toMatchObject({ result: 'success', deleted: 1, deletesDropped: 1 });
    expect(invocations.at(-1)?.records[0]?.attributes.ApproximateReceiveCount).toBe('2');
    expect(esm.stats.deletesDropped).toBe(1);
  });

  it('fails the batch when beforeInvoke throws, without calling the handler', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['a']);
    let crashes = 0;
    const { handler, deliveries } = recordingHandler();

    // Act
    const { esm, reports } = await start({
      queueUrl,
      handler,
      hooks: {
        beforeInvoke: () => {
          crashes += 1;
          if (crashes === 1) throw new Error('runtime crashed');
        },
      },
    });
    await esm.drain();

    // Assess
    expect(reports[0]).toMatchObject({ result: 'batch-failure', reason: 'error' });
    expect(deliveries.get('a')).toBe(1);
    expect(crashes).toBe(2);
  });

  it('keeps the order of every FIFO message group and never runs one group twice at once', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ fifo: true });
    const groups = ['g1', 'g2', 'g3', 'g4'];
    await fixture.send(
      queueUrl,
      Array.from({ length: 40 }, (_, index) => {
        const group = groups[index % groups.length];
        return {
          body: `${group}:${Math.floor(index / groups.length)}`,
          groupId: group,
          deduplicationId: `d-${index}`,
        };
      }),
    );
    const seen = new Map<string, number[]>();
    const active = new Set<string>();
    let overlaps = 0;
    const { handler } = recordingHandler(async (event, _context, invocation) => {
      const mine = [...new Set(event.Records.map((record) => record.attributes.MessageGroupId as string))];
      if (mine.some((group) => active.has(group))) overlaps += 1;
      for (const group of mine) active.add(group);
      await sleep(5 + ((invocation * 7) % 20));
      for (const record of event.Records) {
        const [group = '', sequence = ''] = record.body.split(':');
        seen.set(group, [...(seen.get(group) ?? []), Number(sequence)]);
      }
      for (const group of mine) active.delete(group);
      return undefined;
    });

    // Act
    // fauxqs (like SQS) hands out a group only while none of its messages is in flight; batches of two
    // messages from two groups let two pollers work at once.
    const { esm } = await start({ queueUrl, handler, batchSize: 2, maxConcurrency: 4, pollers: 3 });
    await esm.drain();

    // Assess
    for (const group of groups)
      expect(seen.get(group)).toEqual(Array.from({ length: 10 }, (_, index) => index));
    expect(overlaps).toBe(0);
    expect(esm.stats.maxObservedConcurrency).toBeGreaterThan(1);
  });

  it('rejects settings that Lambda would reject, naming each value', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ fifo: true });

    // Act
    const attempt = startEventSourceMapping({
      sqs: worker.sqs,
      queueUrl,
      handler: () => undefined,
      batchSize: 11,
      maxBatchingWindowMs: 500,
    });

    // Assess
    await expect(attempt).rejects.toThrow(/batchSize must be a whole number from 1 to 10 \(given 11\)/);
    await expect(attempt).rejects.toThrow(/FIFO queues do not support a batching window.*given 500/);
  });
});
