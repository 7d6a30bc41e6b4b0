import {
  GetMetricDataCommand,
  type GetMetricDataCommandOutput,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import { METRIC_NAMES } from '../../lambda/constants.ts';
import type { CloudWatchReader } from './oldest-message-age.ts';
import { periodIndex, type TrendWindow } from './trend-window.ts';

/** One period of the queue's CloudWatch metrics. */
export interface QueueMetricPeriod {
  readonly start: Date;
  /** `AWS/SQS NumberOfMessagesSent` (Sum; 0 without a datapoint). */
  readonly sent: number;
  /** `AWS/SQS NumberOfMessagesDeleted` (Sum). */
  readonly deleted: number;
  /** `AWS/SQS NumberOfMessagesReceived` (Sum): above deleted, the difference is redeliveries. */
  readonly received: number;
  /** `AWS/SQS ApproximateNumberOfMessagesVisible` (Maximum); null without a datapoint. */
  readonly visible: number | null;
  /** `AWS/SQS ApproximateAgeOfOldestMessage` in seconds (Maximum); null without a datapoint. */
  readonly oldestAgeSeconds: number | null;
  /** The worker's EMF `ProcessingMs` p50 and p99 (namespace and `service` of the worker); null without. */
  readonly processingP50Ms: number | null;
  readonly processingP99Ms: number | null;
}

/** Where the worker's EMF metrics are: `POWERTOOLS_METRICS_NAMESPACE` and the `service` dimension. */
export interface WorkerMetricsTarget {
  readonly namespace: string;
  readonly service: string;
}

const SQS_METRICS = {
  sent: ['NumberOfMessagesSent', 'Sum'],
  deleted: ['NumberOfMessagesDeleted', 'Sum'],
  received: ['NumberOfMessagesReceived', 'Sum'],
  visible: ['ApproximateNumberOfMessagesVisible', 'Maximum'],
  age: ['ApproximateAgeOfOldestMessage', 'Maximum'],
} as const;

/** The GetMetricData queries of `queue trend`: the queue's five SQS metrics and the worker's ProcessingMs p50/p99. */
export function queueTrendQueries(
  queueUrl: string,
  periodSeconds: number,
  worker: WorkerMetricsTarget,
): MetricDataQuery[] {
  const queueName = queueUrl.split('/').at(-1) ?? queueUrl;
  const sqs = Object.entries(SQS_METRICS).map(([id, [name, stat]]) => ({
    Id: id,
    MetricStat: {
      Metric: {
        Namespace: 'AWS/SQS',
        MetricName: name,
        Dimensions: [{ Name: 'QueueName', Value: queueName }],
      },
      Period: periodSeconds,
      Stat: stat,
    },
  }));
  const processing = (['p50', 'p99'] as const).map((stat) => ({
    Id: `processing${stat.toUpperCase()}`,
    MetricStat: {
      Metric: {
        Namespace: worker.namespace,
        MetricName: METRIC_NAMES.processingMs,
        Dimensions: [{ Name: 'service', Value: worker.service }],
      },
      Period: periodSeconds,
      Stat: stat,
    },
  }));
  return [...sqs, ...processing];
}

/**
 * The queue's CloudWatch metrics over the window of `queue trend`, one GetMetricData (its pages followed): each value
 * placed in its period by its timestamp (never by its position), counts without a datapoint read as 0 (SQS publishes
 * none for an idle queue), gauges and timings as null.
 */
export async function readQueueMetricTrend(
  cloudWatch: CloudWatchReader,
  options: { queueUrl: string; window: TrendWindow; worker: WorkerMetricsTarget },
): Promise<QueueMetricPeriod[]> {
  const { window } = options;
  const queries = queueTrendQueries(options.queueUrl, window.periodSeconds, options.worker);
  const values = new Map<string, (number | null)[]>(
    queries.map((q) => [q.Id as string, window.periods.map(() => null)]),
  );
  let nextToken: string | undefined;
  do {
    const page: GetMetricDataCommandOutput = await cloudWatch.send(
      new GetMetricDataCommand({
        StartTime: window.start,
        EndTime: window.end,
        ScanBy: 'TimestampAscending',
        MetricDataQueries: queries,
        NextToken: nextToken,
      }),
    );
    for (const result of page.MetricDataResults ?? []) {
      const series = values.get(result.Id ?? '');
      (result.Timestamps ?? []).forEach((timestamp, i) => {
        const index = periodIndex(window, timestamp);
        const value = result.Values?.[i];
        if (series && index >= 0 && value !== undefined) series[index] = value;
      });
    }
    nextToken = page.NextToken;
  } while (nextToken);
  const at = (id: string, index: number) => values.get(id)?.[index] ?? null;
  const round = (value: number | null) => (value === null ? null : Math.round(value));
  return window.periods.map((start, i) => ({
    start,
    sent: at('sent', i) ?? 0,
    deleted: at('deleted', i) ?? 0,
    received: at('received', i) ?? 0,
    visible: round(at('visible', i)),
    oldestAgeSeconds: round(at('age', i)),
    processingP50Ms: round(at('processingP50', i)),
    processingP99Ms: round(at('processingP99', i)),
  }));
}
