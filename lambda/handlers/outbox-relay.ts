import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { loadConfig } from '../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { type RelayOutboxResult, relayOutbox } from '../outbox/relay-outbox.ts';
import { createSql } from '../postgres/db.ts';

// Cold start: configuration is read and validated once; clients live at module scope and are reused.
const config = loadConfig();
const queueUrl = config.outbox.queueUrl;
if (!queueUrl)
  throw new ConfigError('OUTBOX_QUEUE_URL is required by the outbox relay: set it to the worker queue URL');
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'outbox-relay';
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
  serviceName,
});
const sql = createSql(config.database, { applicationName: 'outbox-relay' });
const sqs = new SQSClient(
  config.sqsEndpoint ? { endpoint: config.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
);

/**
 * The outbox relay Lambda, invoked on a schedule (EventBridge): publishes due outbox rows until there is no
 * work or less than `OUTBOX_RUN_GUARD_MS` is left of the invocation, then emits OutboxPublished, OutboxFailed
 * and OutboxOldestPendingAgeMs. Relays may overlap (a slow run and the next schedule): leases and
 * `skip locked` keep them on disjoint rows.
 */
export const handler = async (_event: unknown, context: Context): Promise<RelayOutboxResult> => {
  const deadline = Date.now() + context.getRemainingTimeInMillis() - config.outbox.runGuardMs;
  try {
    return await relayOutbox({
      sql,
      sqs,
      queueUrl,
      fairQueueGroups: config.outbox.fairQueueGroups,
      deadline,
      logger,
      metrics,
      batchSize: config.outbox.batchSize,
      leaseMs: config.outbox.leaseMs,
      relayId: `relay-${context.awsRequestId}`.slice(0, 100),
    });
  } finally {
    metrics.publishStoredMetrics();
  }
};
