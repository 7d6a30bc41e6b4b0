import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CfnResource } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { SqsDatabaseWorker } from '../../../lib/sqs-database-worker.ts';
import type { RoleComponent } from './local-identities.ts';

/** One resource of a synthesized template (CloudFormation JSON). @internal */
export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

/** A role of the stack a local component runs as. @internal */
export interface StackRole {
  /** Logical id of its `AWS::IAM::Role`. */
  readonly logicalId: string;
  /** Construct path (`Worker/WorkerFunction/ServiceRole`): where in `lib/` its grants are made. */
  readonly path: string;
}

/**
 * A compute resource of the stack as synthesized: what a local run enforces of it besides its role (its memory and
 * timeout) and the environment variables it gets (those whose values are known at synth; tokens are left out).
 *
 * @internal
 */
export interface SynthesizedCompute {
  /** `MemorySize` of the worker function, or `Memory` of the poller's task definition (MB = MiB). */
  readonly memoryMb: number;
  /** `Timeout` of the worker function, seconds (none for a task). */
  readonly timeoutSeconds?: number;
  /** `StopTimeout` of the poller's container, seconds: SIGKILL this long after SIGTERM (none for a function). */
  readonly stopTimeoutSeconds?: number;
  readonly environment: Readonly<Record<string, string>>;
}

/** What the local IAM layer needs of one synthesized stage. @internal */
export interface SynthesizedStage {
  readonly stage: string;
  readonly stackName: string;
  /** The template's resources: Type of every one, Properties of the IAM-relevant ones. */
  readonly resources: Readonly<Record<string, TemplateResource>>;
  /** The roles of the components this stage has (the Lambda worker or the poller, the relay). */
  readonly roles: Readonly<Partial<Record<RoleComponent, StackRole>>>;
  /**
   * The migration function's environment variables that are plain values (its `*_DB_USER` role names, the role
   * timeouts; not the tokens of the database's address and secret): what a local run provisions its database
   * roles from, as the deployed function does. Undefined for a stage without PostgreSQL.
   */
  readonly migrationEnvironment?: Readonly<Record<string, string>>;
  /** The worker function (runtime lambda) or the poller's task (runtime fargate), as synthesized. */
  readonly compute?: { readonly worker?: SynthesizedCompute; readonly poller?: SynthesizedCompute };
  /** Logical ids of the resources a local run has a counterpart of. */
  readonly bound: {
    readonly queue: string;
    readonly deadLetterQueue: string;
    readonly payloadBucket?: string;
    readonly table?: string;
  };
}

/** The synthesized stages a local run evaluates its components' calls against. @internal */
export interface StackPolicySource {
  readonly stages: readonly SynthesizedStage[];
}

/**
 * The stages of `cdk.json` whose roles a local run takes: the Lambda worker and the relay from `dev`, the poller
 * from `fargate` (PostgreSQL); the worker from `dev-dynamodb`, the poller from `fargate-dynamodb` (DynamoDB).
 *
 * @internal
 */
export const LOCAL_STAGES: Readonly<Record<'postgres' | 'dynamodb', readonly string[]>> = {
  postgres: ['dev', 'fargate'],
  dynamodb: ['dev-dynamodb', 'fargate-dynamodb'],
};

/** Properties kept: those of the resources whose policies or names the evaluation reads. */
const KEPT_TYPES = new Set([
  'AWS::IAM::Role',
  'AWS::IAM::Policy',
  'AWS::IAM::ManagedPolicy',
  'AWS::SQS::QueuePolicy',
  'AWS::S3::BucketPolicy',
  'AWS::DynamoDB::Table',
]);

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CDK_JSON = join(ROOT, 'cdk.json');
const cache = new Map<string, SynthesizedStage>();

/**
 * A hash of what a synthesis depends on: `lib/`, `cdk.json`, the installed aws-cdk-lib (its package.json, where
 * Node.js resolves it: this repository's, or the project's that installed the package) and this file. The on-disk
 * cache is keyed by it, so a changed grant is synthesized again and nothing stale is read.
 */
function inputsHash(stage: string): string {
  const hash = createHash('sha256').update(stage);
  const files = [
    ...readdirSync(join(ROOT, 'lib'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .sort()
      .map((name) => join(ROOT, 'lib', name)),
    CDK_JSON,
    createRequire(CDK_JSON).resolve('aws-cdk-lib/package.json'),
    fileURLToPath(import.meta.url),
  ];
  for (const file of files) hash.update(file).update(readFileSync(file));
  return hash.digest('hex').slice(0, 16);
}

/** Where a stage's synthesis is kept between runs (under node_modules/.cache, never committed). */
const cacheFile = (stage: string) =>
  join(ROOT, 'node_modules', '.cache', 'sqs-inbox-worker', `iam-${stage}-${inputsHash(stage)}.json`);

/**
 * Synthesizes the real stack of `stage` as `bin/app.ts` does (the stage's settings from `cdk.json`, bundling
 * skipped: the IAM policies do not depend on the code) and keeps what the local IAM layer evaluates: the
 * policies, and which roles and resources are the local components' and the local queues', bucket and table; and
 * the migration function's plain environment, which the local database roles are provisioned from.
 * Cached per process and on disk (keyed by a hash of `lib/`, `cdk.json` and the CDK version): a synthesis takes
 * seconds (the first one loads aws-cdk-lib), a cached one milliseconds.
 *
 * @throws Error when `cdk.json` has no such stage.
 * @internal
 */
export async function synthesizeStage(stage: string): Promise<SynthesizedStage> {
  const cached = cache.get(stage);
  if (cached) return cached;
  const file = cacheFile(stage);
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as SynthesizedStage;
    cache.set(stage, stored);
    return stored;
  } catch {
    // not synthesized with these inputs yet
  }
  const synthesized = await synthesize(stage);
  cache.set(stage, synthesized);
  // Written whole under another name, then renamed: parallel test files never read half a file.
  mkdirSync(join(file, '..'), { recursive: true });
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(synthesized));
  renameSync(partial, file);
  return synthesized;
}

/** Synthesizes the stack of `stage` and extracts what {@link SynthesizedStage} holds. */
async function synthesize(stage: string): Promise<SynthesizedStage> {
  const { stack, template, stackName } = await synthesizeTemplate(stage);
  const { worker } = stack;
  const idOf = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnResource);
  const propertiesOf = (construct: IConstruct | undefined) =>
    construct ? (template.Resources[idOf(construct)]?.Properties ?? {}) : undefined;
  const migration = propertiesOf(worker.migrationFunction) as
    | { Environment?: { Variables?: Record<string, unknown> } }
    | undefined;
  const migrationEnvironment = migration
    ? strings(Object.entries(migration.Environment?.Variables ?? {}))
    : undefined;
  const synthesized: SynthesizedStage = {
    stage,
    stackName,
    resources: keptResources(template.Resources),
    roles: componentRoles(worker, idOf),
    ...(migrationEnvironment ? { migrationEnvironment } : {}),
    compute: {
      ...workerCompute(propertiesOf(worker.workerFunction) as WorkerFunctionProperties | undefined),
      ...pollerCompute(propertiesOf(worker.pollerService?.taskDefinition) as TaskProperties | undefined),
    },
    bound: {
      queue: idOf(worker.queue),
      deadLetterQueue: idOf(worker.deadLetterQueue),
      ...(worker.payloadBucket ? { payloadBucket: idOf(worker.payloadBucket) } : {}),
      ...(worker.table ? { table: idOf(worker.table.table) } : {}),
    },
  };
  return synthesized;
}

/** The stack of `stage` as `bin/app.ts` builds it (bundling skipped), and its synthesized template. */
async function synthesizeTemplate(stage: string) {
  // Loaded only to synthesize: aws-cdk-lib takes seconds to load, a cached run never needs it.
  const [{ App, Stack }, { SqsInboxWorkerStack }, { stageSettings }] = await Promise.all([
    import('aws-cdk-lib'),
    import('../../../lib/sqs-inbox-worker-stack.ts'),
    import('../../../lib/stage-settings.ts'),
  ]);
  const cdk = JSON.parse(readFileSync(CDK_JSON, 'utf8')) as {
    context: { stages: Record<string, unknown> };
  };
  const raw = cdk.context.stages[stage];
  if (!raw) {
    throw new Error(
      `cdk.json has no stage "${stage}" (stages: ${Object.keys(cdk.context.stages).join(', ')}); the local IAM layer synthesizes ${Object.values(LOCAL_STAGES).flat().join(', ')}`,
    );
  }
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], stage } });
  const stack = new SqsInboxWorkerStack(app, `SqsInboxWorker-${stage}`, {
    worker: stageSettings(stage, raw),
  });
  const template = app.synth().getStackByName(stack.stackName).template as {
    Resources: Record<string, TemplateResource>;
  };
  return { stack, template, stackName: Stack.of(stack.worker).stackName };
}

/** Every resource's Type, and the Properties of those {@link KEPT_TYPES} names. */
function keptResources(all: Record<string, TemplateResource>): Record<string, TemplateResource> {
  const resources: Record<string, TemplateResource> = {};
  for (const [id, resource] of Object.entries(all)) {
    resources[id] = KEPT_TYPES.has(resource.Type)
      ? { Type: resource.Type, Properties: resource.Properties ?? {} }
      : { Type: resource.Type };
  }
  return resources;
}

/** The roles of the components the stage has: the worker function's or the poller task's, the relay's. */
function componentRoles(
  worker: SqsDatabaseWorker,
  idOf: (construct: IConstruct) => string,
): Partial<Record<RoleComponent, StackRole>> {
  const roleOf = (construct: IConstruct | undefined): StackRole | undefined =>
    construct
      ? { logicalId: idOf(construct), path: construct.node.path.split('/').slice(1).join('/') }
      : undefined;
  const roles: Partial<Record<RoleComponent, StackRole>> = {};
  const assign = (component: RoleComponent, role: StackRole | undefined) => {
    if (role) roles[component] = role;
  };
  assign('worker', roleOf(worker.workerFunction?.role));
  assign('poller', roleOf(worker.pollerService?.taskRole));
  assign('relay', roleOf(worker.outboxRelayFunction?.role));
  return roles;
}

/** The entries whose values are plain strings (the tokens left out). */
const strings = (entries: [string, unknown][]) =>
  Object.fromEntries(entries.filter((entry): entry is [string, string] => typeof entry[1] === 'string'));

/** What {@link workerCompute} reads of the worker function's properties. */
interface WorkerFunctionProperties {
  MemorySize: number;
  Timeout: number;
  Environment?: { Variables?: Record<string, unknown> };
}

/** What {@link pollerCompute} reads of the poller's task definition's properties. */
interface TaskProperties {
  Memory: string;
  ContainerDefinitions: {
    Name: string;
    StopTimeout?: number;
    Environment?: { Name: string; Value: unknown }[];
  }[];
}

function workerCompute(fn: WorkerFunctionProperties | undefined): { worker?: SynthesizedCompute } {
  if (!fn) return {};
  return {
    worker: {
      memoryMb: fn.MemorySize,
      timeoutSeconds: fn.Timeout,
      environment: strings(Object.entries(fn.Environment?.Variables ?? {})),
    },
  };
}

function pollerCompute(task: TaskProperties | undefined): { poller?: SynthesizedCompute } {
  if (!task) return {};
  // The poller's container (a task may have sidecars beside it).
  const container = task.ContainerDefinitions.find((definition) => definition.Name === 'Poller');
  return {
    poller: {
      memoryMb: Number(task.Memory),
      ...(container?.StopTimeout !== undefined ? { stopTimeoutSeconds: container.StopTimeout } : {}),
      environment: strings((container?.Environment ?? []).map(({ Name, Value }) => [Name, Value])),
    },
  };
}

/**
 * The policy source of a local run on `store`: its {@link LOCAL_STAGES}, synthesized.
 *
 * @internal
 */
export async function stackPolicySource(store: 'postgres' | 'dynamodb'): Promise<StackPolicySource> {
  const stages: SynthesizedStage[] = [];
  for (const stage of LOCAL_STAGES[store]) stages.push(await synthesizeStage(stage));
  return { stages };
}
