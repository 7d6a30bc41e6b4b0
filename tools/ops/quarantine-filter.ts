import { UsageError } from './errors.ts';
import { parseDuration } from './parse-duration.ts';

/**
 * Which quarantine entries `quarantine list` shows and `quarantine release --all` releases; every given field must
 * match. The times bound `last_quarantined_at` (DynamoDB `lastQuarantinedAt`): when the worker last quarantined it.
 */
export interface QuarantineFilter {
  /** Only this reason code (`--reason`). */
  readonly reasonCode?: string | undefined;
  /** Only this envelope messageType (`--message-type`). */
  readonly messageType?: string | undefined;
  /** Only entries last quarantined at or after this instant (`--since`). */
  readonly since?: Date | undefined;
  /** Only entries last quarantined before this instant (`--before`). */
  readonly before?: Date | undefined;
}

/**
 * Parses `--since` / `--before`: an ISO 8601 instant (`2026-05-01T10:00:00Z`) or a duration back from `now`
 * (`2h`: two hours ago).
 *
 * @throws UsageError naming the flag, the value and the accepted forms.
 */
export function parseInstant(value: string, flag: string, now: Date): Date {
  const trimmed = value.trim();
  if (/^\d{4}-\d{2}-\d{2}/.test(trimmed)) {
    const parsed = new Date(trimmed);
    if (!Number.isNaN(parsed.getTime())) return parsed;
  } else if (/^[\dsmhdw]+$/.test(trimmed)) {
    return new Date(now.getTime() - parseDuration(trimmed, flag) * 1000);
  }
  throw new UsageError(
    `${flag} must be an ISO 8601 time like 2026-05-01T10:00:00Z or a duration back from now like 2h or 3d (given "${value}")`,
  );
}

/**
 * The filter of the `quarantine list` / `quarantine release --all` flags, as commander gives them.
 *
 * @throws UsageError when a time does not parse, or `--since` is not before `--before`.
 */
export function parseQuarantineFilter(
  flags: { reason?: unknown; messageType?: unknown; since?: unknown; before?: unknown },
  now: Date,
): QuarantineFilter {
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const since = text(flags.since);
  const before = text(flags.before);
  const filter: QuarantineFilter = {
    reasonCode: text(flags.reason),
    messageType: text(flags.messageType),
    since: since === undefined ? undefined : parseInstant(since, '--since', now),
    before: before === undefined ? undefined : parseInstant(before, '--before', now),
  };
  if (filter.since && filter.before && filter.since >= filter.before) {
    throw new UsageError(
      `--since must be earlier than --before (given --since ${filter.since.toISOString()}, --before ${filter.before.toISOString()})`,
    );
  }
  return filter;
}
