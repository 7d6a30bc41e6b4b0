import { createWriteStream, mkdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The variable `npm start` exports with its log file, which `sqs-worker logs` reads. */
export const LOG_FILE_VARIABLE = 'SQS_WORKER_LOG_FILE';

/** The file a local run writes its worker's JSON log lines to, returned by {@link openLocalLogFile}. */
export interface LocalLogFile {
  /** Absolute path of the file (`export SQS_WORKER_LOG_FILE=…`). */
  readonly path: string;
  /** Appends a line the worker wrote, when it is one of its JSON lines (the rest is dropped). */
  write(line: string): void;
  /** Flushes and closes the file. */
  close(): Promise<void>;
}

/**
 * Opens the log file of a local run: `given` (`SQS_WORKER_LOG_FILE` of the shell that runs `npm start`), appended
 * to, else `worker.log` in a new folder under the system's temporary directory, kept after the run so that
 * `sqs-worker logs` can still read it. Only the worker's JSON lines (Powertools log lines and EMF documents, as a
 * CloudWatch log group would hold them) are written, one per line.
 */
export async function openLocalLogFile(given?: string): Promise<LocalLogFile> {
  const path = given
    ? resolve(given)
    : join(await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-local-')), 'worker.log');
  mkdirSync(dirname(path), { recursive: true });
  const stream = createWriteStream(path, { flags: 'a' });
  return {
    path,
    write(line) {
      if (line.startsWith('{')) stream.write(`${line}\n`);
    },
    close: () => new Promise<void>((done) => stream.end(done)),
  };
}
