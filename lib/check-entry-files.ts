import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { WorkerStore } from './stores/worker-store.ts';
import type { WorkerSettings } from './worker-settings.ts';

/**
 * Checks that `workerEntry` and `outboxRelayEntry`, when given, name files (resolved from the folder cdk runs in).
 *
 * @internal
 */
export function checkEntryFiles(
  props: Pick<WorkerSettings, 'workerEntry' | 'outboxRelayEntry'>,
  store: WorkerStore,
  problems: string[],
): void {
  for (const [name, entry, exports] of [
    [
      'workerEntry',
      props.workerEntry,
      store === 'dynamodb'
        ? 'handler = createDynamoWorkerFromConfig({ handlers })'
        : 'handler = createWorkerFromConfig({ handlers })',
    ],
    ['outboxRelayEntry', props.outboxRelayEntry, 'handler'],
  ] as const) {
    if (entry === undefined) continue;
    const file = resolve(entry);
    if (!existsSync(file) || !statSync(file).isFile()) {
      problems.push(
        `${name} ("${entry}") is not a file (looked for ${file}); give the path of your entry file (it exports \`${exports}\`), absolute or relative to the folder cdk runs in (${process.cwd()})`,
      );
    }
  }
}
