import {
  GetMetricDataCommand,
  type GetMetricDataCommandOutput,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import type { MetricDataClient } from '../../lambda/breaker/fleet-limit.ts';

/** One sample of a metric, as an EMF document carried it. */
interface Sample {
  readonly namespace: string;
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly value: number;
  /** When it arrived, on the store's clock (epoch ms). */
  readonly at: number;
}

/** CloudWatch's metrics for the local runtime, fed with the functions' EMF lines; returned by {@link localMetricData}. */
export interface LocalMetricData {
  /** Pass this where a `CloudWatchClient` is expected (GetMetricData only). */
  readonly client: MetricDataClient;
  /**
   * Takes one line a function wrote (or a parsed document): an EMF document's metrics become samples stamped with
   * the store's clock; any other line is ignored.
   */
  ingest(line: string | Record<string, unknown>): void;
  /** Samples held (the oldest are dropped beyond `maxSamples`). */
  readonly size: number;
}

interface EmfDirective {
  readonly Namespace?: unknown;
  readonly Dimensions?: unknown;
  readonly Metrics?: unknown;
}

/** The statistic of `values`: Sum, SampleCount, Average, Minimum, Maximum or a percentile `pNN`. */
export function statisticOf(stat: string, values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const sum = values.reduce((total, value) => total + value, 0);
  if (stat === 'Sum') return sum;
  if (stat === 'SampleCount') return values.length;
  if (stat === 'Average') return sum / values.length;
  if (stat === 'Minimum') return sorted[0];
  if (stat === 'Maximum') return sorted[sorted.length - 1];
  const percentile = /^p(\d{1,2}(?:\.\d+)?)$/.exec(stat);
  if (percentile) {
    const rank = Math.ceil((Number(percentile[1]) / 100) * sorted.length) - 1;
    return sorted[Math.min(Math.max(rank, 0), sorted.length - 1)];
  }
  throw new Error(`ValidationError: the local metric store does not compute the statistic ${stat}`);
}

/** The samples of one EMF document (`_aws.CloudWatchMetrics`): each metric's value, or each of its values. */
function samplesOf(document: Record<string, unknown>, at: number): Sample[] {
  const aws = document._aws as { CloudWatchMetrics?: unknown } | undefined;
  if (!aws || !Array.isArray(aws.CloudWatchMetrics)) return [];
  const samples: Sample[] = [];
  for (const directive of aws.CloudWatchMetrics as EmfDirective[]) {
    if (typeof directive.Namespace !== 'string' || !Array.isArray(directive.Metrics)) continue;
    const keys = Array.isArray(directive.Dimensions) ? (directive.Dimensions.flat() as unknown[]) : [];
    const dimensions = Object.fromEntries(
      keys.filter((key): key is string => typeof key === 'string').map((key) => [key, String(document[key])]),
    );
    for (const metric of directive.Metrics as { Name?: unknown }[]) {
      if (typeof metric.Name !== 'string') continue;
      const raw = document[metric.Name];
      for (const value of Array.isArray(raw) ? raw : [raw]) {
        if (typeof value === 'number' && Number.isFinite(value)) {
          samples.push({ namespace: directive.Namespace, name: metric.Name, dimensions, value, at });
        }
      }
    }
  }
  return samples;
}

/** True when `sample` is of the query's metric: namespace, name and every dimension equal. */
function matches(sample: Sample, query: MetricDataQuery): boolean {
  const metric = query.MetricStat?.Metric;
  if (!metric || sample.namespace !== metric.Namespace || sample.name !== metric.MetricName) return false;
  const wanted = metric.Dimensions ?? [];
  return (
    wanted.length === Object.keys(sample.dimensions).length &&
    wanted.every((dimension) => sample.dimensions[dimension.Name ?? ''] === dimension.Value)
  );
}

/** Throws what CloudWatch answers a GetMetricData request it refuses, of the kinds the control loop could send. */
export function checkMetricDataRequest(queries: readonly MetricDataQuery[], start?: Date, end?: Date): void {
  const ids = queries.map((query) => query.Id ?? '');
  if (queries.length === 0 || queries.length > 500) {
    throw new Error(`ValidationError: ${queries.length} MetricDataQueries (1–500 allowed)`);
  }
  if (ids.some((id) => !/^[a-z][a-zA-Z0-9_]*$/.test(id)) || new Set(ids).size !== ids.length) {
    throw new Error(`ValidationError: invalid or duplicate Id in ${ids.join(', ')}`);
  }
  if (!start || !end || start >= end) throw new Error('ValidationError: StartTime must be before EndTime');
  for (const query of queries) {
    const period = query.MetricStat?.Period ?? 0;
    if (!query.MetricStat || period <= 0 || period % 60 !== 0) {
      throw new Error(
        `ValidationError: Period ${period} of ${query.Id} must be a multiple of 60 (MetricStat only)`,
      );
    }
  }
}

/**
 * CloudWatch's GetMetricData over the EMF lines the local functions write: each query gets one datapoint per period
 * of `[StartTime, EndTime)` that holds samples of its metric (namespace, name and dimensions equal), the statistic
 * over them; a period without samples gets none, as CloudWatch answers a metric nothing emitted. Samples are stamped
 * on arrival with `now` (EMF's own `Timestamp` is the wall clock; the local control loop runs on a faster clock,
 * and a deployed metric also becomes readable only once it arrived).
 *
 * @example
 * ```ts
 * const metrics = localMetricData({ now: clock });
 * startFunctionHost({ ..., onOutput: (line) => metrics.ingest(line) });
 * createFleetLimit({ cloudWatch: metrics.client, ... });
 * ```
 */
export function localMetricData(options: { now?: () => number; maxSamples?: number } = {}): LocalMetricData {
  const now = options.now ?? Date.now;
  const maxSamples = options.maxSamples ?? 200_000;
  let samples: Sample[] = [];
  const send = async (command: unknown): Promise<GetMetricDataCommandOutput> => {
    if (!(command instanceof GetMetricDataCommand)) {
      throw new Error(`The local metric store does not implement ${(command as object).constructor.name}`);
    }
    const { MetricDataQueries: queries = [], StartTime, EndTime } = command.input;
    checkMetricDataRequest(queries, StartTime, EndTime);
    const start = (StartTime as Date).getTime();
    const end = (EndTime as Date).getTime();
    return {
      $metadata: {},
      MetricDataResults: queries.map((query) => {
        const periodMs = (query.MetricStat?.Period ?? 60) * 1000;
        const timestamps: Date[] = [];
        const values: number[] = [];
        for (let from = start; from < end; from += periodMs) {
          const to = Math.min(from + periodMs, end);
          const inPeriod = samples.filter((s) => s.at >= from && s.at < to && matches(s, query));
          const value = statisticOf(
            query.MetricStat?.Stat ?? 'Sum',
            inPeriod.map((s) => s.value),
          );
          if (value !== undefined) {
            timestamps.push(new Date(from));
            values.push(value);
          }
        }
        return {
          Id: query.Id,
          Label: query.MetricStat?.Metric?.MetricName,
          StatusCode: 'Complete',
          Timestamps: timestamps,
          Values: values,
        };
      }),
    };
  };
  return {
    client: { send } as unknown as MetricDataClient,
    ingest(line) {
      let document: Record<string, unknown> | undefined;
      if (typeof line === 'string') {
        if (!line.includes('"_aws"')) return;
        try {
          document = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
      } else document = line;
      samples.push(...samplesOf(document, now()));
      if (samples.length > maxSamples) samples = samples.slice(samples.length - maxSamples);
    },
    get size() {
      return samples.length;
    },
  };
}
