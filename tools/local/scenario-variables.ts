/**
 * The variables a scenario run gives its worker over the synthesized ones, as a stage's `workerEnvironment` would:
 * the demo's database URL (its lock timeout), the consumer, a short backoff (1 to 4 s, so retries happen within the
 * run), INFO logs (the outcomes are read from them); EMF metrics for the mapping's function only (the local control
 * loop of its `MaximumConcurrency` reads them; the poller's limit is its own); for the poller, `--concurrency` records in flight with
 * as many connections, 1 s long polls and a 3 s lease.
 *
 * @internal
 */
export function scenarioVariables(
  consumer: string,
  databaseUrl: string,
  runtime: 'event-source-mapping' | 'poller',
  concurrency: number,
): Record<string, string> {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    WORKER_CONSUMER: consumer,
    WORKER_BACKOFF_BASE_SECONDS: '1',
    WORKER_BACKOFF_MAX_SECONDS: '4',
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_METRICS_DISABLED: runtime === 'poller' ? 'true' : 'false',
    ...(runtime === 'poller'
      ? {
          DB_POOL_SIZE: String(concurrency),
          WORKER_RECORD_CONCURRENCY: String(concurrency),
          POLLER_CONCURRENCY: String(concurrency),
          POLLER_BATCH_SIZE: '10',
          POLLER_WAIT_SECONDS: '1',
          POLLER_VISIBILITY_SECONDS: '3',
        }
      : {}),
  };
}
