import { join } from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { OUTBOX_STREAM_FILTER } from '../../../lambda/stores/dynamodb/outbox-stream-filter.ts';
import { bundledFunction, PROJECT_ROOT } from '../../bundled-function.ts';
import type { WorkerTable } from './worker-table.ts';

/** Inputs of {@link createDynamoOutboxRelay}. */
export interface DynamoOutboxRelayInputs {
  readonly table: WorkerTable;
  /** The queue the relay publishes to (the worker's). */
  readonly queue: sqs.IQueue;
  /** The Powertools variables and the table's (`WORKER_STORE`, `DYNAMODB_TABLE`, retention). */
  readonly environment: Readonly<Record<string, string>>;
  readonly production: boolean;
}

/** The relay's parts: its function, its event source mapping, and where given-up records go. */
export interface DynamoOutboxRelay {
  readonly relayFunction: lambda.Function;
  readonly eventSource: DynamoEventSource;
  /** The mapping's on-failure destination: a pointer per batch given up after its retries. */
  readonly failureQueue: sqs.Queue;
}

/** Retries of a failed batch before its records go to the failure queue (each retry resumes from the failure). */
const RELAY_RETRY_ATTEMPTS = 10;

/**
 * The outbox relay of the DynamoDB store (pattern document §16), driven by the table's stream: a function outside a
 * VPC behind an event source mapping on the stream, filtered on the INSERT of outbox items (`OUTBOX_STREAM_FILTER`:
 * the relay's own marks and every other item never invoke it), from the trim horizon, with `ReportBatchItemFailures`
 * (a failure resumes the shard from it), 10 retries, and an SQS on-failure destination for what is given up (its
 * items stay PENDING: `docs/outbox.md` says how to send them again). The function may send to the queue, read the
 * stream, and read and mark outbox items only.
 *
 * @internal
 */
export function createDynamoOutboxRelay(
  scope: Construct,
  inputs: DynamoOutboxRelayInputs,
): DynamoOutboxRelay {
  const relayFunction = bundledFunction(scope, 'OutboxRelayFunction', {
    entry: join(PROJECT_ROOT, 'lambda/handlers/outbox-relay-dynamodb.ts'),
    description: "Publishes new outbox items to the source queue (DynamoDB stream of the worker's table)",
    timeout: Duration.seconds(60),
    profile: { store: 'dynamodb', tracing: false },
    environment: { ...inputs.environment, OUTBOX_QUEUE_URL: inputs.queue.queueUrl },
  });
  inputs.table.grantRelay(relayFunction);
  inputs.queue.grantSendMessages(relayFunction);
  Validations.of(relayFunction.role as Construct).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'dynamodb:ListStreams, which the stream\'s event source mapping needs (with DescribeStream, GetShardIterator and GetRecords, granted on the table\'s stream ARN only), supports no resource-level permissions, so AWS requires Resource "*" for it.',
  });
  const failureQueue = new sqs.Queue(scope, 'OutboxRelayFailures', {
    retentionPeriod: Duration.days(14),
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    removalPolicy: inputs.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
  Validations.of(failureQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason:
      "This queue IS a dead-letter queue: the on-failure destination of the outbox relay's event source mapping; it needs no DLQ of its own.",
  });
  const eventSource = new DynamoEventSource(inputs.table.table, {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: 100,
    maxBatchingWindow: Duration.seconds(1),
    retryAttempts: RELAY_RETRY_ATTEMPTS,
    reportBatchItemFailures: true,
    bisectBatchOnError: false,
    onFailure: new SqsDlq(failureQueue),
    filters: [{ pattern: JSON.stringify(OUTBOX_STREAM_FILTER) }],
  });
  relayFunction.addEventSource(eventSource);
  return { relayFunction, eventSource, failureQueue };
}

/**
 * The alarms of the stream relay, as specs for the observability (which adds the SNS actions): the relay failing
 * (function errors), the stream falling behind (`IteratorAge` above `pendingAgeSlo`: new outbox items wait that
 * long), and records given up (the failure queue holds a batch whose items stay PENDING).
 *
 * @internal
 */
export function dynamoOutboxRelayAlarmSpecs(
  relay: DynamoOutboxRelay,
  pendingAgeSlo: Duration,
): Record<string, cloudwatch.AlarmProps> {
  const fiveMinutes = Duration.minutes(5);
  return {
    OutboxRelayErrors: {
      alarmDescription:
        'The DynamoDB outbox relay failed in 2 of 3 five-minute periods: new outbox items are retried from the stream and wait meanwhile. Runbook: docs/outbox.md#on-dynamodb.',
      metric: relay.relayFunction.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    OutboxRelayIteratorAge: {
      alarmDescription: `The DynamoDB outbox relay is more than ${pendingAgeSlo.toHumanString()} behind the table's stream: events reach the queue late. Runbook: docs/outbox.md#on-dynamodb.`,
      metric: relay.relayFunction.metric('IteratorAge', {
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: pendingAgeSlo.toMilliseconds(),
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
    OutboxRelayGaveUp: {
      alarmDescription:
        'The DynamoDB outbox relay gave up stream records after its retries: their outbox items stay PENDING until sent again. Runbook: docs/outbox.md#on-dynamodb.',
      metric: relay.failureQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}
