import { terminalConfirm } from './confirm.ts';
import { UsageError } from './errors.ts';
import { optionFlag, parseCount, optionText as str } from './parse-options.ts';
import { parseQuarantineFilter } from './quarantine-filter.ts';
import { type QuarantineReleaseAllResult, quarantineReleaseAll } from './quarantine-release-all.ts';
import type { OpsSession } from './run-ops-command.ts';

/** The flags of `quarantine release` that only `--all` takes. */
const BULK_FLAGS = ['reason', 'messageType', 'since', 'before', 'limit', 'dryRun', 'yes'] as const;

/**
 * `sqs-worker quarantine release --all`: the flags as commander gives them to {@link quarantineReleaseAll}, the
 * operator's terminal asking for confirmation unless `--yes` or `--dry-run`.
 *
 * @throws UsageError (exit 2) when an id is given too, or a flag does not parse.
 */
export async function quarantineReleaseAllCommand(
  s: OpsSession,
  flags: Readonly<Record<string, unknown>>,
  id: string | undefined,
): Promise<QuarantineReleaseAllResult> {
  if (id !== undefined) {
    throw new UsageError(
      `quarantine release takes an <id> or --all with filters, not both (given ${id} and --all)`,
    );
  }
  if (flags.force === true) {
    throw new UsageError(
      '--force releases one entry past its guard: check it, then run "quarantine release <id> --force"; --all skips guarded entries',
    );
  }
  if (flags.edit !== undefined || flags.forceEdit === true) {
    throw new UsageError(
      '--edit sends one corrected body: run "quarantine release <id> --edit <file.json>" for that entry, without --all',
    );
  }
  return quarantineReleaseAll(
    { store: s.store, sqs: s.sqs(), out: s.out, clock: s.clock, confirm: terminalConfirm() },
    {
      consumer: s.settings.consumer,
      queueUrl: s.require('queueUrl'),
      ...parseQuarantineFilter(flags, s.clock.now()),
      limit: parseCount(str(flags.limit) ?? '100', '--limit', 1, 10_000),
      dryRun: flags.dryRun === true,
      yes: flags.yes === true,
    },
  );
}

/**
 * The refusal of a one-entry `quarantine release` without an id, or with a flag of `--all`; undefined when the id is
 * there and no such flag was given.
 */
export function singleReleaseRefusal(
  flags: Readonly<Record<string, unknown>>,
  id: string | undefined,
): UsageError | undefined {
  if (id === undefined) {
    return new UsageError(
      'quarantine release needs the <id> of an entry ("sqs-worker quarantine list" shows them), or --all with the filters of quarantine list',
    );
  }
  const misplaced = BULK_FLAGS.filter((name) => flags[name] !== undefined);
  if (misplaced.length === 0) return undefined;
  return new UsageError(
    `${misplaced.map(optionFlag).join(', ')} select(s) entries for "quarantine release --all": add --all, or drop it to release ${id} alone`,
  );
}
