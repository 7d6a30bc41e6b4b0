import Table from 'cli-table3';

/** A progress indicator for long operations (a bar on an interactive stderr, nothing otherwise). */
export interface Progress {
  /** Advances the bar by `by` (default 1). */
  increment(by?: number): void;
  /** Removes or finishes the bar. */
  stop(): void;
}

/**
 * Where a command writes. Results go to `print` (stdout): tables for people, one JSON document with
 * `json`. Notes and progress go to stderr, so `--json` output stays parseable.
 */
export interface OpsOutput {
  /** True when the operator asked for `--json`. */
  readonly json: boolean;
  /** Writes result text to stdout (a newline is added). */
  print(text: string): void;
  /** Writes a note for the operator to stderr (a newline is added). */
  note(text: string): void;
  /** Starts a progress indicator for `total` steps. */
  progress(total: number, label: string): Progress;
}

/** A progress indicator that shows nothing. */
export const silentProgress: Progress = { increment: () => {}, stop: () => {} };

/**
 * Writes a command's result: `data` as one JSON document with `--json`, otherwise the text `human()` builds.
 */
export function emit(out: OpsOutput, data: unknown, human: () => string): void {
  out.print(out.json ? JSON.stringify(data, jsonReplacer, 2) : human());
}

function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** A cell of {@link table}. */
export type Cell = string | number | boolean | Date | null | undefined;

/** Renders a plain (uncoloured) table with cli-table3. */
export function table(head: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const rendered = new Table({ head: [...head], style: { head: [], border: [] } });
  for (const row of rows) rendered.push(row.map(formatCell));
  return rendered.toString();
}

/** Renders one record as a two-column table (field, value). */
export function recordTable(record: Readonly<Record<string, Cell>>): string {
  const rendered = new Table({ style: { head: [], border: [] } });
  for (const [key, value] of Object.entries(record)) rendered.push({ [key]: formatCell(value) });
  return rendered.toString();
}

/** Formats a cell value for a table: dates as ISO strings, absent values as "-". */
export function formatCell(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

/** Formats a number of seconds as a short duration ("3d 4h", "12m 5s"). */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ];
  const parts: string[] = [];
  let rest = s;
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return parts.slice(0, 2).join(' ') || '0s';
}
