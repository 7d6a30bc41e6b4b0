/**
 * The CloudWatch Logs Insights queries of the runbooks ("which records of this key, this message, this code, the
 * slowest, the retries by aggregate, the figures per messageType"), written once: the construct saves each as a
 * query definition on the worker's log groups (lib/observability/worker-log-queries.ts), and `sqs-worker logs` runs
 * the same text, against AWS with StartQuery or on the local run's log file with the evaluator of
 * tools/logs-insights/. Pure data and one function: it imports nothing, so the CDK code, the CLI and the tests share
 * it without bundling anything into a function.
 *
 * The fields are the ones of a record's log line (`record-telemetry.ts`: `queue`, `LOGGED_FIELDS`, and
 * `workerVersion`, a persistent key of the worker's logger) and Powertools Logger's own (`level`, `message`,
 * `timestamp`, `service`); `@timestamp` is CloudWatch's. A query uses only the subset of the language the evaluator
 * implements (fields, filter with `=` / `like` / `ispresent`, stats with count / pct / avg / sum(strcontains), sort,
 * limit): the evaluator refuses anything else, so a query cannot drift away from its tests.
 */

/** The name of each runbook query. */
export type LogQueryName =
  | 'by-idempotency-key'
  | 'by-message-id'
  | 'by-failure-code'
  | 'slowest'
  | 'retries-by-aggregate'
  | 'by-message-type';

/** A runbook query: its text with `{{parameter}}` placeholders, and what it answers. */
export interface LogQuery {
  readonly name: LogQueryName;
  /** What it answers, in the runbook's words (the saved query's description, the CLI's help). */
  readonly question: string;
  /** The Logs Insights text; `{{name}}` is a parameter ({@link renderLogQuery}). */
  readonly template: string;
  /** Its parameters, with the value the saved query definition carries (to replace in the console). */
  readonly parameters: Readonly<Record<string, string | number>>;
}

/** The fields of a record's line shown by the queries that list lines. */
const RECORD_FIELDS =
  'fields @timestamp, level, message, result, messageType, idempotencyKey, messageId, receiveCount, attempts, failureCode, failureMessage, processingMs, workerVersion';

/** The runbook queries, by name. */
export const LOG_QUERIES: Readonly<Record<LogQueryName, LogQuery>> = {
  'by-idempotency-key': {
    name: 'by-idempotency-key',
    question: 'every log line of one idempotency key (the envelope key), oldest first',
    template: `${RECORD_FIELDS}\n| filter idempotencyKey = {{idempotencyKey}}\n| sort @timestamp asc\n| limit 200`,
    parameters: { idempotencyKey: 'REPLACE-WITH-THE-IDEMPOTENCY-KEY' },
  },
  'by-message-id': {
    name: 'by-message-id',
    question: 'every log line of one SQS message id (one delivery chain of one message), oldest first',
    template: `${RECORD_FIELDS}\n| filter messageId = {{messageId}}\n| sort @timestamp asc\n| limit 200`,
    parameters: { messageId: 'REPLACE-WITH-THE-SQS-MESSAGE-ID' },
  },
  'by-failure-code': {
    name: 'by-failure-code',
    question: 'the records that failed with one failure code, newest first',
    template: `${RECORD_FIELDS}\n| filter failureCode = {{failureCode}}\n| sort @timestamp desc\n| limit 200`,
    parameters: { failureCode: 'REPLACE-WITH-THE-FAILURE-CODE' },
  },
  slowest: {
    name: 'slowest',
    question: 'the slowest records (processingMs), with their database time',
    template:
      'fields @timestamp, processingMs, dbTransactionMs, messageAgeMs, result, messageType, idempotencyKey, messageId, workerVersion\n| filter ispresent(processingMs)\n| sort processingMs desc\n| limit {{limit}}',
    parameters: { limit: 20 },
  },
  'retries-by-aggregate': {
    name: 'retries-by-aggregate',
    question: 'retryable failures counted by aggregate (a hot or stuck aggregate shows on top)',
    template:
      'filter result = "RETRYABLE_FAILURE"\n| stats count(*) as retries, avg(attempts) as avgAttempts by aggregateId\n| sort retries desc\n| limit 50',
    parameters: {},
  },
  'by-message-type': {
    name: 'by-message-type',
    question:
      'per messageType: records, failures (retryable and terminal), p99 and average processingMs (rate = records / the time range)',
    template:
      'filter ispresent(result)\n| stats count(*) as records, sum(strcontains(result, "_FAILURE")) as failures, pct(processingMs, 99) as p99ProcessingMs, avg(processingMs) as avgProcessingMs by messageType\n| sort records desc\n| limit 100',
    parameters: {},
  },
};

/**
 * The text of a query with its parameters: a string becomes a double-quoted Logs Insights literal (quotes and
 * backslashes escaped; no control characters), a number must be a whole number from 1 to 10,000 (Logs Insights' `limit`). A parameter not
 * given takes the saved definition's placeholder value.
 *
 * @throws Error naming the parameter when a value is not allowed, or the query has no such parameter.
 * @example
 * renderLogQuery('by-idempotency-key', { idempotencyKey: 'payment:PAY-1' });
 * // fields … | filter idempotencyKey = "payment:PAY-1" | sort @timestamp asc | limit 200
 */
export function renderLogQuery(
  name: LogQueryName,
  values: Readonly<Record<string, string | number>> = {},
): string {
  const query = LOG_QUERIES[name];
  for (const given of Object.keys(values)) {
    if (!(given in query.parameters)) {
      throw new Error(
        `Query ${name} has no parameter "${given}" (its parameters: ${Object.keys(query.parameters).join(', ') || 'none'})`,
      );
    }
  }
  return query.template.replaceAll(/\{\{(\w+)\}\}/g, (_whole, parameter: string) => {
    const value = values[parameter] ?? query.parameters[parameter];
    if (typeof value === 'number') {
      if (!Number.isInteger(value) || value < 1 || value > 10_000) {
        throw new Error(
          `Query ${name}: ${parameter} must be a whole number from 1 to 10000 (given ${value})`,
        );
      }
      return String(value);
    }
    if (value === undefined) throw new Error(`Query ${name}: no value for ${parameter}`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (/[\u0000-\u001f]/.test(value)) {
      throw new Error(`Query ${name}: ${parameter} must not hold a line break or control character`);
    }
    return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  });
}
