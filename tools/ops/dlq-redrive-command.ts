import { type DlqCanaryRedriveResult, dlqCanaryRedrive } from './dlq-canary-redrive.ts';
import { type DlqRedriveResult, dlqRedrive, parseRedriveFilters } from './dlq-redrive.ts';
import { UsageError } from './errors.ts';
import { parseDuration } from './parse-duration.ts';
import { optionFlag, parseCount, parsePositive, parseRate, optionText as str } from './parse-options.ts';
import type { OpsSession } from './run-ops-command.ts';

/**
 * `sqs-worker dlq redrive`: the flags as commander gives them, to a plain redrive of at most `--max` messages
 * ({@link dlqRedrive}) or, with `--canary N`, a canary redrive that follows its keys ({@link dlqCanaryRedrive}; in
 * rounds with `--watch`, where `--max`, if given, caps all rounds together).
 *
 * @throws UsageError (exit 2) for a missing `--max` without `--canary`, a canary flag without `--canary`, `--canary`
 *   with `--dry-run` or `--no-rearm`, or a flag out of range.
 */
export async function dlqRedriveCommand(
  s: OpsSession,
  flags: Readonly<Record<string, unknown>>,
): Promise<DlqRedriveResult | DlqCanaryRedriveResult> {
  const deps = { store: s.store, sqs: s.sqs(), out: s.out, clock: s.clock };
  const common = {
    dlqUrl: s.require('dlqUrl'),
    queueUrl: s.require('queueUrl'),
    consumer: s.settings.consumer,
    ratePerSecond: parseRate(str(flags.rate) ?? '5'),
    filter: parseRedriveFilters((flags.filter as string[] | undefined) ?? []),
  };
  const max = str(flags.max);
  const canary = str(flags.canary);
  if (canary === undefined) {
    const misplaced = ['watch', 'growth', 'maxFailures', 'roundTimeout'].filter(
      (name) => flags[name] !== undefined,
    );
    if (misplaced.length > 0) {
      throw new UsageError(
        `${misplaced.map(optionFlag).join(', ')} belong(s) to a canary redrive: add --canary <n> (given without it)`,
      );
    }
    if (max === undefined) {
      throw new UsageError(
        'dlq redrive needs --max <n> (never move more than N messages), or --canary <n> --watch to redrive in rounds that stop on failures',
      );
    }
    return dlqRedrive(deps, {
      ...common,
      max: parseCount(max, '--max', 1, 100_000),
      dryRun: flags.dryRun === true,
      rearm: flags.rearm !== false,
    });
  }
  if (flags.dryRun === true || flags.rearm === false) {
    throw new UsageError(
      '--canary judges each key by its inbox outcome after a re-armed send: it takes neither --dry-run (run "dlq redrive --max <n> --dry-run" first) nor --no-rearm',
    );
  }
  return dlqCanaryRedrive(deps, {
    ...common,
    canary: parseCount(canary, '--canary', 1, 10_000),
    watch: flags.watch === true,
    growth: parseGrowth(str(flags.growth) ?? '1'),
    maxFailures: parseCount(str(flags.maxFailures) ?? '0', '--max-failures', 0, 100_000),
    roundTimeoutMs: parseDuration(str(flags.roundTimeout) ?? '60s', '--round-timeout') * 1000,
    ...(max === undefined ? {} : { max: parseCount(max, '--max', 1, 100_000) }),
  });
}

/** `--growth`: a factor of at least 1 (1: every round the same size). */
function parseGrowth(value: string): number {
  const growth = parsePositive(value, '--growth');
  if (growth < 1) {
    throw new UsageError(
      `--growth must be at least 1: each round as large as the last, or larger (given "${value}")`,
    );
  }
  return growth;
}
