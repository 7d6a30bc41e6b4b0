import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { HealthFigures } from './collect-health.ts';
import { HEALTH_METRICS as M } from './health-metrics.ts';

/**
 * Adds the figures of one health check to `metrics` as EMF metrics (names in {@link M}): counts as Count, ages
 * as Milliseconds, an absent age (nothing to measure) as 0, and the `HealthCheck` heartbeat. The caller
 * publishes them (`metrics.publishStoredMetrics()`).
 */
export function publishHealth(metrics: Pick<Metrics, 'addMetric'>, figures: HealthFigures): void {
  const count = (name: string, value: number) => metrics.addMetric(name, MetricUnit.Count, value);
  const ms = (name: string, value: number | null) =>
    metrics.addMetric(name, MetricUnit.Milliseconds, value ?? 0);
  count(M.heartbeat, 1);
  count(M.quarantineOpen, figures.quarantine.open);
  ms(M.quarantineOldestOpenAgeMs, figures.quarantine.oldestOpenAgeMs);
  count(M.inboxReceived, figures.inbox.byStatus.RECEIVED);
  count(M.inboxProcessing, figures.inbox.byStatus.PROCESSING);
  count(M.inboxFailedRetryable, figures.inbox.byStatus.FAILED_RETRYABLE);
  count(M.inboxFailedTerminal, figures.inbox.byStatus.FAILED_TERMINAL);
  ms(M.inboxOldestProcessingAgeMs, figures.inbox.oldestProcessingAgeMs);
  ms(M.inboxOldestRetryableAgeMs, figures.inbox.oldestRetryableAgeMs);
  ms(M.inboxOldestInFlightAgeMs, figures.inbox.oldestInFlightAgeMs);
  count(M.inboxLeasesExpired, figures.leasesExpired ?? 0);
  count(M.outboxPending, figures.outbox.pending);
  ms(M.outboxOldestPendingAgeMs, figures.outbox.oldestPendingAgeMs);
  count(M.lockWaits, figures.locks.waiting);
  ms(M.lockWaitOldestMs, figures.locks.oldestWaitMs);
  count(M.deadlocks, figures.deadlocks);
  count(M.longTransactions, figures.longTransactions.count);
  ms(M.longTransactionOldestAgeMs, figures.longTransactions.oldestAgeMs);
}
