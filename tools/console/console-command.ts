import { once } from 'node:events';
import { LOG_FILE_VARIABLE } from '../local/local-log-file.ts';
import { currentActor } from '../ops/current-actor.ts';
import { UsageError } from '../ops/errors.ts';
import { optionText as str } from '../ops/parse-options.ts';
import type { OpsSession } from '../ops/run-ops-command.ts';
import type { ConsoleOptions } from './console-context.ts';
import { isLoopback, type RunningConsole, startConsole } from './start-console.ts';

/** The flags of `sqs-worker console`, as commander gives them. */
export type ConsoleFlags = Readonly<Record<string, unknown>>;

/** The console's options from its flags and the environment (the local run's log file and version). */
export function consoleOptions(
  flags: ConsoleFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConsoleOptions {
  return {
    allowActions: flags.allowActions === true,
    actor: `${currentActor(env)} (console)`,
    logFile: str(flags.logFile) ?? (env[LOG_FILE_VARIABLE] || undefined),
    stage: str(flags.stage),
    logGroups: (flags.logGroup as string[] | undefined) ?? [],
    alarmPrefix: str(flags.alarmPrefix) ?? 'SqsInboxWorker',
    localVersion: env.SQS_WORKER_LOCAL_VERSION || undefined,
  };
}

/** `--port`: 0 (the system chooses) to 65535. */
function parsePort(value: string | undefined): number {
  if (value === undefined) return 0;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new UsageError(`--port takes a port number from 0 (any free port) to 65535 (given "${value}")`);
  }
  return port;
}

/**
 * `sqs-worker console`: starts the console on the session (its store and clients, opened once for the run), prints
 * its URL with the run's token — with `--json`, one document `{ url, allowActions }` — and serves until `stopped`
 * settles (by default SIGINT or SIGTERM), then closes. A host that is not loopback is served only when asked for by
 * `--host`, with a warning: anyone who can reach it and learns the token can read the messages' metadata.
 */
export async function consoleCommand(
  session: OpsSession,
  flags: ConsoleFlags,
  stopped: Promise<unknown> = Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]),
): Promise<RunningConsole> {
  const host = str(flags.host) ?? '127.0.0.1';
  const options = consoleOptions(flags);
  const running = await startConsole(session, options, { host, port: parsePort(str(flags.port)) });
  const { out } = session;
  if (!isLoopback(host)) {
    out.note(
      `sqs-worker console: listening on ${host}, not loopback: anyone who reaches it and has the token reads what the console shows.`,
    );
  }
  if (out.json) out.print(JSON.stringify({ url: running.url, allowActions: options.allowActions }));
  else {
    out.print(
      `Operator console (${options.allowActions ? 'actions allowed' : 'read-only; --allow-actions to act'}): ${running.url}`,
    );
    out.note('Open the URL in a browser on this machine; Ctrl-C stops the console.');
  }
  await stopped;
  await running.close();
  return running;
}
