import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createBreaker, createDatabaseProbe, type MappingScaling, runBreaker } from '../breaker/index.ts';
import { loadConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { createSql } from '../postgres/db.ts';

// Cold start: configuration is read and validated once; clients and the breaker's state live at module scope,
// so one warm environment (reserved concurrency 1) carries the state from one scheduled run to the next.
const config = loadConfig();
const { breaker: settings } = config;
const mappingUuid = settings.mappingUuid;
if (!mappingUuid) {
  throw new ConfigError(
    'BREAKER_MAPPING_UUID is required by the breaker: set it to the UUID of the worker event source mapping',
  );
}
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'sqs-inbox-worker';
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
  serviceName,
});
// A pool of one, thrown away when a probe times out (a stalled server would hold every later probe).
const probe = createDatabaseProbe(
  () => createSql({ ...config.database, poolSize: 1 }, { applicationName: 'breaker' }),
  settings.probeTimeoutMs,
);
const scaling: MappingScaling =
  settings.scalingMode === 'provisioned'
    ? {
        mode: 'provisioned',
        minimumPollers: settings.minimumPollers,
        maximumPollers: settings.maximumPollers,
      }
    : { mode: 'maximum-concurrency', maxConcurrency: settings.maxConcurrency };
const breaker = createBreaker({
  client: new LambdaClient({}),
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
});

/**
 * The breaker Lambda, invoked every minute (EventBridge): ticks every `BREAKER_CHECK_INTERVAL_MS` until
 * `BREAKER_RUN_GUARD_MS` before its timeout, disabling the worker's event source mapping while the database is
 * unavailable and enabling it again (half-open, then the configured scaling) once probes succeed.
 */
export const handler = async (_event: unknown, context: Context) => {
  const until = Date.now() + context.getRemainingTimeInMillis() - settings.runGuardMs;
  const state = await runBreaker(breaker, { until, intervalMs: settings.checkIntervalMs });
  return { status: state?.status, held: state?.held ?? false };
};
