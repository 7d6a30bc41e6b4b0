import { resolve } from 'node:path';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { WORKER_DEFAULTS } from '../../../lambda/constants.ts';
import { acknowledgeTracingWildcard } from '../../acknowledge-tracing.ts';
import { bundledFunction } from '../../bundled-function.ts';
import { grantPayloadRead } from '../../payload-bucket.ts';
import type { ResolvedWorkerSettings } from '../../resolve-worker-settings.ts';
import { shippedWorkerEntry } from '../../shipped-worker-entry.ts';
import type { WorkerStoreParts } from '../../stores/worker-store-parts.ts';
import { functionCodeVersion } from '../../worker-code-version.ts';
import type { WorkerSettings } from '../../worker-settings.ts';

/** What the Lambda runtime is built from: the worker's settings, its queue, its store and its payload bucket. */
export interface LambdaRuntimeInputs {
  readonly props: WorkerSettings;
  readonly settings: ResolvedWorkerSettings;
  readonly queue: sqs.IQueue;
  readonly store: WorkerStoreParts;
  readonly payloadBucket: s3.IBucket | undefined;
  /** The worker's subnets in `vpc` (PostgreSQL: the function runs beside the proxy). */
  readonly subnets: ec2.SubnetSelection;
  /** `POWERTOOLS_SERVICE_NAME` and `POWERTOOLS_METRICS_NAMESPACE`. */
  readonly serviceEnvironment: Readonly<Record<string, string>>;
}

/** The worker function and the SQS event source that invokes it. */
export interface LambdaRuntime {
  readonly workerFunction: lambda.Function;
  readonly eventSource: SqsEventSource;
}

/**
 * The Lambda runtime: the worker function (in the store's subnets for PostgreSQL, outside any VPC for DynamoDB;
 * `WORKER_VERSION` the hash of its code asset, unless `workerEnvironment` sets it), its grants on the store and the payload bucket, and the SQS event source that reports partial batch failures and
 * scales within the capacity formula (maximum concurrency, or provisioned pollers).
 *
 * @internal
 */
export function createLambdaRuntime(scope: Construct, inputs: LambdaRuntimeInputs): LambdaRuntime {
  const { props, settings, store } = inputs;
  const postgres = store.kind === 'postgres';
  const workerFunction = bundledFunction(scope, 'WorkerFunction', {
    // One entry per store (lib/shipped-worker-entry.ts): neither bundle holds the other store's code.
    entry: resolve(props.workerEntry ?? shippedWorkerEntry(store.kind)),
    description: postgres ? 'SQS → PostgreSQL inbox worker' : 'SQS → DynamoDB inbox worker (outside a VPC)',
    vpc: postgres ? props.vpc : undefined,
    vpcSubnets: postgres ? inputs.subnets : undefined,
    timeout: settings.timeout,
    memorySize: settings.memorySize,
    reservedConcurrentExecutions: settings.reservedConcurrency,
    ...(props.tracing ? { tracing: lambda.Tracing.ACTIVE } : {}),
    profile: { store: store.kind, tracing: props.tracing ?? false },
    environment: workerFunctionEnvironment(inputs),
  });
  // Deploy correlation: every log line and failed attempt names the code asset that wrote it (unless you name it).
  if (props.workerEnvironment?.WORKER_VERSION === undefined) {
    workerFunction.addEnvironment('WORKER_VERSION', functionCodeVersion(workerFunction));
  }
  store.grantWorker(workerFunction);
  if (props.tracing) acknowledgeTracingWildcard(workerFunction.role);
  if (inputs.payloadBucket) {
    grantPayloadRead(inputs.payloadBucket, workerFunction.role, 'the worker reads any payload object');
  }
  const eventSource = new SqsEventSource(inputs.queue, {
    batchSize: settings.batchSize,
    maxBatchingWindow: settings.fifo ? undefined : settings.maxBatchingWindow,
    reportBatchItemFailures: true,
    // MaximumConcurrency and ProvisionedPollerConfig are mutually exclusive; a provisioned worker is capped by
    // its reserved concurrency (resolveWorkerSettings keeps it within the capacity formula).
    ...(settings.provisionedPollers
      ? { provisionedPollerConfig: { ...settings.provisionedPollers } }
      : { maxConcurrency: settings.maxConcurrency }),
    // EventCount metrics (polled, invoked, failed, deleted, …) in both modes, on the dashboard.
    metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT] },
  });
  workerFunction.addEventSource(eventSource);
  return { workerFunction, eventSource };
}

/** The worker function's variables: the store's, the engine's, and the user's `workerEnvironment` last. */
function workerFunctionEnvironment(inputs: LambdaRuntimeInputs): Record<string, string> {
  const { props, settings, store } = inputs;
  return {
    ...store.connectionEnvironment,
    ...inputs.serviceEnvironment,
    ...store.workerEnvironment,
    WORKER_CONSUMER: props.consumer ?? WORKER_DEFAULTS.consumer,
    WORKER_RECORD_CONCURRENCY: String(settings.recordConcurrency),
    WORKER_TERMINAL_POLICY: props.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
    WORKER_COMMIT_MODE: props.commitMode ?? WORKER_DEFAULTS.commitMode,
    ...settings.retryPolicyEnvironment,
    // Declared empty (= unset for lambda/config.ts) so `sam local invoke --env-vars` can point the worker at a
    // local PostgreSQL and SQS: SAM only overrides variables the template declares.
    ...(store.kind === 'postgres' && { DATABASE_URL: '' }),
    SQS_ENDPOINT: '',
    S3_ENDPOINT: '',
    PAYLOAD_MAX_BYTES: String(settings.maxPayloadBytes),
    // Read by lambda/config.ts (subsegments per record) and by Powertools Tracer itself.
    ...(props.tracing ? { POWERTOOLS_TRACE_ENABLED: 'true' } : {}),
    ...props.workerEnvironment,
  };
}
