import { Token } from 'aws-cdk-lib';
import type { WorkerSettings } from './worker-settings.ts';

/**
 * The variables the construct sets in the worker's environment (the function's, or the poller container's), each
 * with the prop (or the resource) it comes from. `workerEnvironment` is merged last, so a variable of it with one
 * of these names would replace a value synth checked against the others — `WORKER_COMMIT_MODE=per-batch` on a
 * DynamoDB worker, `WORKER_STORE=dynamodb` on the poller — and the worker would fail its cold start (or run with
 * settings synth never saw) instead of the synth failing. The rest ({@link OVERRIDABLE_WORKER_VARIABLES}) stay free
 * to override.
 *
 * @internal
 */
export const DERIVED_WORKER_VARIABLES: Readonly<Record<string, string>> = {
  WORKER_STORE: 'store',
  DYNAMODB_TABLE: 'store "dynamodb" (the stack\'s table)',
  RETENTION_SOURCE_SECONDS: 'retentionPeriod',
  RETENTION_DLQ_SECONDS: 'dlqRetentionPeriod',
  DB_HOST: 'store "postgres" (the stack\'s RDS Proxy)',
  DB_PORT: 'store "postgres" (the stack\'s RDS Proxy)',
  DB_AUTH: 'store "postgres" (IAM authentication through the proxy)',
  DB_SSL: 'store "postgres" (TLS to the proxy)',
  DB_NAME: 'databaseName',
  DB_USER: 'workerDbUser',
  DB_POOL_SIZE: 'dbPoolSize',
  WORKER_CONSUMER: 'consumer',
  WORKER_RECORD_CONCURRENCY: 'recordConcurrency',
  WORKER_TERMINAL_POLICY: 'terminalPolicy',
  WORKER_COMMIT_MODE: 'commitMode',
  WORKER_RETRY_POLICY: 'retryPolicy',
  WORKER_HANDLER_FAILURE_CODES: 'handlerFailureCodes',
  PAYLOAD_MAX_BYTES: 'maxPayloadBytes',
  POWERTOOLS_TRACE_ENABLED: 'tracing',
  AWS_XRAY_DAEMON_ADDRESS: 'tracing (the X-Ray daemon beside the poller)',
  POWERTOOLS_SERVICE_NAME: 'serviceName',
  POWERTOOLS_METRICS_NAMESPACE: 'metricsNamespace',
  AWS_REGION: "the stack's region",
  WORKER_QUEUE_URL: 'the source queue',
  POLLER_CONCURRENCY: 'recordConcurrency',
  POLLER_BATCH_SIZE: 'batchSize',
  POLLER_WAIT_SECONDS: 'pollerWaitTime',
  POLLER_VISIBILITY_SECONDS: 'pollerVisibility',
  POLLER_STOP_TIMEOUT_SECONDS: 'pollerStopTimeout',
  POLLER_MAX_EXTENSION_SECONDS: 'pollerMaxExtension',
  POLLER_ADAPTIVE_CONCURRENCY: 'adaptiveConcurrency',
  POLLER_CONCURRENCY_FLOOR: 'concurrencyFloor',
};

/**
 * The variables the construct sets that `workerEnvironment` may replace: the local endpoints (declared empty on the
 * function so `sam local invoke` can point it at a local database, SQS and S3), `NODE_OPTIONS`, and `WORKER_VERSION`
 * (the code asset's hash unless the team names its own release).
 *
 * @internal
 */
export const OVERRIDABLE_WORKER_VARIABLES: readonly string[] = [
  'DATABASE_URL',
  'SQS_ENDPOINT',
  'S3_ENDPOINT',
  'NODE_OPTIONS',
  'WORKER_VERSION',
];

/**
 * Adds one problem per variable of `workerEnvironment` that the construct sets itself
 * ({@link DERIVED_WORKER_VARIABLES}), naming its value and the prop to set instead. An unresolved map is skipped.
 *
 * @internal
 */
export function checkWorkerEnvironment(
  props: Pick<WorkerSettings, 'workerEnvironment'>,
  problems: string[],
): void {
  const environment = props.workerEnvironment;
  if (environment === undefined || Token.isUnresolved(environment)) return;
  for (const [name, value] of Object.entries(environment)) {
    const source = DERIVED_WORKER_VARIABLES[name];
    if (source === undefined) continue;
    const shown = Token.isUnresolved(value) ? 'a token' : JSON.stringify(value);
    problems.push(
      `workerEnvironment sets ${name} (${shown}), which the construct sets from ${source} and checks at synth against the other settings; remove ${name} from workerEnvironment${source.startsWith('the ') || source.includes(' (') ? '' : ` and set ${source} instead`}`,
    );
  }
}
