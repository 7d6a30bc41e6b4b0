import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type LoadSignal, loadSignalOf } from '../concurrency/load-signal.ts';
import { METRIC_NAMES } from '../constants.ts';
import type { OutcomeResult, RecordOutcome } from './outcome.ts';
import type { DuplicateCopy } from './record-store.ts';

/**
 * EMF metric counted once per record, by result.
 *
 * @internal
 */
export const OUTCOME_METRICS: Record<OutcomeResult, string> = {
  COMPLETED: METRIC_NAMES.completed,
  DUPLICATE: METRIC_NAMES.duplicate,
  STALE_VERSION_SKIPPED: METRIC_NAMES.staleVersionSkipped,
  RETRYABLE_FAILURE: METRIC_NAMES.retryableFailure,
  TERMINAL_FAILURE: METRIC_NAMES.terminalFailure,
  NOT_YET_DUE: METRIC_NAMES.notYetDue,
  DEADLINE_DEFERRED: METRIC_NAMES.deadlineDeferred,
};

/**
 * EMF metric counted once per retryable record that is a signal of load ({@link loadSignalOf}); `ok` and `ignored`
 * records count none. The fleet's sums are what the breaker's control loop of the mapping's `MaximumConcurrency`
 * reads (lambda/breaker/fleet-limit.ts).
 *
 * @internal
 */
export const LOAD_METRICS: Readonly<Record<Exclude<LoadSignal, 'ok' | 'ignored'>, string>> = {
  contention: METRIC_NAMES.loadContention,
  throttle: METRIC_NAMES.loadThrottle,
  unavailable: METRIC_NAMES.loadUnavailable,
  slow: METRIC_NAMES.loadSlow,
};

/**
 * EMF metric counted once per duplicate whose kind the store told, besides `Duplicate`.
 *
 * @internal
 */
export const DUPLICATE_METRICS: Readonly<Record<DuplicateCopy, string>> = {
  REDELIVERY: METRIC_NAMES.duplicateRedelivery,
  RESEND: METRIC_NAMES.duplicateResend,
};

/**
 * The outcome's fields in the record's log line, in this order (after `queue`); the saved Logs Insights queries
 * (`log-queries.ts`) read them by these names.
 *
 * @internal
 */
export const LOGGED_FIELDS = [
  'messageId',
  'messageType',
  'idempotencyKey',
  'aggregateId',
  'correlationId',
  'traceId',
  'receiveCount',
  'attempts',
  'processingMs',
  'dbTransactionMs',
  'messageAgeMs',
  'result',
  'acknowledged',
  'failureCode',
  'failureMessage',
  'quarantined',
  'quarantineFailed',
  'duplicateCopy',
  'visibilitySeconds',
  'visibilitySource',
] as const satisfies readonly (keyof RecordOutcome)[];

/**
 * Writes the one structured log line of a record (the pattern document's fields, §23) and its EMF metrics:
 * one count for its result, plus DuplicateRedelivery or DuplicateResend for a duplicate whose kind the store told, HashMismatch, Quarantined, QuarantineFailed and PayloadAccessDenied when they apply,
 * one count of its signal of load (LoadContention, LoadThrottle, LoadUnavailable, LoadSlow) when it is one, and ProcessingMs,
 * DbTransactionMs, MessageAgeMs and ReceiveCount (the delivery's ApproximateReceiveCount). Never logs a payload value: only identifiers from the envelope, and the
 * producer's trace id (`traceId`) when the message carries one. The fields come from the record's own outcome, so
 * records processed at once never lend each other theirs.
 *
 * @internal
 */
export function recordTelemetry(
  outcome: RecordOutcome,
  sinks: { logger: Logger; metrics: Metrics; queue: string },
): void {
  // Only the fields that have a value: the Logger drops undefined ones from the line anyway, and each key
  // it is given costs it a merge and a copy.
  const fields: Record<string, unknown> = { queue: sinks.queue };
  for (const key of LOGGED_FIELDS) {
    const value = outcome[key];
    if (value !== undefined) fields[key] = value;
  }
  const message = `worker_message_${outcome.result.toLowerCase()}`;
  if (outcome.result === 'TERMINAL_FAILURE') sinks.logger.error(message, fields);
  else if (outcome.result === 'RETRYABLE_FAILURE') sinks.logger.warn(message, fields);
  else sinks.logger.info(message, fields);

  sinks.metrics.addMetric(OUTCOME_METRICS[outcome.result], MetricUnit.Count, 1);
  if (outcome.duplicateCopy)
    sinks.metrics.addMetric(DUPLICATE_METRICS[outcome.duplicateCopy], MetricUnit.Count, 1);
  if (outcome.hashMismatch) sinks.metrics.addMetric(METRIC_NAMES.hashMismatch, MetricUnit.Count, 1);
  if (outcome.quarantined) sinks.metrics.addMetric(METRIC_NAMES.quarantined, MetricUnit.Count, 1);
  if (outcome.quarantineFailed) sinks.metrics.addMetric(METRIC_NAMES.quarantineFailed, MetricUnit.Count, 1);
  // Its own metric: a denied read is retried, but it is a permission to fix, not a passing S3 hiccup.
  if (outcome.failureCode === 'PAYLOAD_ACCESS_DENIED') {
    sinks.metrics.addMetric(METRIC_NAMES.payloadAccessDenied, MetricUnit.Count, 1);
  }
  const signal = loadSignalOf(outcome);
  if (signal !== 'ok' && signal !== 'ignored')
    sinks.metrics.addMetric(LOAD_METRICS[signal], MetricUnit.Count, 1);
  sinks.metrics.addMetric(METRIC_NAMES.processingMs, MetricUnit.Milliseconds, outcome.processingMs);
  sinks.metrics.addMetric(METRIC_NAMES.dbTransactionMs, MetricUnit.Milliseconds, outcome.dbTransactionMs);
  sinks.metrics.addMetric(METRIC_NAMES.messageAgeMs, MetricUnit.Milliseconds, outcome.messageAgeMs);
  sinks.metrics.addMetric(METRIC_NAMES.receiveCount, MetricUnit.Count, outcome.receiveCount);
}
