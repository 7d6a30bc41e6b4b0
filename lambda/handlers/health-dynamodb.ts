import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { loadConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { runHealthCheck } from '../health/run-health-check.ts';
import { collectDynamoHealth, type DynamoHealthFigures } from '../stores/dynamodb/collect-dynamo-health.ts';
import { documentClient } from '../stores/dynamodb/document-client.ts';
import { dynamoStoreFromConfig } from '../stores/dynamodb/dynamo-store-from-config.ts';

// Cold start: configuration is read and validated once; the client lives at module scope and is reused.
const config = loadConfig();
if (config.store.kind !== 'dynamodb') {
  throw new ConfigError(
    'The DynamoDB health job needs WORKER_STORE=dynamodb and DYNAMODB_TABLE; for the PostgreSQL store deploy lambda/handlers/health.ts',
  );
}
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
  serviceName,
});
const store = dynamoStoreFromConfig(config.store);

/**
 * The health job of the DynamoDB store, invoked on a schedule: reads the figures of {@link collectDynamoHealth} (one
 * bounded Scan) and publishes them under the PostgreSQL health job's metric names (`InboxLeasesExpired` among them)
 * and the `HealthCheck` heartbeat. A failed check throws (the function's Errors metric counts it, no heartbeat). The log
 * line carries figures only.
 */
export const handler = (): Promise<DynamoHealthFigures> =>
  runHealthCheck(
    async () => {
      const figures = await collectDynamoHealth(
        { doc: documentClient(store), tableName: store.tableName },
        { consumer: config.consumer },
      );
      if (figures.truncated) {
        logger.warn('health_check_truncated', {
          scanned: figures.scanned,
          detail: 'the table holds more items than one check reads; the counts cover part of it',
        });
      }
      return figures;
    },
    { logger, metrics },
  );
