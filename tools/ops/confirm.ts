import { createInterface } from 'node:readline/promises';

/** Asks the operator a yes/no question; resolves to true only for an explicit yes. */
export type Confirm = (question: string) => Promise<boolean>;

/**
 * The operator's terminal as a {@link Confirm} (the question on stderr, the answer from stdin; `y` or `yes` is a yes),
 * or undefined when stdin or stderr is not a terminal: a script must confirm with a flag (`--yes`) instead.
 */
export function terminalConfirm(): Confirm | undefined {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  return async (question) => {
    const prompt = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await prompt.question(`${question} [y/N] `)).trim());
    } finally {
      prompt.close();
    }
  };
}
