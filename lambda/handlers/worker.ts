import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { caseEscalationRequested, exampleHandlers } from '../domain/index.ts';
import { createSql, createWorker, httpNotificationProvider, loadConfig } from '../index.ts';

// Cold start: configuration is read and validated once; clients live at module scope and are reused.
// Only what every invocation needs is imported statically (see lib/bundled-function.ts: code splitting).
const config = loadConfig();
const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer,
});
const sql = createSql(config.database, { applicationName: config.consumer });
// The escalation example calls an external service through the effect log, which needs its own connection.
const handlers = config.notificationUrl
  ? [
      ...exampleHandlers,
      caseEscalationRequested({
        effectsSql: createSql(
          { ...config.database, poolSize: 1 },
          { applicationName: `${config.consumer}-effects` },
        ),
        provider: httpNotificationProvider({ url: config.notificationUrl }),
      }),
    ]
  : exampleHandlers;
// Made when a record first needs a backoff: most cold starts never load the SDK's SQS code (a chunk of its own).
const sqs = async () => {
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  return new SQSClient(
    config.sqsEndpoint ? { endpoint: config.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
  );
};

// Made when a record first carries a payloadRef: cold starts without references never load the SDK's S3 code.
const s3 = async () => {
  const { S3Client } = await import('@aws-sdk/client-s3');
  return new S3Client(config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {});
};

/** The deployable worker: the example domain on the inbox engine. */
export const handler = createWorker({
  consumer: config.consumer,
  handlers,
  sql,
  sqs,
  s3,
  maxPayloadBytes: config.maxPayloadBytes,
  logger,
  metrics,
  terminalPolicy: config.terminalPolicy,
  recordConcurrency: config.recordConcurrency,
  commitMode: config.commitMode,
  backoff: { baseSeconds: config.backoffBaseSeconds, maxSeconds: config.backoffMaxSeconds },
  maxBusinessAttempts: config.maxBusinessAttempts,
  claimLockTimeoutMs: config.claimLockTimeoutMs,
  lockTimeoutMs: config.lockTimeoutMs,
  statementTimeoutMs: config.statementTimeoutMs,
  deadlineGuardMs: config.deadlineGuardMs,
  failInvocationOnFullBatchFailure: config.failInvocationOnFullBatchFailure,
});
