import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { WorkerSettingsError } from '../../lib/resolve-worker-settings.ts';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';
import type { StackPolicySource, TemplateResource } from '../../tools/local/iam/stack-policies.ts';

/** A value on each axis of the construct; `scalingMode` undefined where it does not apply (runtime fargate). */
export interface Axes {
  readonly store: 'postgres' | 'dynamodb';
  readonly runtime: 'lambda' | 'fargate';
  readonly commitMode: 'per-message' | 'per-batch';
  readonly tracing: boolean;
  readonly scalingMode: 'maximum-concurrency' | 'provisioned' | undefined;
}

/** A stack synthesized from a stage of `cdk.json` settings, or the refusal of the synth. */
export type SynthesizedCombination =
  | { readonly refused: WorkerSettingsError }
  | {
      readonly refused?: undefined;
      readonly stack: SqsInboxWorkerStack;
      readonly template: { readonly Resources: Record<string, TemplateResource> };
      /** The cloud assembly folder (bundled assets under it when synthesized with bundling). */
      readonly outdir: string;
    };

/** What runs the engine in a synthesized stack: the worker function, or the poller's container. */
export interface EngineEnvironment {
  /** Whose role it runs with (the local IAM layer's component). */
  readonly component: 'worker' | 'poller';
  /** Its environment as the template gives it: strings, or CloudFormation references resolved at deploy. */
  readonly variables: Readonly<Record<string, unknown>>;
}

const outdirs: string[] = [];

/**
 * Synthesizes the stack `bin/app.ts` would for a stage of `settings` (through `stageSettings`, as `cdk.json` stages
 * are read), with bundling skipped unless `bundled`. A synth refusal is returned, any other error thrown.
 */
export function synthesizeCombination(
  settings: Record<string, unknown>,
  options: { readonly bundled: boolean },
): SynthesizedCombination {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-combination-'));
  outdirs.push(outdir);
  // Unbundled, the assets are not staged either: the poller's image context (the project) is not copied.
  const app = new App({
    outdir,
    context: options.bundled ? {} : { 'aws:cdk:bundling-stacks': [], 'aws:cdk:disable-asset-staging': true },
  });
  try {
    const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-matrix', {
      worker: stageSettings('matrix', settings),
    });
    const template = app.synth().getStackByName(stack.stackName).template as {
      Resources: Record<string, TemplateResource>;
    };
    return { stack, template, outdir };
  } catch (error) {
    if (error instanceof WorkerSettingsError) return { refused: error };
    throw error;
  }
}

/** Removes the cloud assemblies {@link synthesizeCombination} wrote. */
export function removeSynthesized(): void {
  for (const dir of outdirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

const logicalId = (stack: SqsInboxWorkerStack, construct: IConstruct): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The environment of what runs the engine: the worker function's, or the poller container's. */
export function engineEnvironment(
  synthesized: Extract<SynthesizedCombination, { stack: unknown }>,
): EngineEnvironment {
  const { stack, template } = synthesized;
  const { workerFunction, pollerService } = stack.worker;
  if (workerFunction) {
    const properties = template.Resources[logicalId(stack, workerFunction)]?.Properties as {
      Environment: { Variables: Record<string, unknown> };
    };
    return { component: 'worker', variables: properties.Environment.Variables };
  }
  if (!pollerService) throw new Error('the stack has neither a worker function nor a poller service');
  const definition = template.Resources[logicalId(stack, pollerService.taskDefinition)]?.Properties as {
    ContainerDefinitions: { Environment: { Name: string; Value: unknown }[] }[];
  };
  const [container] = definition.ContainerDefinitions;
  return {
    component: 'poller',
    variables: Object.fromEntries((container?.Environment ?? []).map(({ Name, Value }) => [Name, Value])),
  };
}

/**
 * The environment with each deploy-time value (a CloudFormation reference) replaced by `values[name]`. A
 * reference without a substitute fails, naming it: a new deploy-time variable needs one here.
 */
export function withDeployTimeValues(
  variables: Readonly<Record<string, unknown>>,
  values: Readonly<Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => {
      if (typeof value === 'string') return [name, value];
      const substitute = values[name];
      if (substitute === undefined) {
        throw new Error(
          `${name} is a deploy-time value (${JSON.stringify(value)}) without a local substitute; add one`,
        );
      }
      return [name, substitute];
    }),
  );
}

/**
 * The synthesized stack as the local IAM layer's policy source: its roles (the worker function's or the
 * poller's, the relay's) and the resources a local run binds its queues, bucket and table to.
 */
export function policySourceOf(
  synthesized: Extract<SynthesizedCombination, { stack: unknown }>,
): StackPolicySource {
  const { stack, template } = synthesized;
  const { worker } = stack;
  const role = (construct: IConstruct | undefined) =>
    construct
      ? {
          logicalId: logicalId(stack, construct),
          path: construct.node.path.split('/').slice(1).join('/'),
        }
      : undefined;
  const roles = Object.fromEntries(
    Object.entries({
      worker: role(worker.workerFunction?.role),
      poller: role(worker.pollerService?.taskRole),
      relay: role(worker.outboxRelayFunction?.role),
    }).filter(([, value]) => value !== undefined),
  );
  return {
    stages: [
      {
        stage: 'matrix',
        stackName: stack.stackName,
        resources: template.Resources,
        roles,
        bound: {
          queue: logicalId(stack, worker.queue),
          deadLetterQueue: logicalId(stack, worker.deadLetterQueue),
          ...(worker.payloadBucket ? { payloadBucket: logicalId(stack, worker.payloadBucket) } : {}),
          ...(worker.table ? { table: logicalId(stack, worker.table.table) } : {}),
        },
      },
    ],
  };
}
