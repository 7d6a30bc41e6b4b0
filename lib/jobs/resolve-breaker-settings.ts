import { Duration } from 'aws-cdk-lib';
import type { BreakerSettingsResolved, ScalingMode } from '../resolve-worker-settings.ts';
import { ESM_MAX_CONCURRENCY, ESM_MIN_CONCURRENCY, isToken, type SettingChecks } from '../setting-checks.ts';
import type { WorkerSettings } from '../worker-settings.ts';

/**
 * The breaker's settings after defaults; undefined when `breaker` is false or with runtime "fargate" (no event
 * source mapping: the poller pauses itself). Half-open must not run above the mapping's `maxConcurrency`.
 *
 * @internal
 */
export function resolveBreakerSettings(
  props: Omit<WorkerSettings, 'vpc'>,
  values: { readonly fargate: boolean; readonly scalingMode: ScalingMode; readonly concurrency: number },
  problems: string[],
  { range, seconds, durationRange }: SettingChecks,
): BreakerSettingsResolved | undefined {
  const { fargate, scalingMode, concurrency } = values;
  let breaker: BreakerSettingsResolved | undefined;
  if (props.breaker !== false && !fargate) {
    breaker = {
      checkInterval: props.breakerCheckInterval ?? Duration.seconds(10),
      failureThreshold: props.breakerFailureThreshold ?? 2,
      minOpen: props.breakerMinOpen ?? Duration.seconds(60),
      halfOpen: props.breakerHalfOpen ?? Duration.seconds(60),
      halfOpenConcurrency: props.breakerHalfOpenConcurrency ?? 2,
    };
    durationRange('breakerCheckInterval', seconds('breakerCheckInterval', breaker.checkInterval), 1, 30);
    durationRange('breakerMinOpen', seconds('breakerMinOpen', breaker.minOpen), 10, 3600);
    durationRange('breakerHalfOpen', seconds('breakerHalfOpen', breaker.halfOpen), 0, 3600);
    range('breakerFailureThreshold', props.breakerFailureThreshold, 1, 100);
    const half = breaker.halfOpenConcurrency;
    if (
      range(
        'breakerHalfOpenConcurrency',
        props.breakerHalfOpenConcurrency,
        ESM_MIN_CONCURRENCY,
        ESM_MAX_CONCURRENCY,
      )
    ) {
      if (
        scalingMode === 'maximum-concurrency' &&
        !isToken(half) &&
        !isToken(concurrency) &&
        concurrency >= ESM_MIN_CONCURRENCY &&
        half > concurrency
      ) {
        problems.push(
          `breakerHalfOpenConcurrency (${half}) must not exceed maxConcurrency (${concurrency}): half-open runs the mapping below its configured scaling; lower breakerHalfOpenConcurrency`,
        );
      }
    }
  }
  return breaker;
}
