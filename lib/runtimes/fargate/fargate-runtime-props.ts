import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * The settings of the Fargate runtime: the poller's timings and its tasks' size and count. Each is documented on
 * {@link WorkerSettings} (`FargateRuntimeSettings`).
 */
export const FARGATE_RUNTIME_KEYS = [
  'pollerWaitTime',
  'pollerVisibility',
  'pollerStopTimeout',
  'pollerMaxExtension',
  'minTasks',
  'maxTasks',
  'taskCpu',
  'taskMemoryMiB',
] as const satisfies readonly (keyof WorkerSettings)[];

/**
 * `runtime` of {@link SqsDatabaseWorkerProps} for the long-running poller as an ECS Fargate service (its tasks in
 * `vpc`, with either store).
 *
 * @example
 * ```ts
 * new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc: network.vpc,
 *   store: { kind: 'postgres', dbPoolSize: 10 },
 *   runtime: { kind: 'fargate', minTasks: 1, maxTasks: 4 },
 *   alarms: 'none',
 * });
 * ```
 */
export interface FargateRuntimeProps extends Pick<WorkerSettings, (typeof FARGATE_RUNTIME_KEYS)[number]> {
  readonly kind: 'fargate';
}
