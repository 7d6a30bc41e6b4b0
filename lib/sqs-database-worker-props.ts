import type { FargateRuntimeProps } from './runtimes/fargate/fargate-runtime-props.ts';
import type { LambdaRuntimeProps } from './runtimes/lambda/lambda-runtime-props.ts';
import type { DynamoDbStoreProps } from './stores/dynamodb/dynamodb-store-props.ts';
import type { PostgresStoreProps } from './stores/postgres/postgres-store-props.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The settings that belong to one axis (a store's or a runtime's), and the axes' own names. */
type AxisKey =
  | keyof PostgresStoreProps
  | keyof DynamoDbStoreProps
  | keyof LambdaRuntimeProps
  | keyof FargateRuntimeProps
  | 'store'
  | 'runtime';

/**
 * Properties of {@link SqsDatabaseWorker}: what every worker has (queues, payloads, the handler entry, alarms),
 * plus one value on each axis — where the inbox and the domain state live (`store`) and where the worker runs
 * (`runtime`) — whose settings exist only with that choice, so a setting of the other store or runtime does not
 * type-check (and is refused at synth for JavaScript callers). Every setting is documented on
 * {@link WorkerSettings}; the defaults give a safe production worker.
 *
 * @example
 * ```ts
 * new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc: network.vpc,
 *   store: { kind: 'postgres', dbMaxConnections: 400 },
 *   runtime: { kind: 'lambda', timeout: Duration.seconds(20) },
 *   workerEntry: 'src/invoice-worker.ts',
 *   alarmEmail: 'oncall@invoices.example.org',
 * });
 * ```
 */
export interface SqsDatabaseWorkerProps extends Omit<WorkerSettings, AxisKey> {
  /**
   * Where the inbox and the domain state live: RDS PostgreSQL behind RDS Proxy in `vpc`, or one DynamoDB table.
   * @default { kind: 'postgres' }
   */
  readonly store?: PostgresStoreProps | DynamoDbStoreProps;
  /**
   * Where the worker runs: a function behind an SQS event source mapping, or the poller on ECS Fargate.
   * @default { kind: 'lambda' }
   */
  readonly runtime?: LambdaRuntimeProps | FargateRuntimeProps;
}

export type { DynamoDbStoreProps, FargateRuntimeProps, LambdaRuntimeProps, PostgresStoreProps };
