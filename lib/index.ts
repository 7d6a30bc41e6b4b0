/**
 * The public entry point of the CDK side: the constructs, their props and the helpers a CDK app needs. Import
 * from here (or from `sqs-inbox-worker/cdk`, which `package.json` `exports` maps to this file); the modules
 * behind it are internal and may change. Nothing under `lambda/` imports this file.
 *
 * @example
 * ```ts
 * import { App, Stack } from 'aws-cdk-lib';
 * import { SqsDatabaseWorker, WorkerNetwork } from 'sqs-inbox-worker/cdk';
 *
 * const app = new App();
 * const stack = new Stack(app, 'Invoices');
 * const network = new WorkerNetwork(stack, 'Network');
 * const worker = new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc: network.vpc,
 *   workerEntry: 'lambda/handlers/invoice-worker.ts',
 *   consumer: 'invoice-worker',
 *   store: { kind: 'postgres', dbMaxConnections: 400 },
 *   alarmEmail: 'oncall@invoices.example.org',
 * });
 * ```
 *
 * @packageDocumentation
 */

export { ScheduledJobs, type ScheduledJobsProps } from './jobs/scheduled-jobs.ts';
export { WORKER_METRICS, type WorkerOutcomeMetric } from './observability/worker-metrics.ts';
export type { RetryPolicyEntry } from './resolve-retry-policy.ts';
export {
  INVOKES_PER_POLLER,
  type ProvisionedPollers,
  type ResolvedWorkerSettings,
  type ScalingMode,
  WorkerSettingsError,
} from './resolve-worker-settings.ts';
export type { FargateRuntimeSettings, WorkerRuntime } from './runtimes/fargate/fargate-settings.ts';
export { PollerService, type PollerServiceProps } from './runtimes/fargate/poller-service.ts';
export type { PollerSettings } from './runtimes/fargate/resolve-poller-settings.ts';
export { SqsDatabaseWorker } from './sqs-database-worker.ts';
export type {
  DynamoDbStoreProps,
  FargateRuntimeProps,
  LambdaRuntimeProps,
  PostgresStoreProps,
  SqsDatabaseWorkerProps,
} from './sqs-database-worker-props.ts';
export { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from './sqs-inbox-worker-stack.ts';
export { stackEnvironment } from './stack-environment.ts';
export { stageSettings } from './stage-settings.ts';
export {
  DYNAMODB_CAPACITY_DEFAULTS,
  type DynamoDbCapacityInputs,
  type DynamoDbCapacityResult,
  safeDynamoDbConcurrency,
} from './stores/dynamodb/dynamodb-capacity.ts';
export {
  EXAMPLE_DOMAIN_KEY_PREFIXES,
  OPS_TABLE_ACTIONS,
  RESERVED_KEY_PREFIXES,
  WORKER_ITEM_ACTIONS,
  WORKER_TABLE_ACTIONS,
  WorkerTable,
  type WorkerTableProps,
} from './stores/dynamodb/worker-table.ts';
export {
  type CapacityInputs,
  type CapacityResult,
  type CapacityTerm,
  safeWorkerConcurrency,
} from './stores/postgres/capacity.ts';
export { WorkerDatabase, type WorkerDatabaseProps } from './stores/postgres/worker-database.ts';
export type { WorkerStore } from './stores/worker-store.ts';
export { WorkerNetwork, type WorkerNetworkProps } from './worker-network.ts';
export type { WorkerSettings } from './worker-settings.ts';
