import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { waitFor } from './wait-for.ts';

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

/** A `bin/local.ts` that stays up (`--keep`, `--handlers`) until {@link KeptLocalStart.stop}, from {@link startKept}. */
export interface KeptLocalStart {
  /** The process itself (its pid, exit code and signal). */
  readonly child: ChildProcessWithoutNullStreams;
  /** Its standard output so far. */
  readonly stdout: string;
  /** Its standard error so far. */
  readonly stderr: string;
  /** Resolves with its exit code (null when a signal ended it) once it has exited. */
  readonly exited: Promise<number | null>;
  /**
   * Waits until its standard output includes `text` (a line printed after the settings, such as
   * `npx sqs-worker smoke` or `aws sqs send-message`) and resolves with the `export NAME='value'` lines it printed
   * after "reads these settings:", as an environment. Rejects after `timeoutMs`, or at once when it exits first,
   * with the end of its standard error.
   */
  settingsPrintedBefore(text: string, timeoutMs: number): Promise<Record<string, string>>;
  /** Sends `signal` to it: `SIGINT` as Ctrl-C in its terminal does, `SIGTERM` as a process manager does. */
  stop(signal: 'SIGINT' | 'SIGTERM'): void;
}

/**
 * Starts `npm start`'s entry (`node --import tsx bin/local.ts …args`) in the checkout with exactly `env`, for a run
 * that stays up after its summary, and collects its output. The caller stops it, in a `finally`, and awaits `exited`.
 */
export function startKept(args: readonly string[], env: NodeJS.ProcessEnv): KeptLocalStart {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    async settingsPrintedBefore(text, timeoutMs) {
      const ended = () => child.exitCode !== null || child.signalCode !== null;
      await waitFor(`"${text}" in the output`, () => stdout.includes(text) || ended(), timeoutMs, 100);
      if (!stdout.includes(text))
        throw new Error(
          `bin/local.ts ${args.join(' ')} ended with ${child.signalCode ?? `exit ${child.exitCode}`} before printing "${text}"\n--- stderr (end)\n${stderr.slice(-2000)}`,
        );
      const settings = stdout.slice(Math.max(0, stdout.indexOf('reads these settings:')));
      return Object.fromEntries(
        [...settings.matchAll(/^ {2}export ([A-Z_]+)='([^']*)'$/gm)].map((m) => [
          m[1] as string,
          m[2] as string,
        ]),
      );
    },
    stop(signal) {
      child.kill(signal);
    },
  };
}

/**
 * Sends one example `PaymentCaptured` of idempotency key (and aggregate) `key` to the kept stack's queue with the real
 * SDK and exactly the printed endpoint, region, key and queue URL, as an operator pasting the settings would.
 */
export async function sendPaymentWithPrintedSettings(
  settings: Record<string, string>,
  key: string,
): Promise<void> {
  const sqs = new SQSClient({
    endpoint: settings.SQS_ENDPOINT,
    region: settings.AWS_REGION,
    credentials: {
      accessKeyId: settings.AWS_ACCESS_KEY_ID as string,
      secretAccessKey: settings.AWS_SECRET_ACCESS_KEY as string,
    },
    useQueueUrlAsEndpoint: false,
  });
  const body = exampleEnvelope({
    messageType: 'PaymentCaptured',
    idempotencyKey: key,
    aggregateType: 'Payment',
    aggregateId: key,
    payload: { paymentId: key, accountId: 'acct-1', amount: 10, currency: 'EUR' },
  });
  try {
    await sqs.send(
      new SendMessageCommand({ QueueUrl: settings.WORKER_QUEUE_URL, MessageBody: JSON.stringify(body) }),
    );
  } finally {
    sqs.destroy();
  }
}

/**
 * `npm start -- --keep --messages 20 --concurrency 2` on `databaseUrl`, with no AWS variable in its environment (the
 * smallest scenario, then the kept worker): {@link startKept}.
 */
export function startKeptScenario(databaseUrl: string): KeptLocalStart {
  return startKept(['--keep', '--messages', '20', '--concurrency', '2'], {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    DATABASE_URL: databaseUrl,
  });
}
