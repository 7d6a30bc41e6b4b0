type Write = typeof process.stdout.write;

/**
 * Captures what is written to stdout and stderr while `fn` runs (Powertools Logger writes info to stdout and
 * warn/error to stderr; Metrics writes EMF to stdout). Returns the parsed JSON lines, in order.
 */
export async function captureOutput<T>(
  fn: () => Promise<T>,
): Promise<{ result?: T; error?: unknown; lines: Array<Record<string, unknown>>; raw: string }> {
  let raw = '';
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write);
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      raw += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as Write;
  }
  let result: T | undefined;
  let error: unknown;
  try {
    result = await fn();
  } catch (caught) {
    error = caught;
  } finally {
    streams.forEach((stream, index) => {
      stream.write = originals[index] as Write;
    });
  }
  const lines = raw
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { result, error, lines, raw };
}

/** Sums the EMF metric values of `name` over the captured lines. */
export function emfSum(lines: Array<Record<string, unknown>>, name: string): number {
  return lines
    .filter((line) => '_aws' in line && name in line)
    .reduce((sum, line) => {
      const value = line[name];
      return sum + (Array.isArray(value) ? value.reduce((a: number, b: number) => a + b, 0) : Number(value));
    }, 0);
}
