import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { loadConfig } from '../config.ts';
import { METRIC_NAMES } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { createSql } from '../postgres/db.ts';
import { type PurgeRetentionResult, purgeRetention } from '../retention/purge-retention.ts';

// Cold start: configuration is read and validated once; clients live at module scope and are reused.
const config = loadConfig();
const { retention } = config;
if (retention.sourceRetentionSeconds === undefined || retention.dlqRetentionSeconds === undefined) {
  throw new ConfigError(
    'RETENTION_SOURCE_SECONDS and RETENTION_DLQ_SECONDS are required by the retention job: set them to the source queue and DLQ MessageRetentionPeriod',
  );
}
const retentions = {
  sourceRetentionSeconds: retention.sourceRetentionSeconds,
  dlqRetentionSeconds: retention.dlqRetentionSeconds,
};
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
  serviceName,
});
const sql = createSql(
  { ...config.database, poolSize: 1 },
  { applicationName: `${config.consumer}-retention` },
);

/**
 * The retention job, invoked on a schedule (EventBridge): {@link purgeRetention} in batches until nothing is due
 * or less than `RETENTION_RUN_GUARD_MS` is left, then `RetentionRowsRemoved` (Count) and one log line with the rows
 * removed per table (counts only). A window shorter than the queues' retentions throws (RetentionWindowError), so
 * the function's errors alarm fires and nothing is deleted.
 */
export const handler = async (_event: unknown, context: Context): Promise<PurgeRetentionResult> => {
  try {
    const result = await purgeRetention(sql, {
      consumer: config.consumer,
      retentions,
      inboxSeconds: retention.inboxSeconds,
      outboxSeconds: retention.outboxSeconds,
      effectLogSeconds: retention.effectLogSeconds,
      quarantineSeconds: retention.quarantineSeconds,
      batchSize: retention.batchSize,
      deadline: Date.now() + context.getRemainingTimeInMillis() - retention.runGuardMs,
    });
    const total = Object.values(result.removed).reduce((sum, count) => sum + count, 0);
    metrics.addMetric(METRIC_NAMES.retentionRowsRemoved, MetricUnit.Count, total);
    logger.info('retention_run', { ...result, total });
    return result;
  } catch (error) {
    logger.error('retention_run_failed', { error: (error as Error).message });
    throw error;
  } finally {
    metrics.publishStoredMetrics();
  }
};
