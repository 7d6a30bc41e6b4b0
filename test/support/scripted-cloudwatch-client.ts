import { GetMetricDataCommand, type GetMetricDataCommandInput } from '@aws-sdk/client-cloudwatch';
import type { MetricDataClient } from '../../lambda/breaker/fleet-limit.ts';
import { checkMetricDataRequest } from '../../tools/local/local-metric-data.ts';

/** One window of the fleet's metrics: the value of each metric name (Sum, or p50 for timings) over the window. */
export type ScriptedWindow = Readonly<Record<string, number>>;

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
        const value = window[name];
        return {
          Id: query.Id,
          Label: name,
          StatusCode: 'Complete',
          Timestamps: value === undefined ? [] : [input.StartTime],
          Values: value === undefined ? [] : [value],
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
