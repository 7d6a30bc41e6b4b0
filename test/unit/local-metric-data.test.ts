import { GetMetricDataCommand, ListMetricsCommand, type MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import { describe, expect, it } from 'vitest';
import { readWindowSignals, windowQueries } from '../../lambda/breaker/fleet-limit.ts';
import { localMetricData, statisticOf } from '../../tools/local/local-metric-data.ts';

const emf = (service: string, values: Record<string, number | number[]>, namespace = 'SqsInboxWorker') => ({
  _aws: {
    Timestamp: 0,
    CloudWatchMetrics: [
      {
        Namespace: namespace,
        Dimensions: [['service']],
        Metrics: Object.keys(values).map((Name) => ({ Name, Unit: 'Count' })),
      },
    ],
  },
  service,
  ...values,
});

describe('Local GetMetricData over the functions’ EMF lines', () => {
  it('answers the control loop’s window: sums and the median of the samples that arrived within it, of its service only', async () => {
    // Prepare
    let now = 120_000;
    const store = localMetricData({ now: () => now });
    store.ingest(
      JSON.stringify(emf('case-worker', { Completed: 3, LoadContention: 1, DbTransactionMs: [10, 30, 20] })),
    );
    store.ingest(emf('case-worker', { Completed: 2, DbTransactionMs: 40 }));
    store.ingest(emf('other-worker', { LoadContention: 50 }));
    store.ingest(emf('case-worker', { LoadContention: 50 }, 'OtherNamespace'));
    store.ingest('{"level":"INFO","message":"not a metric"}');
    store.ingest('not json at all "_aws"');
    now = 180_000; // the next minute
    store.ingest(emf('case-worker', { LoadThrottle: 7 }));
    // The health job's samples (same namespace and service): the most sessions waiting is the window's.
    store.ingest(emf('case-worker', { LockWaits: 3 }));
    store.ingest(emf('case-worker', { LockWaits: 1, Deadlocks: 2 }));

    // Act
    const first = await readWindowSignals(
      store.client,
      { namespace: 'SqsInboxWorker', service: 'case-worker' },
      { start: 120_000, end: 180_000 },
    );
    const second = await readWindowSignals(
      store.client,
      { namespace: 'SqsInboxWorker', service: 'case-worker' },
      { start: 180_000, end: 240_000 },
    );
    const none = await readWindowSignals(
      store.client,
      { namespace: 'SqsInboxWorker', service: 'case-worker' },
      { start: 0, end: 60_000 },
    );

    // Assess
    expect(first).toEqual({
      ok: 5,
      contention: 1,
      throttle: 0,
      unavailable: 0,
      slow: 0,
      medianTransactionMs: 20,
      database: { lockWaits: 0, deadlocks: 0, longTransactions: 0 },
    });
    expect(second).toEqual({
      ok: 0,
      contention: 0,
      throttle: 7,
      unavailable: 0,
      slow: 0,
      database: { lockWaits: 3, deadlocks: 2, longTransactions: 0 },
    });
    expect(none).toEqual({
      ok: 0,
      contention: 0,
      throttle: 0,
      unavailable: 0,
      slow: 0,
      database: { lockWaits: 0, deadlocks: 0, longTransactions: 0 },
    });
    expect(store.size).toBe(13); // every value of every document, the ignored lines none
  });

  it('gives one datapoint per period that holds samples, and refuses what CloudWatch refuses', async () => {
    // Prepare
    let now = 0;
    const store = localMetricData({ now: () => now });
    for (const at of [0, 30_000, 130_000]) {
      now = at;
      store.ingest(emf('w', { Completed: 1 }));
    }
    const queries = windowQueries({ namespace: 'SqsInboxWorker', service: 'w' }, 60).slice(0, 1);

    // Act
    const answer = await store.client.send(
      new GetMetricDataCommand({
        MetricDataQueries: queries,
        StartTime: new Date(0),
        EndTime: new Date(180_000),
      }),
    );

    // Assess
    expect(answer.MetricDataResults?.[0]).toMatchObject({
      Id: 'completed',
      Timestamps: [new Date(0), new Date(120_000)],
      Values: [2, 1],
    });
    await expect(
      store.client.send(
        new GetMetricDataCommand({
          MetricDataQueries: queries,
          StartTime: new Date(60_000),
          EndTime: new Date(0),
        }),
      ),
    ).rejects.toThrow(/StartTime must be before EndTime/);
    await expect(
      store.client.send(
        new GetMetricDataCommand({
          MetricDataQueries: [
            {
              ...queries[0],
              MetricStat: {
                ...(queries[0]?.MetricStat as NonNullable<MetricDataQuery['MetricStat']>),
                Period: 30,
              },
            },
          ],
          StartTime: new Date(0),
          EndTime: new Date(60_000),
        }),
      ),
    ).rejects.toThrow(/Period 30 of completed must be a multiple of 60/);
    await expect(store.client.send(new ListMetricsCommand({}) as never)).rejects.toThrow(
      /does not implement ListMetricsCommand/,
    );
  });

  it('computes CloudWatch’s statistics, and keeps at most maxSamples', () => {
    expect(statisticOf('Sum', [1, 2, 3, 4])).toBe(10);
    expect(statisticOf('SampleCount', [1, 2, 3, 4])).toBe(4);
    expect(statisticOf('Average', [1, 2, 3, 4])).toBe(2.5);
    expect(statisticOf('Minimum', [3, 1, 2])).toBe(1);
    expect(statisticOf('Maximum', [3, 1, 2])).toBe(3);
    expect(statisticOf('p50', [40, 10, 30, 20])).toBe(20);
    expect(
      statisticOf(
        'p99',
        Array.from({ length: 100 }, (_, i) => i + 1),
      ),
    ).toBe(99);
    expect(statisticOf('Sum', [])).toBeUndefined();
    expect(() => statisticOf('tm99', [1])).toThrow(/does not compute the statistic tm99/);
    const store = localMetricData({ maxSamples: 3 });
    for (let i = 0; i < 5; i += 1) store.ingest(emf('w', { Completed: 1 }));
    expect(store.size).toBe(3);
  });
});
