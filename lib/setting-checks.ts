import { Duration, Token } from 'aws-cdk-lib';

/** The SQS event source's `MaximumConcurrency` limits. @internal */
export const ESM_MIN_CONCURRENCY = 2;
/** @internal */
export const ESM_MAX_CONCURRENCY = 1000;
/** A sanity bound only: the real limit is the account's concurrency quota, unknown at synth time. @internal */
export const MAX_RESERVED_CONCURRENCY = 100_000;

/** Whether a number or a duration is an unresolved token (its value is known at deploy time only). @internal */
export const isToken = (value: number | Duration | undefined): boolean =>
  value !== undefined && (value instanceof Duration ? value.isUnresolved() : Token.isUnresolved(value));
/** A number of seconds as the messages write it. @internal */
export const fmtSeconds = (value: number): string => `${value} s`;

/** The checks {@link settingChecks} binds to a list of problems. @internal */
export interface SettingChecks {
  /** Checks a whole-number range; false when the value is out of it (a token counts as in range). */
  readonly range: (
    name: string,
    value: number | undefined,
    min: number,
    max: number,
    unit?: string,
  ) => boolean;
  /**
   * The duration in whole seconds; undefined for a token, or for a value that is not whole seconds (reported
   * here once, so the rules that use it are skipped instead of reporting it again).
   */
  readonly seconds: (name: string, value: Duration) => number | undefined;
  /** Checks a range of whole seconds (undefined: a token or already reported). */
  readonly durationRange: (name: string, s: number | undefined, min: number, max: number) => void;
}

/**
 * The range and duration checks of the settings, pushing to `problems`.
 *
 * @internal
 */
export function settingChecks(problems: string[]): SettingChecks {
  /** Checks a whole-number range; false when the value is out of it (a token counts as in range). */
  const range = (name: string, value: number | undefined, min: number, max: number, unit = '') => {
    if (value === undefined || isToken(value)) return true;
    if (Number.isInteger(value) && value >= min && value <= max) return true;
    problems.push(
      `${name} (${value}${unit}) must be a whole number from ${min} to ${max}${unit}; set a value in that range`,
    );
    return false;
  };
  /**
   * The duration in whole seconds; undefined for a token, or for a value that is not whole seconds (reported
   * here once, so the rules that use it are skipped instead of reporting it again).
   */
  const seconds = (name: string, value: Duration): number | undefined => {
    if (value.isUnresolved()) return undefined;
    const ms = value.toMilliseconds({ integral: false });
    if (Number.isInteger(ms / 1000)) return ms / 1000;
    problems.push(`${name} must be whole seconds (given ${ms} ms); round it to whole seconds`);
    return undefined;
  };
  const durationRange = (name: string, s: number | undefined, min: number, max: number) => {
    if (s === undefined) return;
    if (s < min || s > max) {
      problems.push(
        `${name} (${fmtSeconds(s)}) must be from ${fmtSeconds(min)} to ${fmtSeconds(max)}; set a value in that range`,
      );
    }
  };
  return { range, seconds, durationRange };
}
