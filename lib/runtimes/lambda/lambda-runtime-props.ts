import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * The settings of the Lambda runtime: the worker function's size and timeout, and how its SQS event source
 * mapping batches and scales. Each is documented on {@link WorkerSettings}.
 */
export const LAMBDA_RUNTIME_KEYS = [
  'timeout',
  'memorySize',
  'maxBatchingWindow',
  'scalingMode',
  'maxConcurrency',
  'minimumPollers',
  'maximumPollers',
  'reservedConcurrency',
] as const satisfies readonly (keyof WorkerSettings)[];

/** `runtime` of {@link SqsDatabaseWorkerProps} for a function behind an SQS event source mapping (the default). */
export interface LambdaRuntimeProps extends Pick<WorkerSettings, (typeof LAMBDA_RUNTIME_KEYS)[number]> {
  readonly kind: 'lambda';
}
