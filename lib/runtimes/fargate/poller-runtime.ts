import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Names, Stack, Stage } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { WORKER_DEFAULTS } from '../../../lambda/constants.ts';
import { PROJECT_ROOT } from '../../bundled-function.ts';
import { grantPayloadRead } from '../../payload-bucket.ts';
import type { ResolvedWorkerSettings } from '../../resolve-worker-settings.ts';
import { shippedWorkerEntry } from '../../shipped-worker-entry.ts';
import type { WorkerStore } from '../../stores/worker-store.ts';
import type { WorkerStoreParts } from '../../stores/worker-store-parts.ts';
import type { WorkerSettings } from '../../worker-settings.ts';
import { pollerImageFolder, stagePollerImage } from './poller-entry-image.ts';
import { PollerService } from './poller-service.ts';
import type { PollerSettings } from './resolve-poller-settings.ts';

/** What the Fargate runtime is built from: the Lambda runtime's inputs, the poller's settings and the network. */
export interface PollerRuntimeInputs {
  readonly props: WorkerSettings;
  readonly settings: ResolvedWorkerSettings;
  readonly poller: PollerSettings;
  readonly queue: sqs.IQueue;
  readonly store: WorkerStoreParts;
  readonly payloadBucket: s3.IBucket | undefined;
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  /** `POWERTOOLS_SERVICE_NAME` and `POWERTOOLS_METRICS_NAMESPACE`. */
  readonly serviceEnvironment: Readonly<Record<string, string>>;
}

/**
 * The Fargate runtime: the poller as an ECS service ({@link PollerService}) with the worker's environment plus
 * the poller's (`WORKER_QUEUE_URL`, `POLLER_*`), reading payload objects like the worker function. Its task role
 * gets the store's worker grant exactly (the proxy as the worker's database user, or the table's items under the
 * same `domainKeyPrefixes`) and nothing of the other store. Its image is the project's `Dockerfile` (built at
 * deploy), which runs the example domain (`bin/poller.ts`); with `workerEntry`, the poller around your entry's
 * `handlers`, bundled at synth into an image context of its own (`stagePollerImage`).
 *
 * @internal
 */
export function createPollerRuntime(scope: Construct, inputs: PollerRuntimeInputs): PollerService {
  const { props, store } = inputs;
  const service = new PollerService(scope, 'Poller', {
    vpc: inputs.vpc,
    vpcSubnets: inputs.subnets,
    queue: inputs.queue,
    settings: inputs.poller,
    store: store.kind,
    imageDirectory: imageDirectoryOf(scope, props.workerEntry, store.kind),
    // A segment per record, through the X-Ray daemon beside the poller (POWERTOOLS_TRACE_ENABLED is set with it).
    tracing: props.tracing ?? false,
    environment: pollerEnvironment(scope, inputs),
  });
  store.grantWorker({ grantPrincipal: service.taskRole, connections: service.service.connections });
  if (inputs.payloadBucket) {
    grantPayloadRead(inputs.payloadBucket, service.taskRole, 'the poller reads any payload object');
  }
  return service;
}

/**
 * The poller's image context: around `workerEntry` when given; else the project's `Dockerfile` in this repository,
 * or, in an installed package (which ships no `Dockerfile`, lock file or build tools), around the store's shipped
 * worker entry, bundled at synth like a `workerEntry`.
 */
function imageDirectoryOf(scope: Construct, workerEntry: string | undefined, store: WorkerStore): string {
  if (workerEntry) return userEntryImage(scope, workerEntry);
  if (existsSync(join(PROJECT_ROOT, 'Dockerfile'))) return PROJECT_ROOT;
  return userEntryImage(scope, shippedWorkerEntry(store));
}

/**
 * The image context of the poller around `workerEntry`, in a folder of the assembly that is the same at every synth
 * of the stack (so the image is rebuilt only when the bundle changes).
 */
function userEntryImage(scope: Construct, entry: string): string {
  const outdir = Stage.of(scope)?.outdir ?? PROJECT_ROOT;
  return stagePollerImage(
    entry,
    join(outdir, pollerImageFolder(Names.uniqueId(scope), entry)),
    Stack.of(scope).bundlingRequired,
  );
}

/** The poller's variables: the store's, the engine's, the poller's, and the user's `workerEnvironment` last. */
function pollerEnvironment(scope: Construct, inputs: PollerRuntimeInputs): Record<string, string> {
  const { props, settings, poller, store } = inputs;
  return {
    ...store.connectionEnvironment,
    ...inputs.serviceEnvironment,
    // The IAM token is signed for the proxy's region, the SDK's calls go to the stack's (the Lambda runtime sets
    // this variable by itself).
    AWS_REGION: Stack.of(scope).region,
    ...store.workerEnvironment,
    WORKER_CONSUMER: props.consumer ?? WORKER_DEFAULTS.consumer,
    // Per batch, a batch's records run one after another (1); POLLER_CONCURRENCY counts the records in flight.
    WORKER_RECORD_CONCURRENCY: props.commitMode === 'per-batch' ? '1' : String(settings.recordConcurrency),
    WORKER_TERMINAL_POLICY: props.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
    WORKER_COMMIT_MODE: props.commitMode ?? WORKER_DEFAULTS.commitMode,
    ...settings.retryPolicyEnvironment,
    PAYLOAD_MAX_BYTES: String(settings.maxPayloadBytes),
    WORKER_QUEUE_URL: inputs.queue.queueUrl,
    POLLER_CONCURRENCY: String(settings.recordConcurrency),
    POLLER_BATCH_SIZE: String(settings.batchSize),
    POLLER_WAIT_SECONDS: String(poller.waitTime.toSeconds()),
    POLLER_VISIBILITY_SECONDS: String(poller.visibility.toSeconds()),
    POLLER_STOP_TIMEOUT_SECONDS: String(poller.stopTimeout.toSeconds()),
    POLLER_MAX_EXTENSION_SECONDS: String(poller.maxExtension.toSeconds()),
    // Off: the records in flight stay at POLLER_CONCURRENCY, and no floor is given (the poller checks one it gets).
    POLLER_ADAPTIVE_CONCURRENCY: settings.adaptiveConcurrency ? 'on' : 'off',
    ...(settings.adaptiveConcurrency
      ? { POLLER_CONCURRENCY_FLOOR: String(settings.adaptiveConcurrency.floor) }
      : {}),
    ...props.workerEnvironment,
  };
}
