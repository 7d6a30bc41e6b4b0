import {
  type CloudWatchLogsClient,
  GetQueryResultsCommand,
  StartQueryCommand,
  StopQueryCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import type { InsightsRow } from '../logs-insights/evaluate-insights-query.ts';
import type { Clock } from './clock.ts';
import { OperationError } from './errors.ts';

/** The part of `CloudWatchLogsClient` `sqs-worker logs` uses (StartQuery, GetQueryResults, StopQuery); tests pass a fake. */
export type InsightsClient = Pick<CloudWatchLogsClient, 'send'>;

/** Options of {@link runInsightsQuery}. */
export interface InsightsQueryOptions {
  readonly queryString: string;
  readonly logGroupNames: readonly string[];
  readonly start: Date;
  readonly end: Date;
  /** The longest wait for the query to complete; it is stopped then. @default 60000 */
  readonly timeoutMs?: number;
  /** Time between two GetQueryResults. @default 1000 */
  readonly pollMs?: number;
}

/**
 * Runs a Logs Insights query against log groups: StartQuery over `[start, end]`, then GetQueryResults until its
 * status is `Complete`, for at most `timeoutMs` (then StopQuery). The rows are each field's value as text, without
 * the `@ptr` of each event.
 *
 * @throws OperationError when the query fails, is cancelled or times out in CloudWatch, or is still running after
 * `timeoutMs` (naming the query id and the fix: a shorter --since).
 * @internal
 */
export async function runInsightsQuery(
  client: InsightsClient,
  clock: Clock,
  options: InsightsQueryOptions,
): Promise<InsightsRow[]> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const { queryId } = await client.send(
    new StartQueryCommand({
      logGroupNames: [...options.logGroupNames],
      queryString: options.queryString,
      startTime: Math.floor(options.start.getTime() / 1000),
      endTime: Math.ceil(options.end.getTime() / 1000),
    }),
  );
  if (!queryId) throw new OperationError('StartQuery answered without a queryId');
  const deadline = clock.now().getTime() + timeoutMs;
  for (;;) {
    const { status, results = [] } = await client.send(new GetQueryResultsCommand({ queryId }));
    if (status === 'Complete') {
      return results.map((fields) => {
        const row: Record<string, string> = {};
        for (const { field, value } of fields) {
          if (field && field !== '@ptr' && value !== undefined) row[field] = value;
        }
        return row;
      });
    }
    if (status === 'Failed' || status === 'Cancelled' || status === 'Timeout' || status === 'Unknown') {
      throw new OperationError(
        `The Logs Insights query ${queryId} ended ${status} on ${options.logGroupNames.join(', ')}; run it again with a shorter --since, or open it in the CloudWatch console`,
      );
    }
    if (clock.now().getTime() >= deadline) {
      await client.send(new StopQueryCommand({ queryId })).catch(() => undefined);
      throw new OperationError(
        `The Logs Insights query ${queryId} was still ${status ?? 'running'} after ${Math.round(timeoutMs / 1000)} s and was stopped; give a shorter --since`,
      );
    }
    await clock.sleep(options.pollMs ?? 1000);
  }
}
