import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { onTestFinished } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import type { BatchResult, ProcessBatch } from '../../lambda/runtimes/poller/process-batch.ts';
import {
  type Poller,
  type PollerEvent,
  type PollerOptions,
  startPoller,
} from '../../lambda/runtimes/poller/start-poller.ts';
import type { WorkerOptions } from '../../lambda/runtimes/worker-options.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import { alwaysRetryable, slowLedgerWrite } from '../support/test-handlers.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

/** A delivery the engine received: which message, with which receive count, when. */
export interface Delivery {
  readonly messageId: string;
  readonly receiveCount: number;
  readonly at: number;
}

/** Log lines of the poller, captured. */
export interface CapturedLine {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly extra?: Record<string, unknown>;
  readonly at: number;
}

/**
 * Starts the poller in this process over the real engine (the example handlers plus the test handlers), with a
 * capturing logger, every event and every delivery recorded. Stopped when the test that started it ends.
 */
export async function startTestPoller(options: {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly sql: postgres.Sql;
  readonly probe: () => Promise<unknown>;
  readonly poller?: Partial<
    Omit<PollerOptions, 'sqs' | 'queueUrl' | 'processBatch' | 'probe' | 'logger' | 'metrics'>
  >;
  readonly worker?: Partial<
    Omit<WorkerOptions, 'sql' | 'handlers' | 'logger' | 'metrics' | 'onOutcome' | 'onRecordSettled'>
  >;
}) {
  const outcomes = new OutcomeRecorder();
  const lines: CapturedLine[] = [];
  const line =
    (level: CapturedLine['level']) =>
    (message: unknown, extra?: unknown): void => {
      lines.push({
        level,
        message: String(message),
        extra: extra as Record<string, unknown>,
        at: Date.now(),
      });
    };
  const logger = { info: line('info'), warn: line('warn'), error: line('error') } as never;
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' });
  let poller: Poller | undefined;
  const engine = createBatchEngine({
    consumer: 'case-worker',
    handlers: [...exampleHandlers, alwaysRetryable, slowLedgerWrite],
    sql: options.sql,
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics,
    onOutcome: outcomes.onOutcome,
    onRecordSettled: (outcome) => poller?.recordSettled(outcome),
    recordConcurrency: options.sql.options.max,
    backoff: { baseSeconds: 1, maxSeconds: 2 },
    ...options.worker,
  });
  const deliveries: Delivery[] = [];
  const results: BatchResult[] = [];
  const processBatch: ProcessBatch = async (records, budget) => {
    for (const record of records) {
      deliveries.push({
        messageId: record.messageId,
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
        at: Date.now(),
      });
    }
    const result = await engine.processBatch(records, budget);
    results.push(result);
    return result;
  };
  const events: { at: number; event: PollerEvent }[] = [];
  poller = await startPoller({
    sqs: options.sqs,
    queueUrl: options.queueUrl,
    processBatch,
    concurrency: options.sql.options.max,
    waitSeconds: 1,
    probe: options.probe,
    logger,
    metrics,
    onEvent: (event) => events.push({ at: Date.now(), event }),
    ...options.poller,
  });
  const running = poller;
  // Stopped when the test that started it ends (an afterAll registered inside a test would never run).
  onTestFinished(() => running.stop({ timeoutMs: 5000 }).then(() => {}));
  return { poller: running, outcomes, lines, events, deliveries, results };
}
