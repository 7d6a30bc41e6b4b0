import { Writable } from 'node:stream';
import { consoleOptions } from '../console/console-command.ts';
import { startConsole } from '../console/start-console.ts';
import { runOpsCommand } from '../ops/run-ops-command.ts';

/** The console of a local run, serving until {@link LocalConsole.stop}. */
export interface LocalConsole {
  /** The URL to open, with the run's token. */
  readonly url: string;
  /** Its origin (`http://127.0.0.1:port`), without the token. */
  readonly origin: string;
  /** Closes the console and its session (store and clients). */
  stop(): Promise<void>;
}

/**
 * The operator console of `npm start -- --keep` (`sqs-worker console` in this process): a session of the ops CLI on
 * exactly the settings the run prints (`settings`, over this process's environment), on 127.0.0.1 with its own token.
 * Read-only unless `allowActions` (`npm start -- --keep --console-actions`), as `sqs-worker console` is.
 *
 * @throws Error with the console's own message when it could not start (the run goes on without it).
 */
export async function startLocalConsole(
  settings: Readonly<Record<string, string>>,
  allowActions: boolean,
): Promise<LocalConsole> {
  const env = { ...process.env, ...settings };
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let finished: Promise<number> = Promise.resolve(0);
  const started = new Promise<string>((resolve, reject) => {
    const failures: string[] = [];
    const done = runOpsCommand(
      'console',
      {},
      async (session) => {
        const running = await startConsole(session, consoleOptions(session, { allowActions }, env));
        resolve(running.url);
        await stopped;
        await running.close();
      },
      { env, stdout: sink(failures), stderr: sink(failures) },
    );
    void done.then((code) => {
      if (code !== 0) reject(new Error(failures.join('').trim() || `the console exited with ${code}`));
    });
    finished = done;
  });
  const url = await started;
  return {
    url,
    origin: new URL(url).origin,
    async stop() {
      stop();
      await finished;
    },
  };
}

/** A stream that keeps what is written (the console's own lines: its error, if it fails to start). */
function sink(into: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      into.push(chunk.toString());
      callback();
    },
  });
}
