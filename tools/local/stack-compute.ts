import { shippedWorkerEntry } from '../../lib/shipped-worker-entry.ts';
import type { FunctionSettings } from './function-host.ts';
import { localCredentials } from './iam/local-identities.ts';
import { type SynthesizedCompute, synthesizeStage } from './iam/stack-policies.ts';
import type { LocalStack } from './local-stack.ts';
import { localWorkerVersion } from './local-worker-version.ts';
import type { PollerTaskSettings } from './poller-process.ts';

/**
 * The worker function (`worker`, runtime lambda) or the poller's task (`poller`, runtime fargate) of `stage`, as the
 * stack synthesizes it (`synthesizeStage`, cached): its memory, timeout and variables — what `resolveWorkerSettings`
 * resolved and the construct wrote into the template, never a default restated here.
 *
 * @throws Error when the stage has no such component (a fargate stage has no worker function, and the other way
 * round).
 */
export async function stageCompute(
  stage: string,
  component: 'worker' | 'poller',
): Promise<SynthesizedCompute> {
  const synthesized = await synthesizeStage(stage);
  const compute = synthesized.compute?.[component];
  if (!compute) {
    throw new Error(
      `stage "${stage}" synthesizes no ${component === 'worker' ? 'worker function (runtime "lambda")' : 'poller task (runtime "fargate")'}; pick a stage of cdk.json that has one`,
    );
  }
  return compute;
}

/** Variables of the deployed connection through RDS Proxy: a local run connects with `DATABASE_URL` instead. */
const PROXY_CONNECTION = ['DB_HOST', 'DB_PORT', 'DB_NAME', 'DB_USER', 'DB_AUTH', 'DB_SSL'];

/**
 * The variables of a synthesized component pointed at `stack`: the database, SQS and S3 endpoints of the local stack
 * (`DATABASE_URL` as the worker's database role, `SQS_ENDPOINT`, `S3_ENDPOINT`, or `DYNAMODB_ENDPOINT` and the table), the component's local key
 * (as Lambda and ECS hand a component its role's credentials, so the local IAM layer evaluates its calls against that
 * role), the region, and the local code's `WORKER_VERSION` (`localWorkerVersion`); the proxy's connection variables
 * are left out. `overrides` come last.
 *
 * @internal
 */
export function localEnvironment(
  compute: SynthesizedCompute,
  stack: Pick<LocalStack, 'databaseUrl' | 'databaseRoles' | 'sqsEndpoint' | 'region' | 's3' | 'dynamodb'>,
  component: 'worker' | 'poller',
  overrides: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const key = localCredentials(component);
  const environment: Record<string, string> = Object.fromEntries(
    Object.entries(compute.environment).filter(([name]) => !PROXY_CONNECTION.includes(name)),
  );
  if (stack.dynamodb) {
    environment.DYNAMODB_ENDPOINT = stack.dynamodb.endpoint;
    environment.DYNAMODB_TABLE = stack.dynamodb.tableName;
  } else {
    // Both the worker function and the poller's task sign in as the worker's database role (their DB_USER).
    environment.DATABASE_URL = stack.databaseRoles?.url('worker') ?? stack.databaseUrl;
  }
  environment.SQS_ENDPOINT = stack.sqsEndpoint;
  if (stack.s3) environment.S3_ENDPOINT = stack.sqsEndpoint;
  return {
    ...environment,
    AWS_REGION: stack.region,
    AWS_ACCESS_KEY_ID: key.accessKeyId,
    AWS_SECRET_ACCESS_KEY: key.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // The synthesized one is the hash of an asset a local synth does not bundle: the local code's instead.
    WORKER_VERSION: localWorkerVersion(),
    ...overrides,
  };
}

/**
 * The worker function of `stage` ({@link stageCompute}) as a local function host runs it against `stack`: its memory
 * and timeout, its variables pointed at the stack ({@link localEnvironment}), the worker entry the stack bundles for
 * the stack's store (`shippedWorkerEntry`: one per store), or `entry`, and the bundle profile of its store. `memorySizeMb` and `environment` override what the stage synthesizes (a run that
 * shows what a smaller function or a forced limit does).
 *
 * @internal
 */
export async function localWorkerFunction(
  stack: Pick<LocalStack, 'databaseUrl' | 'databaseRoles' | 'sqsEndpoint' | 'region' | 's3' | 'dynamodb'>,
  options: {
    readonly stage: string;
    readonly entry?: string;
    readonly memorySizeMb?: number;
    readonly environment?: Readonly<Record<string, string>>;
  },
): Promise<FunctionSettings> {
  const compute = await stageCompute(options.stage, 'worker');
  const environment = localEnvironment(compute, stack, 'worker', options.environment);
  const store = stack.dynamodb ? 'dynamodb' : 'postgres';
  return {
    entry: options.entry ?? shippedWorkerEntry(store),
    functionName: environment.WORKER_CONSUMER ?? 'case-worker',
    memorySizeMb: options.memorySizeMb ?? compute.memoryMb,
    // A worker function always has its Timeout in the template.
    timeoutMs: (compute.timeoutSeconds as number) * 1000,
    environment,
    region: stack.region,
    profile: {
      store,
      tracing: environment.POWERTOOLS_TRACE_ENABLED === 'true',
    },
  };
}

/**
 * The poller task of `stage` ({@link stageCompute}) as `startPollerTasks` runs it against `stack`: the task's memory,
 * the container's variables pointed at the stack ({@link localEnvironment}, the queue URL the local one) and its stop
 * timeout. `memoryMiB` and `environment` override what the stage synthesizes.
 *
 * @internal
 */
export async function localPollerTask(
  stack: Pick<
    LocalStack,
    'databaseUrl' | 'databaseRoles' | 'sqsEndpoint' | 'region' | 's3' | 'dynamodb' | 'queues'
  >,
  options: {
    readonly stage: string;
    readonly memoryMiB?: number;
    readonly environment?: Readonly<Record<string, string>>;
  },
): Promise<PollerTaskSettings> {
  const compute = await stageCompute(options.stage, 'poller');
  return {
    memoryMiB: options.memoryMiB ?? compute.memoryMb,
    environment: localEnvironment(compute, stack, 'poller', {
      WORKER_QUEUE_URL: stack.queues.queueUrl,
      ...options.environment,
    }),
    ...(compute.stopTimeoutSeconds !== undefined ? { stopTimeoutMs: compute.stopTimeoutSeconds * 1000 } : {}),
  };
}
