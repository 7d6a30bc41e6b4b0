import { ConfigError } from '../errors.ts';
import { createRecordTracer, type RecordTracer } from './record-tracer.ts';

/**
 * Loads Powertools Tracer (and the X-Ray SDK it brings) and makes a record tracer of service `serviceName`. The
 * tracer is imported here, with `import()`: the bundle keeps it in chunks of their own, so a worker with tracing
 * off never loads or compiles it (docs/tracing.md, docs/performance.md). `record-tracer.ts` only refers to the
 * Tracer's type, so importing it statically loads nothing of it.
 *
 * The Tracer reads its own settings from the environment (`POWERTOOLS_TRACE_ENABLED`,
 * `POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS`, …) and records nothing outside Lambda. `createWorkerFromConfig`
 * calls it when `POWERTOOLS_TRACE_ENABLED=true`; pass it to `createWorker` yourself otherwise.
 *
 * @example
 * ```ts
 * export const handler = createWorker({ consumer, handlers, sql, tracer: () => newRecordTracer(consumer) });
 * ```
 */
export async function newRecordTracer(serviceName: string): Promise<RecordTracer> {
  // A bundle the stack built without tracing holds no Tracer: esbuild replaces the name with "off", which makes
  // the import dead code it leaves out, chunk and all (lib/worker-bundle-profile.ts). Unbundled, the name is unset.
  if (process.env.WORKER_BUNDLED_TRACING !== 'off') {
    const { Tracer } = await import('@aws-lambda-powertools/tracer');
    return createRecordTracer(new Tracer({ serviceName }), serviceName);
  }
  throw new ConfigError(
    'POWERTOOLS_TRACE_ENABLED is "true", but this worker was bundled without tracing, without Powertools Tracer and the X-Ray SDK. Deploy it with tracing: true on SqsDatabaseWorker (the stage setting tracing), or remove POWERTOOLS_TRACE_ENABLED from its environment.',
  );
}
