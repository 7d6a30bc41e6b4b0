import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { bundledFunction, PROJECT_ROOT } from '../../bundled-function.ts';
import type { WorkerTable } from './worker-table.ts';

/** Inputs of {@link createDynamoHealthJob}. */
export interface DynamoHealthJobInputs {
  readonly table: WorkerTable;
  /** The Powertools variables, the table's (`WORKER_STORE`, `DYNAMODB_TABLE`) and `WORKER_CONSUMER`. */
  readonly environment: Readonly<Record<string, string>>;
  /** How often it runs. */
  readonly schedule: Duration;
}

/** A check reads the table once: far below a minute for the items it reads at most. */
const HEALTH_TIMEOUT = Duration.seconds(60);

/**
 * The health job of the DynamoDB store (`lambda/handlers/health-dynamodb.ts`): a function outside a VPC on an
 * EventBridge schedule, never retried (the next schedule runs a fresh check), whose role may Scan the table and
 * nothing else (a Scan has no partition key to condition on). It publishes the health metrics the alarms watch.
 *
 * @internal
 */
export function createDynamoHealthJob(scope: Construct, inputs: DynamoHealthJobInputs): lambda.Function {
  const health = bundledFunction(scope, 'HealthFunction', {
    entry: join(PROJECT_ROOT, 'lambda/handlers/health-dynamodb.ts'),
    description:
      'Publishes DynamoDB store health figures (quarantine, in-flight, expired leases, outbox) as metrics (scheduled, read-only)',
    timeout: HEALTH_TIMEOUT,
    profile: { store: 'dynamodb', tracing: false },
    environment: { ...inputs.environment },
  });
  health.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'HealthScan',
      actions: ['dynamodb:Scan'],
      resources: [inputs.table.table.tableArn],
    }),
  );
  health.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: inputs.schedule });
  new events.Rule(scope, 'HealthSchedule', {
    description: 'Runs the health job',
    schedule: events.Schedule.rate(inputs.schedule),
    targets: [new targets.LambdaFunction(health, { retryAttempts: 0 })],
  });
  return health;
}
