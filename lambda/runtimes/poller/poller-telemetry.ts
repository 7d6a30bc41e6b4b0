import type { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured logger of the poller (Powertools `Logger` fits). Lines carry message ids and counts, never bodies.
 *
 * @internal
 */
export type PollerLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/**
 * Metrics sink of the poller (Powertools `Metrics` fits): EMF on stdout, as the Lambda worker's.
 *
 * @internal
 */
export interface PollerMetrics {
  addMetric(name: string, unit: 'Count', value: number): void;
  publishStoredMetrics(): void;
}

/** Error text safe to log: name and message, never a payload. @internal */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
