import { Duration, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Construct } from 'constructs';
import type { ResolvedWorkerSettings } from '../resolve-worker-settings.ts';
import { ESM_MIN_CONCURRENCY } from '../setting-checks.ts';

/** The breaker runs every minute for its timeout less this guard. @internal */
export const BREAKER_TIMEOUT = Duration.seconds(55);
const BREAKER_RUN_GUARD = Duration.seconds(5);

/**
 * The lowest `MaximumConcurrency` the breaker's control loop sets (`CONCURRENCY_FLOOR`) unless `concurrencyFloor`
 * says otherwise: AWS's minimum. The `ConcurrencyAtFloor` alarm watches the floor resolved.
 *
 * @internal
 */
export const CONCURRENCY_FLOOR = ESM_MIN_CONCURRENCY;

/**
 * The window of the worker's metrics one decision of the control loop reads (`CONCURRENCY_WINDOW_SECONDS`): one
 * minute, the resolution of EMF metrics, so the limit reacts within about two minutes of a burst of contention.
 *
 * @internal
 */
export const CONCURRENCY_WINDOW = Duration.minutes(1);

/**
 * True when a breaker also runs the control loop of the mapping's `MaximumConcurrency`: mode `maximum-concurrency`
 * (a provisioned mapping has no `MaximumConcurrency` to move) and `adaptiveConcurrency` not false.
 *
 * @internal
 */
export function steersConcurrency(settings: ResolvedWorkerSettings): boolean {
  return (
    settings.breaker !== undefined &&
    settings.scalingMode === 'maximum-concurrency' &&
    settings.adaptiveConcurrency !== undefined
  );
}

/**
 * The `BREAKER_*` variables of a breaker function, either store's: the mapping it controls, the scaling it restores
 * and its thresholds; when it steers the mapping's `MaximumConcurrency` ({@link steersConcurrency}) the
 * `CONCURRENCY_*` ones of its control loop too: the floor (`concurrencyFloor`), the window, and where the worker's
 * metrics are (its namespace and `service` dimension, read from `environment`'s Powertools variables, the
 * worker's own). Without them the breaker's loop is off (`CONCURRENCY_ADAPTIVE` defaults to false).
 *
 * @internal
 */
export function breakerEnvironment(
  settings: ResolvedWorkerSettings,
  eventSource: SqsEventSource,
  environment: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const breaker = settings.breaker as NonNullable<ResolvedWorkerSettings['breaker']>;
  const pollers = settings.provisionedPollers;
  const adaptive = steersConcurrency(settings) ? settings.adaptiveConcurrency : undefined;
  return {
    BREAKER_MAPPING_UUID: eventSource.eventSourceMappingId,
    BREAKER_SCALING_MODE: settings.scalingMode,
    ...(pollers
      ? {
          BREAKER_MINIMUM_POLLERS: String(pollers.minimumPollers),
          BREAKER_MAXIMUM_POLLERS: String(pollers.maximumPollers),
        }
      : { BREAKER_MAX_CONCURRENCY: String(settings.maxConcurrency) }),
    BREAKER_HALF_OPEN_CONCURRENCY: String(breaker.halfOpenConcurrency),
    BREAKER_FAILURE_THRESHOLD: String(breaker.failureThreshold),
    BREAKER_CHECK_INTERVAL_MS: String(breaker.checkInterval.toMilliseconds()),
    BREAKER_MIN_OPEN_MS: String(breaker.minOpen.toMilliseconds()),
    BREAKER_HALF_OPEN_MS: String(breaker.halfOpen.toMilliseconds()),
    BREAKER_RUN_GUARD_MS: String(BREAKER_RUN_GUARD.toMilliseconds()),
    ...(adaptive
      ? {
          CONCURRENCY_ADAPTIVE: 'true',
          CONCURRENCY_FLOOR: String(adaptive.floor),
          CONCURRENCY_WINDOW_SECONDS: String(CONCURRENCY_WINDOW.toSeconds()),
          ...(environment.POWERTOOLS_METRICS_NAMESPACE
            ? { CONCURRENCY_METRICS_NAMESPACE: environment.POWERTOOLS_METRICS_NAMESPACE }
            : {}),
          ...(environment.POWERTOOLS_SERVICE_NAME
            ? { CONCURRENCY_METRICS_SERVICE: environment.POWERTOOLS_SERVICE_NAME }
            : {}),
        }
      : {}),
  };
}

/**
 * Lets a breaker function control the worker's event source mapping (read, update and read the tags of this one
 * mapping, nothing else of Lambda), read the worker's metrics when it steers the mapping's `MaximumConcurrency`
 * (`cloudwatch:GetMetricData`), and runs it every minute, never retried.
 *
 * @internal
 */
export function scheduleBreaker(
  scope: Construct,
  breakerFn: lambda.Function,
  eventSource: SqsEventSource,
  settings: ResolvedWorkerSettings,
): void {
  breakerFn.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'ControlTheWorkerEventSourceMapping',
      actions: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:ListTags'],
      resources: [eventSource.eventSourceMappingArn],
    }),
  );
  if (steersConcurrency(settings)) {
    breakerFn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadTheWorkerMetrics',
        actions: ['cloudwatch:GetMetricData'],
        resources: ['*'],
      }),
    );
    if (breakerFn.role) {
      Validations.of(breakerFn.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "cloudwatch:GetMetricData supports no resource-level permissions (AWS's service authorization reference lists no resource type for it), so AWS requires Resource \"*\". It only reads metrics: the breaker's control loop of the mapping's MaximumConcurrency reads the worker's signals of load.",
      });
    }
  }
  breakerFn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
  new events.Rule(scope, 'BreakerSchedule', {
    description: 'Runs the event source mapping breaker',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    targets: [new targets.LambdaFunction(breakerFn, { retryAttempts: 0 })],
  });
}
