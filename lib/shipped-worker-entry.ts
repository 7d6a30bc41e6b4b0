import { join } from 'node:path';
import { PROJECT_ROOT } from './project-root.ts';
import type { WorkerStore } from './stores/worker-store.ts';

/** The shipped worker entry of each store, relative to the project root. */
const ENTRIES: Readonly<Record<WorkerStore, string>> = {
  postgres: 'lambda/handlers/worker.ts',
  dynamodb: 'lambda/handlers/worker-dynamodb.ts',
};

/**
 * Absolute path of the worker entry `SqsDatabaseWorker` bundles for `store` when no `workerEntry` is given — one
 * per store, so that a bundle holds its own store's code and not the other's (lib/worker-bundle-profile.ts). The
 * local function host and the bench bundle the same file. The entries are TypeScript sources, found from the
 * package root in this repository and in an installed package alike (lib/project-root.ts).
 *
 * @internal
 */
export function shippedWorkerEntry(store: WorkerStore): string {
  return join(PROJECT_ROOT, ENTRIES[store]);
}
