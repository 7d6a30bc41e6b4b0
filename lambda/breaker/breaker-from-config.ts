import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { BreakerConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { createFleetLimit } from './fleet-limit.ts';
import type { MappingScaling } from './mapping-control.ts';
import { type Breaker, createBreaker } from './run-breaker.ts';

/**
 * The breaker of a deployed breaker function, from its `BREAKER_*` settings and its store's probe (PostgreSQL's
 * `select 1`, DynamoDB's GetItem): the mapping it controls, its scaling to restore, its thresholds, and a Lambda
 * client, logger and metrics of its own; with `CONCURRENCY_ADAPTIVE=true` (mode `maximum-concurrency`) the control loop
 * of the mapping's `MaximumConcurrency` ({@link createFleetLimit}) between `CONCURRENCY_FLOOR` and
 * `BREAKER_MAX_CONCURRENCY`. Both stores' breaker entries are this and their probe.
 *
 * @throws ConfigError when `BREAKER_MAPPING_UUID` is not set.
 * @internal
 */
export function breakerFromConfig(settings: BreakerConfig, probe: () => Promise<unknown>): Breaker {
  const mappingUuid = settings.mappingUuid;
  if (!mappingUuid) {
    throw new ConfigError(
      'BREAKER_MAPPING_UUID is required by the breaker: set it to the UUID of the worker event source mapping',
    );
  }
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'sqs-inbox-worker';
  const scaling: MappingScaling =
    settings.scalingMode === 'provisioned'
      ? {
          mode: 'provisioned',
          minimumPollers: settings.minimumPollers,
          maximumPollers: settings.maximumPollers,
        }
      : { mode: 'maximum-concurrency', maxConcurrency: settings.maxConcurrency };
  const client = new LambdaClient({});
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
    serviceName,
  });
  const { concurrency } = settings;
  const fleetLimit =
    concurrency.enabled && scaling.mode === 'maximum-concurrency'
      ? createFleetLimit({
          cloudWatch: new CloudWatchClient({}),
          lambda: client,
          mappingUuid,
          source: { namespace: concurrency.namespace, service: concurrency.service },
          limit: { floor: concurrency.floor, ceiling: scaling.maxConcurrency },
          windowSeconds: concurrency.windowSeconds,
          logger,
          metrics,
        })
      : undefined;
  return createBreaker({
    client,
    mappingUuid,
    probe,
    probeTimeoutMs: settings.probeTimeoutMs,
    scaling,
    halfOpenConcurrency: settings.halfOpenConcurrency,
    settings: {
      failureThreshold: settings.failureThreshold,
      minOpenMs: settings.minOpenMs,
      probeBackoffBaseMs: settings.probeBackoffBaseMs,
      probeBackoffMaxMs: settings.probeBackoffMaxMs,
      halfOpenMs: settings.halfOpenMs,
    },
    logger,
    metrics,
    ...(fleetLimit ? { fleetLimit } : {}),
  });
}
