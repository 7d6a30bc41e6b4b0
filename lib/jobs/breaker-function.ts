import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Construct } from 'constructs';
import type { ResolvedWorkerSettings } from '../resolve-worker-settings.ts';

/** The breaker runs every minute for its timeout less this guard. @internal */
export const BREAKER_TIMEOUT = Duration.seconds(55);
const BREAKER_RUN_GUARD = Duration.seconds(5);

/**
 * The `BREAKER_*` variables of a breaker function, either store's: the mapping it controls, the scaling it restores
 * and its thresholds.
 *
 * @internal
 */
export function breakerEnvironment(
  settings: ResolvedWorkerSettings,
  eventSource: SqsEventSource,
): Record<string, string> {
  const breaker = settings.breaker as NonNullable<ResolvedWorkerSettings['breaker']>;
  const pollers = settings.provisionedPollers;
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
  };
}

/**
 * Lets a breaker function control the worker's event source mapping (read, update and read the tags of this one
 * mapping, nothing else of Lambda) and runs it every minute, never retried.
 *
 * @internal
 */
export function scheduleBreaker(
  scope: Construct,
  breakerFn: lambda.Function,
  eventSource: SqsEventSource,
): void {
  breakerFn.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'ControlTheWorkerEventSourceMapping',
      actions: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:ListTags'],
      resources: [eventSource.eventSourceMappingArn],
    }),
  );
  breakerFn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
  new events.Rule(scope, 'BreakerSchedule', {
    description: 'Runs the event source mapping breaker',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    targets: [new targets.LambdaFunction(breakerFn, { retryAttempts: 0 })],
  });
}
