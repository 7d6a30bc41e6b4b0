import type { Logger } from '@aws-lambda-powertools/logger';
import { lazyClientResolver } from '../worker/lazy-client.ts';
import type { RecordTracer } from './record-tracer.ts';

/**
 * A record tracer, or a function that makes one when it is first needed: the function form lets an entry point
 * `import('@aws-lambda-powertools/tracer')` (and with it the X-Ray SDK) only when tracing is on. See
 * `newRecordTracer`.
 */
export type RecordTracerSource = RecordTracer | (() => Promise<RecordTracer>);

/**
 * Returns a function that gives the tracer of `source`, making it once. A source that fails is logged
 * (`worker_tracer_unavailable`) and resolves to `undefined`: records are processed untraced, and the next batch
 * tries again.
 *
 * @internal
 */
export function recordTracerResolver(
  source: RecordTracerSource,
  logger: Logger,
): () => Promise<RecordTracer | undefined> {
  return lazyClientResolver(source, logger, 'worker_tracer_unavailable');
}
