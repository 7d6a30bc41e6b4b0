/**
 * What a worker's deployed configuration can reach, known when the stack bundles it: the store it writes to and
 * whether X-Ray tracing is on. The bundle leaves out the code only the other choices load — the DynamoDB store and
 * its SDK from a PostgreSQL worker, Powertools Tracer and the X-Ray SDK from a worker without tracing — which
 * esbuild would otherwise ship as chunks nobody loads (about 190 KiB of the worker's deployed bundle,
 * docs/performance.md).
 *
 * The choice reaches the code as two `process.env` names that esbuild replaces with literals at bundle time
 * ({@link workerBundleDefines}); the modules that load the optional parts test them right where they `import()`
 * them, so esbuild drops the import, and the chunk with it, from a bundle that cannot use it. Run unbundled (tests,
 * `npm start`, your own build) the names are unset and every part loads as before. A bundle asked for a part it
 * left out fails with a `ConfigError` naming the setting to change; see `createWorkerFromConfig` and
 * `newRecordTracer`.
 *
 * @internal
 */
export interface WorkerBundleProfile {
  /** The store the worker writes to (`WORKER_STORE`): a `postgres` bundle holds no DynamoDB store code. */
  readonly store: 'postgres' | 'dynamodb';
  /** Whether the worker traces (`POWERTOOLS_TRACE_ENABLED=true`): without it, no Tracer and no X-Ray SDK. */
  readonly tracing: boolean;
}

/**
 * The profile of the worker the stack deploys by default, and the one the bench measures: PostgreSQL, tracing off.
 *
 * @internal
 */
export const DEFAULT_WORKER_BUNDLE_PROFILE: WorkerBundleProfile = { store: 'postgres', tracing: false };

/**
 * esbuild `define` entries of a profile: `process.env.WORKER_BUNDLED_STORE` becomes `"postgres"` or `"dynamodb"`,
 * `process.env.WORKER_BUNDLED_TRACING` becomes `"on"` or `"off"`.
 *
 * @internal
 */
export function workerBundleDefines(profile: WorkerBundleProfile): Record<string, string> {
  return {
    'process.env.WORKER_BUNDLED_STORE': JSON.stringify(profile.store),
    'process.env.WORKER_BUNDLED_TRACING': JSON.stringify(profile.tracing ? 'on' : 'off'),
  };
}

/**
 * A short name of a profile, for asset cache keys and reports: `postgres`, `dynamodb+tracing`, …
 *
 * @internal
 */
export function describeWorkerBundleProfile(profile: WorkerBundleProfile): string {
  return `${profile.store}${profile.tracing ? '+tracing' : ''}`;
}
