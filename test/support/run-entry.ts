import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** How a subprocess ended. */
export interface EntryResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall-clock time from start to exit. */
  readonly elapsedMs: number;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs an entry point of the project (`bin/sqs-worker.js`, `bin/migrate.ts`, …) as `node --import tsx <entry>`
 * in the checkout, with only the given environment plus PATH, HOME and local AWS credentials. Killed after
 * `timeoutMs` (then `code` is not 0, 1 or 2). `cwd`: another checkout to run in (a `copyCheckout` copy).
 */
export function runEntry(
  entry: string,
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 40_000,
  cwd = ROOT,
): Promise<EntryResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', entry, ...args],
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          ...env,
        },
        timeout: timeoutMs,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr, elapsedMs: Date.now() - started });
      },
    );
  });
}
