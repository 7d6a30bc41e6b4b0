import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../../lib/project-root.ts';

let cached: string | undefined;

/**
 * The worker version of a local run (`WORKER_VERSION` of its components, and `SQS_WORKER_LOCAL_VERSION` it prints):
 * `local-` and the first 12 hex characters of the SHA-256 of the worker's code (every file under `lambda/`, by path
 * and content), so it changes with the code as a deployed one does with its asset. Computed once per process.
 */
export function localWorkerVersion(root = PROJECT_ROOT): string {
  if (cached !== undefined && root === PROJECT_ROOT) return cached;
  const hash = createHash('sha256');
  const folder = join(root, 'lambda');
  const files = readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) {
    hash.update(relative(root, file));
    hash.update('\0');
    hash.update(readFileSync(file));
  }
  const version = `local-${hash.digest('hex').slice(0, 12)}`;
  if (root === PROJECT_ROOT) cached = version;
  return version;
}
