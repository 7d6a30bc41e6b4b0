import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import type { Confirm } from './confirm.ts';
import { currentActor } from './current-actor.ts';
import { FailedChecksError, OperationError, OpsError, OutOfOrderReleaseError, UsageError } from './errors.ts';
import { createMemoryOutput } from './memory-output.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import type { QuarantineFilter } from './quarantine-filter.ts';
import type { QuarantineListEntry } from './render-quarantine-list.ts';

/** Options of {@link quarantineReleaseAll}. */
export interface QuarantineReleaseAllOptions extends QuarantineFilter {
  readonly consumer: string;
  /** The source (worker) queue the messages are re-sent to. */
  readonly queueUrl: string;
  /** Release at most this many entries (the oldest matching ones). */
  readonly limit: number;
  /** Show what would be released (each entry's guard checked); send and change nothing. */
  readonly dryRun?: boolean;
  /** Confirmed on the command line (`--yes`): no question asked. */
  readonly yes?: boolean;
  /** Who runs it, for each release's audit row. @default SQS_WORKER_ACTOR or the OS user */
  readonly actor?: string;
}

/** What became of one entry of a bulk release (in a dry run, what would). */
export interface BulkReleaseItem {
  readonly quarantineId: string;
  readonly messageType: string | null;
  readonly idempotencyKey: string | null;
  readonly reasonCode: string;
  readonly result: 'released' | 'skipped' | 'not attempted' | 'would release' | 'would skip';
  readonly releasedMessageId: string | null;
  readonly auditId: string | null;
  /** Why it was (or would be) skipped: `NEWER_COMPLETED_EVENTS`, `IDEMPOTENCY_HASH_MISMATCH`, `REFUSED`, `ERROR`. */
  readonly skipCode: string | null;
  /** The refusal's first sentence (metadata only). */
  readonly skipReason: string | null;
}

/** Result of {@link quarantineReleaseAll}. */
export interface QuarantineReleaseAllResult {
  readonly consumer: string;
  readonly queueUrl: string;
  readonly dryRun: boolean;
  readonly filter: QuarantineFilter;
  readonly limit: number;
  /** Entries the filter matched (at most `limit`). */
  readonly matched: number;
  readonly released: number;
  readonly skipped: number;
  readonly items: BulkReleaseItem[];
}

const quiet = () => createMemoryOutput();

/**
 * `quarantine release --all`: releases the unreleased quarantine entries of a consumer that match the filter of
 * `quarantine list` (reason code, message type, `since` / `before`), oldest first, at most `limit`, each exactly as
 * `quarantine release <id>` does (the store's {@link OpsStore.quarantineRelease}: the newer-completed-events guard, the
 * inbox re-arm, one audit row per released entry). `--force` is not offered: an entry whose guard refuses it (newer
 * events of its aggregate completed, a hash mismatch, released meanwhile) is skipped and reported, and the others go
 * on; release it by id after checking it.
 *
 * Asks `confirm` first, naming how many entries go to which queue, unless `yes`; without a terminal to ask on
 * (`confirm` undefined) it refuses. `dryRun` lists each entry with what its guard says now, sending nothing.
 *
 * @throws UsageError (exit 2) when neither confirmed nor a dry run and no terminal can ask.
 * @throws OperationError (exit 1) when the operator answers no (nothing was released).
 * @throws FailedChecksError (exit 1, after printing the result) when an entry was skipped.
 * @example
 * ```ts
 * await quarantineReleaseAll(
 *   { store, sqs, out, clock: systemClock },
 *   { consumer: 'case-worker', queueUrl, reasonCode: 'CASE_NOT_FOUND', limit: 100, yes: true },
 * );
 * ```
 */
export async function quarantineReleaseAll(
  deps: { store: OpsStore; sqs: SqsSender; out: OpsOutput; clock: Clock; confirm?: Confirm | undefined },
  options: QuarantineReleaseAllOptions,
): Promise<QuarantineReleaseAllResult> {
  const { store, out } = deps;
  const filter: QuarantineFilter = {
    reasonCode: options.reasonCode,
    messageType: options.messageType,
    since: options.since,
    before: options.before,
  };
  const listed = await store.quarantineList(
    { out: quiet() },
    { consumer: options.consumer, ...filter, limit: options.limit, oldestFirst: true },
  );
  const dryRun = options.dryRun === true;
  const items =
    dryRun || listed.entries.length === 0
      ? await checkAll(store, options.consumer, listed.entries)
      : await releaseAll(deps, options, listed.entries);
  const count = (result: BulkReleaseItem['result']) => items.filter((item) => item.result === result).length;
  const result: QuarantineReleaseAllResult = {
    consumer: options.consumer,
    queueUrl: options.queueUrl,
    dryRun,
    filter,
    limit: options.limit,
    matched: listed.entries.length,
    released: count('released'),
    skipped: count('skipped') + count('not attempted'),
    items,
  };
  emit(out, result, () => renderReleaseAll(result));
  if (result.skipped > 0) {
    throw new FailedChecksError(
      `${result.skipped} of ${result.matched} quarantine entries were not released (see the table); release each by ` +
        'id after checking it ("sqs-worker quarantine show <id>").',
    );
  }
  return result;
}

/** Dry run: each entry with what its guard says now (`quarantine show`'s newer-events count), nothing sent. */
async function checkAll(
  store: OpsStore,
  consumer: string,
  entries: readonly QuarantineListEntry[],
): Promise<BulkReleaseItem[]> {
  const items: BulkReleaseItem[] = [];
  for (const entry of entries) {
    const shown = await store.quarantineShow(
      { out: quiet() },
      { consumer, quarantineId: entry.quarantineId },
    );
    const newer = shown.newerCompletedEvents ?? 0;
    let skip: { code: string; reason: string } | undefined;
    if (entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH') {
      skip = { code: 'IDEMPOTENCY_HASH_MISMATCH', reason: 'its key belongs to a different request' };
    } else if (newer > 0) {
      skip = {
        code: 'NEWER_COMPLETED_EVENTS',
        reason: `${newer} newer event(s) of ${shown.aggregateType ?? 'its aggregate'} "${shown.aggregateId}" completed`,
      };
    }
    items.push(item(entry, skip ? 'would skip' : 'would release', { skip }));
  }
  return items;
}

/** Asks for confirmation, then releases each entry in turn; a refusal skips that entry only. */
async function releaseAll(
  deps: { store: OpsStore; sqs: SqsSender; out: OpsOutput; clock: Clock; confirm?: Confirm | undefined },
  options: QuarantineReleaseAllOptions,
  entries: readonly QuarantineListEntry[],
): Promise<BulkReleaseItem[]> {
  const { store, sqs, clock } = deps;
  await confirmRelease(deps, options, entries);
  const actor = options.actor ?? currentActor();
  const items: BulkReleaseItem[] = [];
  let stopped = false;
  for (const entry of entries) {
    if (stopped) {
      items.push(item(entry, 'not attempted', { skip: { code: 'ERROR', reason: 'stopped after an error' } }));
      continue;
    }
    try {
      const released = await store.quarantineRelease(
        { sqs, out: quiet(), clock },
        { quarantineId: entry.quarantineId, queueUrl: options.queueUrl, consumer: options.consumer, actor },
      );
      items.push(item(entry, 'released', { released }));
    } catch (error) {
      if (!(error instanceof OpsError)) {
        // Not a refusal of this entry (the store or the queue failed): the others would fail the same way.
        stopped = true;
        items.push(item(entry, 'skipped', { skip: { code: 'ERROR', reason: firstSentence(error) } }));
        continue;
      }
      items.push(
        item(entry, 'skipped', { skip: { code: skipCode(error, entry), reason: firstSentence(error) } }),
      );
    }
  }
  return items;
}

/** The question (or, without a terminal, the refusal) before anything is sent. */
async function confirmRelease(
  deps: { out: OpsOutput; confirm?: Confirm | undefined },
  options: QuarantineReleaseAllOptions,
  entries: readonly QuarantineListEntry[],
): Promise<void> {
  if (options.yes) return;
  const what = `${entries.length} quarantine entr${entries.length === 1 ? 'y' : 'ies'} of ${options.consumer} to ${options.queueUrl}`;
  if (!deps.confirm) {
    throw new UsageError(
      `quarantine release --all would re-send ${what}: pass --yes to confirm, or --dry-run to see them and what their guards say first.`,
    );
  }
  deps.out.note(listTable(entries));
  if (!(await deps.confirm(`Release ${what}?`))) {
    throw new OperationError('Not confirmed: nothing was released.');
  }
}

function skipCode(error: OpsError, entry: QuarantineListEntry): string {
  if (error instanceof OutOfOrderReleaseError) return 'NEWER_COMPLETED_EVENTS';
  if (entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH') return 'IDEMPOTENCY_HASH_MISMATCH';
  return 'REFUSED';
}

/** The first sentence of an error (a refusal's later lines list events and fixes the table has no room for). */
function firstSentence(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const [line = ''] = message.split('\n');
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

function item(
  entry: QuarantineListEntry,
  result: BulkReleaseItem['result'],
  outcome: {
    released?: { releasedMessageId: string; auditId: string };
    skip?: { code: string; reason: string } | undefined;
  },
): BulkReleaseItem {
  return {
    quarantineId: entry.quarantineId,
    messageType: entry.messageType,
    idempotencyKey: entry.idempotencyKey,
    reasonCode: entry.reasonCode,
    result,
    releasedMessageId: outcome.released?.releasedMessageId ?? null,
    auditId: outcome.released?.auditId ?? null,
    skipCode: outcome.skip?.code ?? null,
    skipReason: outcome.skip?.reason ?? null,
  };
}

function listTable(entries: readonly QuarantineListEntry[]): string {
  return table(
    ['id', 'messageType', 'idempotency key', 'reason', 'last quarantined'],
    entries.map((e) => [e.quarantineId, e.messageType, e.idempotencyKey, e.reasonCode, e.lastQuarantinedAt]),
  );
}

function renderReleaseAll(result: QuarantineReleaseAllResult): string {
  if (result.matched === 0) return `No unreleased quarantine entries of ${result.consumer} match the filter.`;
  const rows = result.items.map((i) => [
    i.quarantineId,
    i.messageType,
    i.idempotencyKey,
    i.reasonCode,
    i.result,
    i.releasedMessageId ?? i.skipCode,
    i.skipReason,
  ]);
  const skips = result.items.filter((i) => i.result === 'would skip').length;
  return [
    result.dryRun
      ? `Dry run: ${result.matched - skips} of ${result.matched} matching entries would be released to ${result.queueUrl}, ` +
        `${skips} skipped by their guard; nothing was sent or changed.`
      : `Released ${result.released} of ${result.matched} matching entries to ${result.queueUrl}; ${result.skipped} skipped.`,
    table(
      ['id', 'messageType', 'idempotency key', 'reason', 'result', 'message id / skip', 'why skipped'],
      rows,
    ),
    result.matched === result.limit
      ? `--limit ${result.limit} reached: more entries may match; run it again for the next ones.`
      : '',
    result.dryRun ? '' : 'Follow them with "sqs-worker inbox stats" and "sqs-worker quarantine list".',
  ]
    .filter(Boolean)
    .join('\n');
}
