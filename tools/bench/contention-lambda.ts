import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import postgres from 'postgres';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { createWorker, type WorkerHandler } from '../../lambda/runtimes/lambda/create-worker.ts';
import { type EventSourceMapping, startEventSourceMapping } from '../local/event-source-mapping.ts';
import { FedMetrics } from '../local/fed-metrics.ts';
import { type LocalConcurrencyLoop, startLocalConcurrencyLoop } from '../local/local-concurrency-loop.ts';
import { createLocalQueues } from '../local/local-queues.ts';
import type { ContentionPass } from './contention.ts';
import {
  awaitSettled,
  type ContentionPassInput,
  type ContentionPlan,
  contentionFigures,
  holdHotRows,
  hotIncrement,
  receivesHistogram,
  sendHotMessages,
} from './contention-rig.ts';

/** The worker's metrics namespace and `service` dimension: what the loop's GetMetricData reads. */
const SOURCE = { namespace: 'SqsInboxWorkerBench', service: 'bench-contention' } as const;

/** What the mapping's handler wrapper counted. */
interface LambdaTally {
  /** Each message's highest `ApproximateReceiveCount` seen: SQS's own count toward maxReceiveCount. */
  readonly receiveCount: Map<string, number>;
  retryable: number;
  readonly recordMs: number[];
  /** The mapping's `MaximumConcurrency` each time it changed, with the seconds since the pass started. */
  readonly limits: { at: number; limit: number }[];
}

/** Notes the mapping's `MaximumConcurrency` when it moved since the last look. */
function noteLimit(tally: LambdaTally, esm: EventSourceMapping | undefined, started: number): void {
  if (!esm || tally.limits.at(-1)?.limit === esm.maxConcurrency) return;
  tally.limits.push({ at: (performance.now() - started) / 1000, limit: esm.maxConcurrency });
}

/**
 * The deployed handler (`createWorker`) wrapped to count what the mapping delivered: each event's records and their
 * `ApproximateReceiveCount`, the batch response's `batchItemFailures` as retryables (every record when the
 * invocation throws: a batch in which every record failed), and for each record the invocation's time from its start
 * (the batch's receive, the batching window being 0) to its end, when the mapping deletes the record or leaves it.
 */
function countingHandler(
  worker: WorkerHandler,
  tally: LambdaTally,
  mapping: () => EventSourceMapping | undefined,
  started: number,
) {
  return async (event: SQSEvent, context: Context) => {
    const begun = performance.now();
    noteLimit(tally, mapping(), started);
    for (const record of event.Records) {
      const count = Number(record.attributes.ApproximateReceiveCount);
      tally.receiveCount.set(
        record.messageId,
        Math.max(count, tally.receiveCount.get(record.messageId) ?? 0),
      );
    }
    let failed = event.Records.length;
    try {
      const response = await worker(event, context);
      failed = response.batchItemFailures.length;
      return response;
    } finally {
      tally.retryable += failed;
      const ms = performance.now() - begun;
      for (const _ of event.Records) tally.recordMs.push(ms);
    }
  };
}

/** The worker's postgres.js client: a pool for every record in flight at the ceiling, the pass's `lock_timeout`. */
function workerSql(input: ContentionPassInput): postgres.Sql {
  const { invocations, recordConcurrency } = input.settings.lambda;
  return postgres(input.url, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: invocations * recordConcurrency,
    prepare: false,
    onnotice: () => {},
    connection: { lock_timeout: input.settings.lockTimeoutMs },
  });
}

/** The adaptive pass's loop: the deployed breaker and its control loop over the mapping, fed the worker's EMF. */
function adaptiveLoop(input: ContentionPassInput, esm: EventSourceMapping, metrics: FedMetrics) {
  const probe = createDatabaseProbe(
    () => postgres(input.url, { max: 1, onnotice: () => {}, connect_timeout: 5 }),
    1000,
  );
  const loop = startLocalConcurrencyLoop({
    esm,
    probe,
    floor: input.settings.lambda.floor,
    source: SOURCE,
    logger: new Logger({ serviceName: 'bench-breaker', logLevel: 'SILENT' }),
    metrics: { addMetric() {}, publishStoredMetrics() {} },
  });
  metrics.feed((document) => loop.metricData.ingest(document));
  return { loop, probe };
}

/**
 * One Lambda pass: a fresh queue (DLQ after 5 receives), the messages sent, the slow phase started, and the worker's
 * deployed handler (`createWorker`, backoff 1–4 s, the pass's `lock_timeout`) invoked by the local event source
 * mapping at `MaximumConcurrency` = the setting's invocations, each processing `recordConcurrency` records at a time.
 * `adaptive` adds the breaker's control loop (`startLocalConcurrencyLoop`, on its 30× clock) moving the mapping's
 * `MaximumConcurrency` down to the floor and back from the invocations' own metrics; `fixed` runs without it. Ends
 * when every message completed or sits in the DLQ.
 */
export async function runLambdaPass(
  plan: ContentionPlan,
  input: ContentionPassInput,
): Promise<ContentionPass> {
  const { admin, sqs, settings } = input;
  const { invocations, recordConcurrency, batchSize } = settings.lambda;
  const run = `lambda-${plan.mode}-${randomBytes(3).toString('hex')}`;
  const client: SQSClient = sqs.client();
  const queues = await createLocalQueues(client, {
    name: `bench-contention-${run}`,
    maxReceiveCount: 5,
    visibilityTimeoutSeconds: 30,
  });
  await sendHotMessages(client, queues.queueUrl, { count: plan.messages, rows: settings.hotRows, run });
  const consumer = `bench-contention-${run}`;
  const sql = workerSql(input);
  const metrics = new FedMetrics({ namespace: SOURCE.namespace, serviceName: SOURCE.service });
  const worker = createWorker({
    consumer,
    handlers: [hotIncrement],
    sql,
    sqs: client,
    logger: new Logger({ serviceName: SOURCE.service, logLevel: 'SILENT' }),
    metrics,
    recordConcurrency,
    backoff: { baseSeconds: 1, maxSeconds: 4 },
  });
  const tally: LambdaTally = { receiveCount: new Map(), retryable: 0, recordMs: [], limits: [] };
  let esm: EventSourceMapping | undefined;
  let adaptive: { loop: LocalConcurrencyLoop; probe: { close(): Promise<void> } } | undefined;
  const started = performance.now();
  const slow = holdHotRows(admin, plan.holdMs, plan.slowForMs);
  let settled = { completed: 0, dlq: 0 };
  let seconds = 0;
  try {
    esm = await startEventSourceMapping({
      sqs: client,
      queueUrl: queues.queueUrl,
      handler: countingHandler(worker, tally, () => esm, started),
      batchSize,
      maxConcurrency: invocations,
      waitTimeSeconds: 1,
      functionTimeoutMs: 20_000,
    });
    if (plan.mode === 'adaptive') adaptive = adaptiveLoop(input, esm, metrics);
    settled = await awaitSettled(
      input,
      { consumer, dlqUrl: queues.dlqUrl, client, messages: plan.messages },
      () => noteLimit(tally, esm, started),
    );
    seconds = (performance.now() - started) / 1000;
  } finally {
    await adaptive?.loop.stop();
    await esm?.stop();
    await adaptive?.probe.close();
    await sql.end({ timeout: 5 });
    await slow;
  }
  const path = tally.limits.map((step) => `${step.limit} (${step.at.toFixed(1)} s)`).join(' → ');
  input.log(
    `contention, lambda, ${plan.scenario} ${plan.slowForMs / 1000} s, ${plan.mode}: ${settled.completed} completed, ${settled.dlq} in the DLQ in ${seconds.toFixed(1)} s; MaximumConcurrency ${path}; receives per message ${receivesHistogram(tally.receiveCount.values())}`,
  );
  let extraReceives = 0;
  for (const count of tally.receiveCount.values()) extraReceives += count - 1;
  const lowestLimit = Math.min(invocations, ...tally.limits.map((step) => step.limit));
  const counts = {
    seconds,
    ...settled,
    retryable: tally.retryable,
    extraReceives,
    recordMs: tally.recordMs,
    lowestLimit,
  };
  return contentionFigures('lambda', plan, counts);
}
