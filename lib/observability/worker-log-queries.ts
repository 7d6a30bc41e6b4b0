import { Stack } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { LOG_QUERIES, type LogQueryName, renderLogQuery } from '../../lambda/worker/log-queries.ts';

/**
 * The runbook queries (lambda/worker/log-queries.ts) saved as CloudWatch Logs Insights query definitions on the
 * worker's log groups (the worker function's, or the poller's), named `<stack>/<query>` so that the console lists
 * them in a folder of the stack. A query with a parameter carries a placeholder value to replace
 * (`REPLACE-WITH-THE-IDEMPOTENCY-KEY`); `sqs-worker logs` runs the same texts with the value given.
 *
 * @internal
 */
export function createWorkerLogQueries(
  scope: Construct,
  logGroups: readonly logs.ILogGroup[],
): Readonly<Record<LogQueryName, logs.CfnQueryDefinition>> {
  const stackName = Stack.of(scope).stackName;
  const entries = Object.values(LOG_QUERIES).map((query) => {
    const id = `LogQuery${query.name.replace(/(^|-)(\w)/g, (_m, _dash, c: string) => c.toUpperCase())}`;
    const definition = new logs.CfnQueryDefinition(scope, id, {
      name: `${stackName}/${query.name}`,
      queryString: renderLogQuery(query.name),
      logGroupNames: logGroups.map((group) => group.logGroupName),
    });
    return [query.name, definition] as const;
  });
  return Object.fromEntries(entries) as Record<LogQueryName, logs.CfnQueryDefinition>;
}
