import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { LOCAL_ACCESS_KEY_IDS } from '../../tools/local/iam/local-identities.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A `bin/poller.ts` child process, its log lines parsed as they arrive. */
export interface PollerChild {
  readonly child: ChildProcess;
  /** Powertools JSON lines of stdout and stderr, parsed. */
  readonly lines: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal's name) and when it happened. */
  readonly exited: Promise<{ code: number | string; at: number }>;
  /** Lines whose message is `message`. */
  count(message: string): number;
}

/** Starts `npm run poller`'s entry as a child on `queueUrl`, `env` over the defaults of {@link pollerProcesses}. */
export type StartPollerProcess = (queueUrl: string, env?: Record<string, string>) => PollerChild;

/**
 * `bin/poller.ts` child processes for the calling test file, on its database and its fauxqs, with the poller
 * settings the tests need (8 records in flight, 1 s long polls); every child still running after the file is
 * killed (SIGKILL). The child signs with the poller task role's local key: behind the local IAM layer
 * (`localQueueFixture().endpoint`) it runs with that role's permissions.
 */
export function pollerProcesses(options: {
  readonly databaseUrl: string;
  readonly sqsEndpoint: string;
  /** Variables over the defaults, for every child (a DynamoDB store: `WORKER_STORE`, `DYNAMODB_*`). */
  readonly environment?: Readonly<Record<string, string>>;
}): StartPollerProcess {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return (queueUrl, env = {}) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/poller.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        AWS_ACCESS_KEY_ID: LOCAL_ACCESS_KEY_IDS.poller,
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_METRICS_DISABLED: 'true',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        DATABASE_URL: options.databaseUrl,
        DB_POOL_SIZE: '8',
        WORKER_QUEUE_URL: queueUrl,
        SQS_ENDPOINT: options.sqsEndpoint,
        POLLER_CONCURRENCY: '8',
        POLLER_WAIT_SECONDS: '1',
        ...options.environment,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines: Record<string, unknown>[] = [];
    let stderr = '';
    // Powertools writes INFO lines to stdout, WARN and ERROR lines to stderr: both are parsed, in arrival order.
    const parse = () => {
      let partial = '';
      return (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        for (const part of parts) {
          if (!part.startsWith('{')) continue;
          try {
            lines.push(JSON.parse(part) as Record<string, unknown>);
          } catch {
            // not a log line
          }
        }
      };
    };
    child.stdout?.setEncoding('utf8').on('data', parse());
    const parseStderr = parse();
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      parseStderr(chunk);
    });
    // 'close', not 'exit': the last lines before process.exit are read by then.
    const exited = new Promise<{ code: number | string; at: number }>((resolve) => {
      child.once('close', (code, signal) => resolve({ code: code ?? signal ?? -1, at: Date.now() }));
    });
    return {
      child,
      lines,
      stderr: () => stderr,
      exited,
      count: (message) => lines.filter((line) => line.message === message).length,
    };
  };
}

/** Polls `condition`; fails at once, with its stderr, when one of `running` exits early. */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  running: readonly PollerChild[] = [],
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const gone = running.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
    if (gone) throw new Error(`a poller exited while waiting for ${what}: ${gone.stderr().slice(0, 2000)}`);
    if (await condition()) return Date.now();
    await sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
