import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { loadConfig } from '../config.ts';
import { collectHealth, type HealthFigures } from '../health/collect-health.ts';
import { runHealthCheck } from '../health/run-health-check.ts';
import { createSql } from '../postgres/db.ts';

// Cold start: configuration is read and validated once; clients live at module scope and are reused. The module
// scope also keeps the deadlock counter of the previous check (lambda/health/collect-health.ts).
const config = loadConfig();
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
  serviceName,
});
const sql = createSql({ ...config.database, poolSize: 1 }, { applicationName: `${config.consumer}-health` });

/**
 * The health job, invoked on a schedule (EventBridge, every minute by default): reads the figures of
 * {@link collectHealth} in one read-only transaction and publishes them as EMF metrics, with the `HealthCheck`
 * heartbeat the "health job not running" alarm watches. A failed check throws, so the function's Errors metric
 * counts it and no heartbeat is published. The log line carries figures only, never a payload.
 */
export const handler = (): Promise<HealthFigures> =>
  runHealthCheck(
    () =>
      collectHealth(sql, {
        consumer: config.consumer,
        statementTimeoutMs: config.health.statementTimeoutMs,
        longTransactionMs: config.health.longTransactionMs,
      }),
    { logger, metrics },
  );
