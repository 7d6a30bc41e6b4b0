import { UsageError } from './errors.ts';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

/**
 * Parses a duration such as `30d`, `36h`, `90m`, `2w`, `1d12h` or a bare number of seconds into seconds.
 *
 * @throws UsageError naming the flag and the value when it is not a positive duration.
 */
export function parseDuration(value: string, flag: string): number {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) {
    const seconds = Number(trimmed);
    if (seconds > 0) return seconds;
  } else if (/^(\d+[smhdw])+$/.test(trimmed)) {
    let seconds = 0;
    for (const [, count, unit] of trimmed.matchAll(/(\d+)([smhdw])/g)) {
      seconds += Number(count) * (UNIT_SECONDS[unit as string] as number);
    }
    if (seconds > 0) return seconds;
  }
  throw new UsageError(
    `${flag} must be a positive duration like 30d, 36h, 90m, 2w or 1d12h (given "${value}")`,
  );
}
