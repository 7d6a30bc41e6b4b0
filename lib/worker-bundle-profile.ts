/**
 * What a worker's deployed configuration can reach, known when the stack bundles it: the store it writes to and
 * whether X-Ray tracing is on. The bundle leaves out the code only the other choices load.
 *
 * - **The store** picks the entry: each store has its own (`shippedWorkerEntry`: `lambda/handlers/worker.ts` for
 *   PostgreSQL, `lambda/handlers/worker-dynamodb.ts` for DynamoDB), and each imports only its store's wiring, so
 *   esbuild's tree shaking leaves the other store out (a user's `workerEntry` does the same by importing
 *   `sqs-inbox-worker/postgres` or `sqs-inbox-worker/dynamodb`). Nothing is replaced at bundle time for it.
 * - **Tracing** stays a bundle-time name: `process.env.WORKER_BUNDLED_TRACING`, which esbuild replaces with `"on"`
 *   or `"off"` ({@link workerBundleDefines}); `newRecordTracer` tests it right where it `import()`s Powertools Tracer,
 *   so a bundle without tracing ships neither the Tracer nor the X-Ray SDK (about 130 KiB). Tracing is a setting of
 *   every entry, the shipped ones and yours, not a choice between entries: a lazy import alone keeps the tracer out of
 *   a cold start but not out of the deployed bundle, and an entry per store and tracing setting would be four. Run
 *   unbundled (tests, `npm start`, your own build) the name is unset and the tracer loads when asked for; a bundle
 *   asked for it without it logs a `ConfigError` naming the setting to change (`newRecordTracer`).
 *
 * @internal
 */
export interface WorkerBundleProfile {
  /** The store the worker writes to (`WORKER_STORE`): the entry bundled, and so the store code it holds. */
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
 * esbuild `define` entries of a profile: `process.env.WORKER_BUNDLED_TRACING` becomes `"on"` or `"off"`. The store
 * needs none (it picks the entry).
 *
 * @internal
 */
export function workerBundleDefines(profile: Pick<WorkerBundleProfile, 'tracing'>): Record<string, string> {
  return { 'process.env.WORKER_BUNDLED_TRACING': JSON.stringify(profile.tracing ? 'on' : 'off') };
}

/**
 * A short name of a profile, for asset cache keys and reports: `postgres`, `dynamodb+tracing`, …
 *
 * @internal
 */
export function describeWorkerBundleProfile(profile: WorkerBundleProfile): string {
  return `${profile.store}${profile.tracing ? '+tracing' : ''}`;
}
