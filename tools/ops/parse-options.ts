import { UsageError } from './errors.ts';

/**
 * Parses a whole number option within bounds.
 *
 * @throws UsageError naming the flag, the bounds and the value.
 */
export function parseCount(value: string | number, flag: string, min = 1, max = 1_000_000): number {
  const parsed = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max} (given "${value}")`);
  }
  return parsed;
}

/**
 * Parses a positive number option (`--db-write-iops-budget 3000`, `--calls-per-message 0.5`).
 *
 * @throws UsageError naming the flag and the value.
 */
export function parsePositive(value: string | number, flag: string): number {
  const parsed = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isFinite(parsed) || parsed <= 0) {
    throw new UsageError(`${flag} must be a positive number (given "${value}")`);
  }
  return parsed;
}

/**
 * Parses a rate such as `5`, `5/s` or `0.5/s` (messages per second).
 *
 * @throws UsageError naming the flag and the value.
 */
export function parseRate(value: string | number, flag = '--rate'): number {
  const raw = String(value).trim().replace(/\/s$/, '');
  const parsed = Number(raw);
  if (raw === '' || !Number.isFinite(parsed) || parsed <= 0 || parsed > 10_000) {
    throw new UsageError(
      `${flag} must be messages per second like 5 or 5/s, above 0 and at most 10000 (given "${value}")`,
    );
  }
  return parsed;
}

/**
 * Parses an optional positive number option as commander gives it: undefined when the flag was not given.
 *
 * @throws UsageError naming the flag and the value.
 */
export function parseOptionalPositive(value: unknown, flag: string): number | undefined {
  return typeof value === 'string' ? parsePositive(value, flag) : undefined;
}

/** A string option as commander gives it, or undefined (not given, or a boolean flag). */
export function optionText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The flag of a commander option name: `maxFailures` → `--max-failures`. */
export function optionFlag(name: string): string {
  return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}
