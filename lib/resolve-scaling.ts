import type { Duration } from 'aws-cdk-lib';
import type { ProvisionedPollers, ScalingMode } from './resolve-worker-settings.ts';
import { type PollerSettings, resolvePollerSettings } from './runtimes/fargate/resolve-poller-settings.ts';
import {
  type CapacityBound,
  resolveMaximumConcurrency,
  resolveProvisioned,
} from './runtimes/lambda/resolve-lambda-scaling.ts';
import type { SettingChecks } from './setting-checks.ts';
import type { WorkerStore } from './stores/worker-store.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** How the worker scales, within the capacity formula, on its runtime. */
export interface ResolvedScaling {
  readonly scalingMode: ScalingMode;
  /** The event source's maximum concurrency, the reserved concurrency (provisioned), or the maximum task count. */
  readonly maxConcurrency: number;
  readonly reservedConcurrency: number;
  readonly provisionedPollers: ProvisionedPollers | undefined;
  /** The Fargate runtime's settings (`runtime: 'fargate'` only). */
  readonly poller: PollerSettings | undefined;
}

/**
 * The runtime's scaling, bounded by the capacity formula: the poller's tasks on Fargate (each task one worker of
 * the formula), provisioned pollers and the reserved concurrency, or the event source's maximum concurrency.
 *
 * @internal
 */
export function resolveScaling(
  props: Omit<WorkerSettings, 'vpc'>,
  values: { fargate: boolean; store: WorkerStore; visibilityTimeout: Duration; bound: CapacityBound },
  checks: SettingChecks,
  problems: string[],
): ResolvedScaling {
  const { bound } = values;
  const scalingMode: ScalingMode = props.scalingMode ?? 'maximum-concurrency';
  if (scalingMode !== 'maximum-concurrency' && scalingMode !== 'provisioned') {
    problems.push(
      `scalingMode ("${String(scalingMode)}") must be "maximum-concurrency" or "provisioned"; set one of them`,
    );
  }
  if (values.fargate) {
    const poller = resolvePollerSettings(
      props,
      values.visibilityTimeout,
      bound.capacity,
      bound.capacityTokens,
      problems,
    );
    const tasks = poller.maxTasks;
    return {
      scalingMode,
      maxConcurrency: tasks,
      reservedConcurrency: tasks,
      provisionedPollers: undefined,
      poller,
    };
  }
  if (scalingMode === 'provisioned') {
    const { provisionedPollers, reservedConcurrency } = resolveProvisioned(
      props,
      bound.capacity,
      bound.capacityTokens,
      problems,
      // What raises a DynamoDB worker's capacity is named: its formula has no connections.
      values.store === 'dynamodb' ? bound.capacityFix : 'raise the binding capacity input',
    );
    return {
      scalingMode,
      maxConcurrency: reservedConcurrency,
      reservedConcurrency,
      provisionedPollers,
      poller: undefined,
    };
  }
  const { maxConcurrency, reservedConcurrency } = resolveMaximumConcurrency(
    props,
    bound,
    checks.range,
    problems,
  );
  return {
    scalingMode,
    maxConcurrency,
    reservedConcurrency,
    provisionedPollers: undefined,
    poller: undefined,
  };
}
