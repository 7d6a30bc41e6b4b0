import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { loadConfig } from '../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { dynamoStoreFromConfig } from '../stores/dynamodb/dynamo-store-from-config.ts';
import { relayDynamoOutbox } from '../stores/dynamodb/relay-dynamo-outbox.ts';

// Cold start: configuration is read and validated once; clients live at module scope and are reused.
const config = loadConfig();
const queueUrl = config.outbox.queueUrl;
if (!queueUrl)
  throw new ConfigError('OUTBOX_QUEUE_URL is required by the outbox relay: set it to the worker queue URL');
if (config.store.kind !== 'dynamodb') {
  throw new ConfigError(
    'The DynamoDB outbox relay needs WORKER_STORE=dynamodb and DYNAMODB_TABLE (the table whose stream triggers it); for the PostgreSQL outbox deploy lambda/handlers/outbox-relay.ts',
  );
}
const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'outbox-relay';
const logger = new Logger({ serviceName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
  serviceName,
});
const store = dynamoStoreFromConfig(config.store);
const sqs = new SQSClient(
  config.sqsEndpoint ? { endpoint: config.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
);

/**
 * The outbox relay of the DynamoDB store, triggered by the table's stream (an event source mapping filtered on the
 * INSERT of `OUTBOX#` items, with `ReportBatchItemFailures`): sends each new outbox item to the queue and marks it
 * PUBLISHED (`relayDynamoOutbox`); a failed one is returned so that the mapping retries from it.
 */
export const handler = async (
  event: DynamoDBStreamEvent,
): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> => {
  try {
    const { batchItemFailures } = await relayDynamoOutbox(event.Records, {
      store,
      sqs,
      queueUrl,
      fairQueueGroups: config.outbox.fairQueueGroups,
      logger,
      metrics,
    });
    return { batchItemFailures };
  } finally {
    metrics.publishStoredMetrics();
  }
};
