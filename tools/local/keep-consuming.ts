import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import postgres from 'postgres';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { Poller } from '../../lambda/runtimes/poller/start-poller.ts';
import type { WorkerOptions } from '../../lambda/runtimes/worker-options.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { startEventSourceMapping } from './event-source-mapping.ts';
import { startLocalPoller } from './local-poller.ts';
import type { LocalStack } from './local-stack.ts';

/** Options of {@link keepConsuming}. */
export interface KeepConsumingOptions {
  readonly stack: LocalStack;
  /** Invocations (records in flight for the poller) at once. @default 4 */
  readonly concurrency?: number;
  /** What consumes the queue, as in the scenario. @default 'event-source-mapping' */
  readonly runtime?: 'event-source-mapping' | 'poller';
  /** `worker_inbox.consumer`. @default 'case-worker' */
  readonly consumer?: string;
}

/** A worker consuming the local stack's queue until {@link KeptWorker.stop}. */
export interface KeptWorker {
  /** Stops receiving; records in flight settle first. */
  stop(): Promise<void>;
}

/**
 * The worker of `npm start -- --keep` once the scenario's summary is printed: the example domain's handlers (and
 * the toolkit's canary, which every worker registers) on the stack's store, behind the local event source mapping
 * or the poller, with the worker role's clients, so that what is sent to the queue while the stack stays up —
 * `sqs-worker smoke`, your own messages — is consumed. Logs are quiet (the summary stays readable); the backoff is
 * the scenario's short one (1 to 4 s), so a never-recovering message reaches the DLQ in seconds.
 */
export async function keepConsuming(options: KeepConsumingOptions): Promise<KeptWorker> {
  const { stack } = options;
  const concurrency = options.concurrency ?? 4;
  const consumer = options.consumer ?? 'case-worker';
  const worker = stack.clients('worker');
  const common = {
    consumer,
    logger: new Logger({ serviceName: consumer, logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerLocal', serviceName: consumer }),
    backoff: { baseSeconds: 1, maxSeconds: 4 },
  };
  const closers: (() => Promise<unknown>)[] = [];
  let workerOptions: WorkerOptions;
  if (stack.dynamodb) {
    workerOptions = {
      ...common,
      handlers: exampleDynamoHandlers,
      store: createDynamoStore({
        client: worker.dynamodb ?? stack.dynamodb.client,
        tableName: stack.dynamodb.tableName,
      }),
      sqs: worker.sqs,
      recordConcurrency: 4,
    };
  } else {
    // As `createSql` names a deployed worker's sessions: the consumer is their application_name.
    const sql = createSql(
      { kind: 'url', url: stack.databaseUrl, poolSize: concurrency },
      { applicationName: consumer },
    );
    closers.push(() => sql.end({ timeout: 5 }));
    workerOptions = { ...common, handlers: exampleHandlers, sql, sqs: worker.sqs, s3: worker.s3 };
  }
  if (options.runtime === 'poller' && !stack.dynamodb) {
    let poller: Poller | undefined;
    const poll = stack.clients('poller');
    const engine = createBatchEngine({
      ...workerOptions,
      sqs: poll.sqs,
      s3: poll.s3,
      recordConcurrency: concurrency,
      onRecordSettled: (outcome) => poller?.recordSettled(outcome),
    });
    const local = await startLocalPoller({
      bindOutcomes: (started) => {
        poller = started;
      },
      sqs: poll.sqs,
      inspect: stack.sqs,
      queueUrl: stack.queues.queueUrl,
      processBatch: engine.processBatch,
      concurrency,
      batchSize: 10,
      waitSeconds: 1,
      visibilitySeconds: 3,
      probe: createDatabaseProbe(
        () => postgres(stack.databaseUrl, { max: 1, connect_timeout: 2, onnotice: () => {} }),
        2000,
      ),
      logger: common.logger,
      metrics: common.metrics,
    });
    closers.unshift(() => local.stop());
  } else {
    const esm = await startEventSourceMapping({
      // Lambda's event source mapping polls with the function's role.
      sqs: worker.sqs,
      queueUrl: stack.queues.queueUrl,
      handler: createWorker(workerOptions),
      functionName: consumer,
      batchSize: 10,
      maxConcurrency: concurrency,
      waitTimeSeconds: 1,
      functionTimeoutMs: 30_000,
      region: stack.region,
    });
    closers.unshift(() => esm.stop());
  }
  return {
    async stop() {
      for (const close of closers) await close().catch(() => undefined);
    },
  };
}
