import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { recordTelemetry } from '../../lambda/worker/record-telemetry.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';

/** A real Powertools Metrics (EMF on stdout) and a silent logger. */
function sinks() {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' });
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  return { logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }), metrics, queue: 'q' };
}

let sequence = 0;
const outcome = (result: RecordOutcome['result'], failureCode?: string): RecordOutcome => ({
  messageId: `m-${++sequence}`,
  result,
  acknowledged: result !== 'RETRYABLE_FAILURE',
  ...(failureCode ? { failureCode } : {}),
  receiveCount: 1,
  processingMs: 12,
  dbTransactionMs: 8,
  messageAgeMs: 40,
});

const LOAD = ['LoadContention', 'LoadThrottle', 'LoadUnavailable', 'LoadSlow'] as const;

/** Writes each outcome's telemetry, publishes, and returns the EMF sums of the Load* metrics and the EMF lines. */
async function emitted(outcomes: RecordOutcome[]) {
  const telemetry = sinks();
  const { lines } = await captureOutput(async () => {
    for (const each of outcomes) recordTelemetry(each, telemetry);
    telemetry.metrics.publishStoredMetrics();
  });
  const sums = Object.fromEntries(LOAD.map((name) => [name, emfSum(lines, name)]));
  return { sums, lines };
}

describe('Function: recordTelemetry() — one count per retryable record of its signal of load', () => {
  it('counts each retryable signal of load once, under the worker namespace and its service dimension', async () => {
    // Prepare
    const outcomes = [
      outcome('RETRYABLE_FAILURE', 'LOCK_TIMEOUT'),
      outcome('RETRYABLE_FAILURE', 'DEADLOCK_DETECTED'),
      outcome('RETRYABLE_FAILURE', 'TRANSACTION_CONFLICT'),
      outcome('RETRYABLE_FAILURE', 'THROTTLED'),
      outcome('RETRYABLE_FAILURE', 'TOO_MANY_CONNECTIONS'),
      outcome('RETRYABLE_FAILURE', 'CONNECT_TIMEOUT'),
      outcome('RETRYABLE_FAILURE', 'DATABASE_TIMEOUT'),
    ];

    // Act
    const { sums, lines } = await emitted(outcomes);

    // Assess
    expect(sums).toEqual({ LoadContention: 3, LoadThrottle: 2, LoadUnavailable: 1, LoadSlow: 1 });
    expect(emfSum(lines, 'RetryableFailure')).toBe(7);
    const emf = lines.find((line) => '_aws' in line) as {
      _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] };
      service: string;
    };
    expect(emf._aws.CloudWatchMetrics[0]?.Namespace).toBe('SqsInboxWorkerTest');
    expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service']]);
    expect(emf.service).toBe('case-worker');
  });

  it('counts no signal of load for ok records, business failures, terminal failures or deferred records', async () => {
    // Prepare
    const outcomes = [
      outcome('COMPLETED'),
      outcome('DUPLICATE'),
      outcome('STALE_VERSION_SKIPPED'),
      outcome('RETRYABLE_FAILURE', 'CASE_LOCKED'),
      outcome('RETRYABLE_FAILURE', 'UNHANDLED_ERROR'),
      outcome('TERMINAL_FAILURE', 'LOCK_TIMEOUT'),
      outcome('NOT_YET_DUE', 'NOT_YET_DUE'),
      outcome('DEADLINE_DEFERRED', 'DEADLINE_DEFERRED'),
    ];

    // Act
    const { sums, lines } = await emitted(outcomes);

    // Assess: the outcomes are counted, the signals are not
    expect(emfSum(lines, 'Completed')).toBe(1);
    expect(emfSum(lines, 'RetryableFailure')).toBe(2);
    expect(sums).toEqual({ LoadContention: 0, LoadThrottle: 0, LoadUnavailable: 0, LoadSlow: 0 });
    expect(lines.some((line) => LOAD.some((name) => name in line))).toBe(false);
  });
});

describe('Function: recordTelemetry() — duplicates told apart and the receive count', () => {
  it('counts a redelivery and a resend besides Duplicate, and one ReceiveCount value per record', async () => {
    // Prepare
    const outcomes: RecordOutcome[] = [
      { ...outcome('DUPLICATE'), duplicateCopy: 'REDELIVERY', receiveCount: 3 },
      { ...outcome('DUPLICATE'), duplicateCopy: 'RESEND' },
      outcome('DUPLICATE'), // a store that did not tell the kind
      outcome('COMPLETED'),
    ];

    // Act
    const { lines } = await emitted(outcomes);

    // Assess
    expect(emfSum(lines, 'Duplicate')).toBe(3);
    expect(emfSum(lines, 'DuplicateRedelivery')).toBe(1);
    expect(emfSum(lines, 'DuplicateResend')).toBe(1);
    expect(emfSum(lines, 'ReceiveCount')).toBe(3 + 1 + 1 + 1);
  });
});
