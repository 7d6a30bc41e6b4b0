import { LOG_QUERIES, type LogQueryName, renderLogQuery } from '../../lambda/worker/log-queries.ts';
import { LOG_FILE_VARIABLE } from '../local/local-log-file.ts';
import { evaluateInsightsQuery, type InsightsRow } from '../logs-insights/evaluate-insights-query.ts';
import { readLogEvents } from '../logs-insights/read-log-events.ts';
import type { Clock } from './clock.ts';
import { UsageError } from './errors.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import { readStage } from './read-stage.ts';
import { type InsightsClient, runInsightsQuery } from './run-insights-query.ts';
import { readStackOutputs, type StackReader } from './stack-outputs.ts';

/** Where `sqs-worker logs` reads: the local run's file, or CloudWatch log groups (the flags, or the stage's outputs). */
export type LogsSource =
  | { readonly kind: 'file'; readonly file: string }
  | { readonly kind: 'cloudwatch'; readonly logGroups: readonly string[] }
  | { readonly kind: 'stage'; readonly stage: string; readonly cdkJsonPath?: string };

/** Options of {@link logsCommand}. */
export interface LogsOptions {
  readonly query: LogQueryName;
  /** The query's parameters (`idempotencyKey`, `messageId`, `failureCode`, `limit`). */
  readonly values: Readonly<Record<string, string | number>>;
  /** The time range: the last N seconds. */
  readonly sinceSeconds: number;
  readonly source: LogsSource;
  /** The longest wait for a CloudWatch query. @default 60000 */
  readonly timeoutMs?: number;
}

/** What `sqs-worker logs` talks to in AWS, made on first use (tests pass fakes). */
export interface LogsDeps {
  readonly out: OpsOutput;
  readonly clock: Clock;
  readonly logs: () => Promise<InsightsClient>;
  readonly cloudFormation: () => Promise<StackReader>;
}

/** Result of {@link logsCommand}. */
export interface LogsResult {
  readonly query: LogQueryName;
  readonly queryString: string;
  /** The log file, or the log groups, that were queried. */
  readonly source: string;
  readonly since: string;
  readonly until: string;
  /** The result rows; `by-message-type` rows get `ratePerMinute` (records over the time range). */
  readonly rows: readonly InsightsRow[];
}

/**
 * The flags of `sqs-worker logs` as one query and its parameters: exactly one of `--key`, `--message-id`, `--code`,
 * `--slowest [N]`, `--retries-by-aggregate`, `--by-type`.
 *
 * @throws UsageError naming the flags when none or several are given.
 */
export function pickLogQuery(flags: {
  readonly key?: string | undefined;
  readonly messageId?: string | undefined;
  readonly code?: string | undefined;
  readonly slowest?: string | boolean | undefined;
  readonly retriesByAggregate?: boolean | undefined;
  readonly byType?: boolean | undefined;
}): { query: LogQueryName; values: Record<string, string | number> } {
  const picked: { query: LogQueryName; values: Record<string, string | number> }[] = [];
  if (flags.key !== undefined)
    picked.push({ query: 'by-idempotency-key', values: { idempotencyKey: flags.key } });
  if (flags.messageId !== undefined)
    picked.push({ query: 'by-message-id', values: { messageId: flags.messageId } });
  if (flags.code !== undefined)
    picked.push({ query: 'by-failure-code', values: { failureCode: flags.code } });
  if (flags.slowest !== undefined && flags.slowest !== false) {
    const limit = flags.slowest === true ? 20 : Number(flags.slowest);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new UsageError(
        `--slowest takes a whole number from 1 to 10000 (given "${String(flags.slowest)}")`,
      );
    }
    picked.push({ query: 'slowest', values: { limit } });
  }
  if (flags.retriesByAggregate) picked.push({ query: 'retries-by-aggregate', values: {} });
  if (flags.byType) picked.push({ query: 'by-message-type', values: {} });
  if (picked.length !== 1) {
    throw new UsageError(
      `sqs-worker logs answers one question at a time: give exactly one of --key <idempotencyKey>, --message-id <id>, --code <failureCode>, --slowest [N], --retries-by-aggregate, --by-type (given ${picked.length})`,
    );
  }
  return picked[0] as (typeof picked)[number];
}

/**
 * Where `sqs-worker logs` reads, from its flags and the environment: `--log-file` (or `SQS_WORKER_LOG_FILE`) against
 * a local SQS endpoint or when given; else `--log-group` (repeatable); else the outputs of `--stage`'s stack.
 *
 * @throws UsageError naming what to pass when nothing says where the logs are.
 */
export function resolveLogsSource(
  given: {
    readonly logFile?: string | undefined;
    readonly logGroups?: readonly string[] | undefined;
    readonly stage?: string | undefined;
    readonly local: boolean;
  },
  env: Readonly<Record<string, string | undefined>> = process.env,
): LogsSource {
  const file = given.logFile || (given.local ? env[LOG_FILE_VARIABLE] || undefined : undefined);
  if (file) return { kind: 'file', file };
  if (given.local) {
    throw new UsageError(
      `Missing setting for "logs" against the local stack: the local run's log file. Pass --log-file <file> or set ${LOG_FILE_VARIABLE} (npm start -- --keep prints it).`,
    );
  }
  if (given.logGroups && given.logGroups.length > 0)
    return { kind: 'cloudwatch', logGroups: given.logGroups };
  if (given.stage) return { kind: 'stage', stage: given.stage };
  throw new UsageError(
    'Missing setting for "logs": where the logs are. Pass --stage <stage> (its stack outputs name the log group), --log-group <name>, or --log-file <file> for a local run.',
  );
}

/** The log groups of a stage's stack: its `WorkerLogGroupName` (Lambda) or `PollerLogGroupName` (Fargate) output. */
async function stageLogGroups(
  deps: LogsDeps,
  source: Extract<LogsSource, { kind: 'stage' }>,
): Promise<string[]> {
  const stage = readStage(source.stage, source.cdkJsonPath);
  const outputs = await readStackOutputs(await deps.cloudFormation(), stage.stackName);
  const groups = [outputs.WorkerLogGroupName, outputs.PollerLogGroupName].filter(
    (group): group is string => group !== undefined,
  );
  if (groups.length === 0) {
    throw new UsageError(
      `Stack ${stage.stackName} has no WorkerLogGroupName or PollerLogGroupName output (deployed before they existed?): deploy it again, or pass --log-group <name>`,
    );
  }
  return groups;
}

/**
 * `sqs-worker logs`: one runbook question (lambda/worker/log-queries.ts, the texts the stack saves as query
 * definitions) over the last `--since`. Against AWS the query runs in CloudWatch Logs Insights on the worker's log
 * groups (given, or the stage's stack outputs); locally it is evaluated on the local run's log file
 * (`SQS_WORKER_LOG_FILE`, printed by `npm start -- --keep`) by the evaluator of the same subset of the language.
 */
export async function logsCommand(deps: LogsDeps, options: LogsOptions): Promise<LogsResult> {
  const queryString = renderLogQuery(options.query, options.values);
  const until = deps.clock.now();
  const since = new Date(until.getTime() - options.sinceSeconds * 1000);
  let rows: InsightsRow[];
  let source: string;
  if (options.source.kind === 'file') {
    source = options.source.file;
    rows = evaluateInsightsQuery(queryString, await readLogEvents(options.source.file, since));
  } else {
    const logGroups =
      options.source.kind === 'stage'
        ? await stageLogGroups(deps, options.source)
        : [...options.source.logGroups];
    source = logGroups.join(', ');
    rows = await runInsightsQuery(await deps.logs(), deps.clock, {
      queryString,
      logGroupNames: logGroups,
      start: since,
      end: until,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
  }
  if (options.query === 'by-message-type') {
    const minutes = options.sinceSeconds / 60;
    rows = rows.map((row) => ({
      ...row,
      ratePerMinute: String(Math.round((Number(row.records ?? 0) / minutes) * 100) / 100),
    }));
  }
  const result: LogsResult = {
    query: options.query,
    queryString,
    source,
    since: since.toISOString(),
    until: until.toISOString(),
    rows,
  };
  emit(deps.out, result, () => {
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return [
      `${LOG_QUERIES[options.query].question} — ${source}, ${result.since} to ${result.until}: ${rows.length} row(s)`,
      rows.length > 0
        ? table(
            columns,
            rows.map((row) => columns.map((column) => row[column] ?? '')),
          )
        : '',
    ]
      .filter(Boolean)
      .join('\n');
  });
  return result;
}
