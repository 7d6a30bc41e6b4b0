import { GetMetricDataCommand, type GetMetricDataCommandInput } from '@aws-sdk/client-cloudwatch';
import type { MetricDataClient } from '../../lambda/breaker/fleet-limit.ts';
import { checkMetricDataRequest } from '../../tools/local/local-metric-data.ts';

/**
 * One window of metrics, by metric name, or `<name>:<stat>` (e.g. `ProcessingMs:p99`, looked up first): one value
 * over the window (Sum, or p50 for timings), or a series, one value per period from StartTime (null: no datapoint).
 */
export type ScriptedWindow = Readonly<Record<string, number | readonly (number | null)[]>>;

/** The CloudWatch part the control loop uses, as a scripted, recording fake. */
export interface ScriptedCloudWatch {
  /** Pass this where a `CloudWatchClient` is expected. */
  readonly client: MetricDataClient;
  /** Every GetMetricData input received, in order. */
  readonly requests: GetMetricDataCommandInput[];
  /** The window the next call answers with (the last one given keeps answering). */
  script(...windows: ScriptedWindow[]): void;
  /** The next call rejects with `error` (once). */
  failNext(error: Error): void;
}

/**
 * The ONE faked collaborator besides Lambda's control plane: CloudWatch's GetMetricData, which has no local
 * emulator. Each call is recorded and answered from the script: a query of a metric the window names gets one
 * datapoint, any other none (as CloudWatch answers a metric nothing emitted). It refuses what CloudWatch refuses:
 * another command, a query id that does not start with a lowercase letter, a duplicate id, a period that is not a
 * multiple of 60 (standard-resolution metrics), a start not before the end, more than 500 queries.
 */
export function scriptedCloudWatch(): ScriptedCloudWatch {
  const requests: GetMetricDataCommandInput[] = [];
  let windows: ScriptedWindow[] = [{}];
  let failure: Error | undefined;
  const send = async (command: unknown): Promise<unknown> => {
    if (!(command instanceof GetMetricDataCommand)) {
      throw new Error(
        `The scripted CloudWatch client does not implement ${(command as object).constructor.name}`,
      );
    }
    const input = command.input;
    requests.push(structuredClone(input));
    if (failure) {
      const error = failure;
      failure = undefined;
      throw error;
    }
    const queries = input.MetricDataQueries ?? [];
    checkMetricDataRequest(queries, input.StartTime, input.EndTime);
    const window = (windows.length > 1 ? windows.shift() : windows[0]) ?? {};
    return {
      MetricDataResults: queries.map((query) => {
        const name = query.MetricStat?.Metric?.MetricName ?? '';
        const value = window[`${name}:${query.MetricStat?.Stat}`] ?? window[name];
        return {
          Id: query.Id,
          Label: name,
          StatusCode: 'Complete',
          ...datapoints(value, input, query.MetricStat?.Period ?? 60),
        };
      }),
    };
  };
  return {
    client: { send } as unknown as MetricDataClient,
    requests,
    script(...next) {
      windows = next.length > 0 ? [...next] : [{}];
    },
    failNext(error) {
      failure = error;
    },
  };
}

/** The datapoints of a scripted value: one at StartTime, or one per period of a series, ordered as `ScanBy` asks. */
function datapoints(
  value: ScriptedWindow[string] | undefined,
  input: GetMetricDataCommandInput,
  periodSeconds: number,
): { Timestamps: Date[]; Values: number[] } {
  const start = (input.StartTime as Date).getTime();
  const series = value === undefined ? [] : typeof value === 'number' ? [value] : value;
  const points = series.flatMap((v, i) =>
    v === null ? [] : [{ at: new Date(start + i * periodSeconds * 1000), v }],
  );
  // CloudWatch's default order is TimestampDescending.
  if (input.ScanBy !== 'TimestampAscending') points.reverse();
  return { Timestamps: points.map((p) => p.at), Values: points.map((p) => p.v) };
}
