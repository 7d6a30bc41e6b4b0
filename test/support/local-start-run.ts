import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * How long one scenario run may take: about 15 s alone and up to ~50 s on a 2-core machine with every core busy
 * (measured), so 120 s leaves room without hiding a hang; the test around it gets 30 s more for its checks.
 */
export const SCENARIO_RUN_TIMEOUT_MS = 120_000;
/** The timeout of a test that makes one scenario run ({@link SCENARIO_RUN_TIMEOUT_MS} plus its own checks). */
export const SCENARIO_TEST_TIMEOUT_MS = SCENARIO_RUN_TIMEOUT_MS + 30_000;

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs `npm start`'s entry (`node --import tsx bin/local.ts …args`) in the checkout and resolves with its output.
 * A run that exits non-zero rejects with an error that carries the summary's check table (the rows after `Check`),
 * so a failing check is named in the test's failure instead of "Command failed".
 */
export async function runLocalStart(
  args: readonly string[],
  options: { readonly env: NodeJS.ProcessEnv; readonly timeoutMs: number },
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await promisify(execFile)(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], {
      cwd: ROOT,
      env: options.env,
      timeout: options.timeoutMs,
    });
  } catch (error) {
    const {
      stdout = '',
      stderr = '',
      code,
      signal,
    } = error as {
      stdout?: string;
      stderr?: string;
      code?: number;
      signal?: string;
    };
    const checks = stdout.slice(Math.max(0, stdout.lastIndexOf('│ Check')));
    throw new Error(
      `bin/local.ts ${args.join(' ')} ended with ${signal ?? `exit ${code}`}\n${checks || stdout.slice(-3000)}\n--- stderr (end)\n${stderr.slice(-2000)}`,
    );
  }
}
