import cliProgress from 'cli-progress';
import type { OpsOutput, Progress } from './output.ts';
import { silentProgress } from './output.ts';

/**
 * The output of the real CLI: results on stdout, notes on stderr, and a cli-progress bar on stderr when
 * stderr is a terminal and `--json` is not set.
 */
export function createProcessOutput(options: {
  json: boolean;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WriteStream | NodeJS.WritableStream;
}): OpsOutput {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const interactive = !options.json && 'isTTY' in stderr && stderr.isTTY === true;
  return {
    json: options.json,
    print: (text) => {
      stdout.write(`${text}\n`);
    },
    note: (text) => {
      stderr.write(`${text}\n`);
    },
    progress(total, label): Progress {
      if (!interactive || total <= 0) return silentProgress;
      const bar = new cliProgress.SingleBar(
        {
          stream: stderr as NodeJS.WriteStream,
          format: `${label} [{bar}] {value}/{total} | {duration_formatted}`,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(total, 0);
      return { increment: (by = 1) => bar.increment(by), stop: () => bar.stop() };
    },
  };
}
