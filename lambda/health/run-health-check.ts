import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { HealthFigures } from './collect-health.ts';
import { publishHealth } from './publish-health.ts';

/**
 * One run of a health job, either store's: reads the figures (`collect`), publishes them as EMF with the heartbeat
 * and logs them (figures only, never a payload). A failed check is logged and thrown, so the function's Errors metric
 * counts it and no heartbeat is published; the stored metrics are flushed either way.
 *
 * @internal
 */
export async function runHealthCheck<F extends HealthFigures>(
  collect: () => Promise<F>,
  telemetry: { readonly logger: Logger; readonly metrics: Metrics },
): Promise<F> {
  const { logger, metrics } = telemetry;
  try {
    const figures = await collect();
    publishHealth(metrics, figures);
    logger.info('health_check', { ...(figures as HealthFigures) });
    return figures;
  } catch (error) {
    logger.error('health_check_failed', { error: (error as Error).message });
    throw error;
  } finally {
    metrics.publishStoredMetrics();
  }
}
