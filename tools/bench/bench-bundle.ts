import { DEFAULT_WORKER_BUNDLE_PROFILE } from '../../lib/worker-bundle-profile.ts';
import { bundleWorker, type WorkerBundle } from './bundle-worker.ts';
import { type ColdLoad, coldLoad } from './cold-load.ts';
import { type ColdStartFloors, coldStartFloors } from './cold-start-floor.ts';
import { renderBundle, renderBundleTargets } from './render-report.ts';

/** The bundle line of the bench: the default worker's bundle and cold load, and the other profiles' sizes. */
export interface BundleBench {
  /** The worker the stack deploys by default (PostgreSQL, tracing off): the one the targets are about. */
  readonly bundle: WorkerBundle;
  /** The same worker bundled for tracing on, and for the DynamoDB store. */
  readonly variants: readonly WorkerBundle[];
  readonly coldLoad: ColdLoad;
  /** Each store entry's cold start over the floor any handler on the same client pays. */
  readonly floors: ColdStartFloors;
}

/**
 * Bundles the worker for the default profile and for the others (lib/worker-bundle-profile.ts), and times the
 * default bundle's cold load (the tracing one's too, with tracing on, and the DynamoDB one's) over `runs` fresh processes of each kind,
 * and each store entry's cold start over its floor (`cold-start-floor.ts`).
 */
export async function benchBundle(runs = 25): Promise<BundleBench> {
  const bundle = await bundleWorker(DEFAULT_WORKER_BUNDLE_PROFILE);
  const tracing = await bundleWorker({ ...DEFAULT_WORKER_BUNDLE_PROFILE, tracing: true });
  const dynamodb = await bundleWorker({ store: 'dynamodb', tracing: false });
  return {
    bundle,
    variants: [tracing, dynamodb],
    coldLoad: await coldLoad(bundle, tracing, dynamodb, runs),
    floors: await coldStartFloors(runs),
  };
}

/** `npm run bench -- --only bundle`: the bundle line and its targets alone (no database needed). */
export async function runBundleAlone(): Promise<void> {
  process.stderr.write('bundling the worker and timing its cold load\n');
  const bench = await benchBundle();
  console.log(`${renderBundle(bench)}\n\nTargets (figures only: a missed target does not fail the bench)`);
  console.log(renderBundleTargets(bench));
}
