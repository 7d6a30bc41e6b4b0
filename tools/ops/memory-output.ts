import type { OpsOutput, Progress } from './output.ts';

/** An {@link OpsOutput} that keeps everything in memory (tests, or calling the commands from a script). */
export interface MemoryOutput extends OpsOutput {
  /** Everything printed to "stdout" so far. */
  stdout(): string;
  /** Everything noted to "stderr" so far. */
  stderr(): string;
  /** The last JSON document printed (with `json: true`). */
  lastJson<T = unknown>(): T;
  /** Progress events: one entry per started bar with its total and how far it got. */
  readonly progressLog: Array<{ label: string; total: number; value: number; stopped: boolean }>;
}

/** Creates a {@link MemoryOutput}. */
export function createMemoryOutput(options: { json?: boolean } = {}): MemoryOutput {
  const printed: string[] = [];
  const noted: string[] = [];
  const progressLog: MemoryOutput['progressLog'] = [];
  return {
    json: options.json ?? false,
    print: (text) => {
      printed.push(text);
    },
    note: (text) => {
      noted.push(text);
    },
    progress(total, label): Progress {
      const entry = { label, total, value: 0, stopped: false };
      progressLog.push(entry);
      return {
        increment: (by = 1) => {
          entry.value += by;
        },
        stop: () => {
          entry.stopped = true;
        },
      };
    },
    stdout: () => printed.map((text) => `${text}\n`).join(''),
    stderr: () => noted.map((text) => `${text}\n`).join(''),
    lastJson<T>() {
      const last = printed.at(-1);
      if (last === undefined) throw new Error('Nothing was printed');
      return JSON.parse(last) as T;
    },
    progressLog,
  };
}
