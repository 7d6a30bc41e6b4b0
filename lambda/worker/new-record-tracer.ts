import type { RecordTracer } from './record-tracer.ts';

/**
 * Loads Powertools Tracer (and the X-Ray SDK it brings) and makes a record tracer of service `serviceName`.
 * Both modules are imported here, with `import()`: the bundle keeps them in chunks of their own, so a worker with
 * tracing off never loads or compiles them (docs/tracing.md, docs/performance.md).
 *
 * The Tracer reads its own settings from the environment (`POWERTOOLS_TRACE_ENABLED`,
 * `POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS`, …) and records nothing outside Lambda.
 *
 * @internal
 */
export async function newRecordTracer(serviceName: string): Promise<RecordTracer> {
  const [{ Tracer }, { createRecordTracer }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('./record-tracer.ts'),
  ]);
  return createRecordTracer(new Tracer({ serviceName }), serviceName);
}
