import { join } from 'node:path';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Construct } from 'constructs';
import { INBOX_PK_PREFIX } from '../../../lambda/stores/dynamodb/item-keys.ts';
import { bundledFunction, PROJECT_ROOT } from '../../bundled-function.ts';
import { BREAKER_TIMEOUT, breakerEnvironment, scheduleBreaker } from '../../jobs/breaker-function.ts';
import type { ResolvedWorkerSettings } from '../../resolve-worker-settings.ts';
import type { WorkerTable } from './worker-table.ts';

/** Inputs of {@link createDynamoBreaker}. */
export interface DynamoBreakerInputs {
  readonly table: WorkerTable;
  readonly settings: ResolvedWorkerSettings;
  readonly eventSource: SqsEventSource;
  /** The Powertools variables, the table's and `WORKER_CONSUMER`. */
  readonly environment: Readonly<Record<string, string>>;
}

/**
 * The breaker of the DynamoDB store's Lambda worker (`lambda/handlers/breaker-dynamodb.ts`): a function outside a
 * VPC, every minute, one environment carrying its state (reserved concurrency 1 with `reserveConcurrency`). Its probe
 * is the worker's own read (GetItem of an inbox item, `IDEMP#` partition keys only); it controls the one mapping.
 *
 * @internal
 */
export function createDynamoBreaker(scope: Construct, inputs: DynamoBreakerInputs): lambda.Function {
  const { settings, eventSource } = inputs;
  const breakerFn = bundledFunction(scope, 'BreakerFunction', {
    entry: join(PROJECT_ROOT, 'lambda/handlers/breaker-dynamodb.ts'),
    description:
      'Disables the worker event source mapping while DynamoDB does not answer and enables it again (scheduled)',
    timeout: BREAKER_TIMEOUT,
    reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
    profile: { store: 'dynamodb', tracing: false },
    environment: { ...inputs.environment, ...breakerEnvironment(settings, eventSource, inputs.environment) },
  });
  breakerFn.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'ProbeTheInbox',
      actions: ['dynamodb:GetItem'],
      resources: [inputs.table.table.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${INBOX_PK_PREFIX}*`] } },
    }),
  );
  scheduleBreaker(scope, breakerFn, eventSource, settings);
  return breakerFn;
}
