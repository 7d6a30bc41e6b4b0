import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { packageRoot } from './start-command.ts';

/** The console of a local run, serving until {@link LocalConsole.stop}. */
export interface LocalConsole {
  /** The URL to open, with the run's token. */
  readonly url: string;
  /** Its origin (`http://127.0.0.1:port`), without the token. */
  readonly origin: string;
  /** Stops the console (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
}

/** How long the console may take to print its URL (the CLI's bundle is rebuilt first when a source changed). */
const START_TIMEOUT_MS = 60_000;

/**
 * The operator console of `npm start -- --keep`: `sqs-worker console --json` (the package's own CLI, as an operator runs
 * it; installed or in this repository) in a child process on exactly the settings the run prints (`settings`, over
 * this process's environment), on 127.0.0.1 with its own token. Read-only unless `allowActions`
 * (`npm start -- --keep --console-actions`, passed on as `--allow-actions`).
 *
 * @throws Error with the console's own message when it exits or says nothing before printing its URL.
 */
export async function startLocalConsole(
  settings: Readonly<Record<string, string>>,
  allowActions: boolean,
): Promise<LocalConsole> {
  const cli = join(packageRoot(), 'bin/sqs-worker.js');
  const child = spawn(
    process.execPath,
    [cli, 'console', '--json', ...(allowActions ? ['--allow-actions'] : [])],
    { env: { ...process.env, ...settings }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  const timer = setTimeout(() => child.kill('SIGTERM'), START_TIMEOUT_MS);
  try {
    const printed = await Promise.race([
      once(lines, 'line').then(([line]) => JSON.parse(String(line)) as { url?: string }),
      exited.then(([code]) => {
        throw new Error(
          stderr.trim() || `sqs-worker console exited with ${String(code)} before printing its URL`,
        );
      }),
    ]);
    if (!printed.url) throw new Error(`sqs-worker console printed no URL: ${stderr.trim()}`);
    const { url } = printed;
    return {
      url,
      origin: new URL(url).origin,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
