import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { WorkerTable } from './dynamodb/worker-table.ts';
import type { WorkerDatabase } from './postgres/worker-database.ts';
import type { WorkerStore } from './worker-store.ts';

/**
 * What a store contributes to the worker's stack, whichever runtime consumes the queue: its resources, the
 * variables that reach it, and the worker's grant on it. A third store builds one of these (see
 * docs/architecture.md).
 */
export interface WorkerStoreParts {
  readonly kind: WorkerStore;
  /** The PostgreSQL database behind its proxy (store `postgres`). */
  readonly database: WorkerDatabase | undefined;
  /** The function that applies the migrations on deploy (store `postgres`). */
  readonly migrationFunction: lambda.Function | undefined;
  /** The DynamoDB table (store `dynamodb`). */
  readonly table: WorkerTable | undefined;
  /** Variables of every function that connects to the store (the proxy's address); empty for DynamoDB. */
  readonly connectionEnvironment: Readonly<Record<string, string>>;
  /** The worker's own variables for the store (its database user and pool, or its table and item TTL). */
  readonly workerEnvironment: Readonly<Record<string, string>>;
  /** Lets the worker (the function, or the poller's tasks) use the store as the worker, and nothing more. */
  grantWorker(grantee: iam.IGrantable & ec2.IConnectable): void;
}
