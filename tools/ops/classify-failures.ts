import { table } from './output.ts';

/** The first-seen version of a message whose key was never recorded in the inbox (`dlq peek`: no inbox entry). */
export const NEVER_ATTEMPTED = '(never attempted)';
/** The first-seen version of a quarantined message whose key has no inbox entry (never claimed, or purged). */
export const NO_INBOX_ENTRY = '(no inbox entry)';
/** The first-seen version of a message without a usable idempotency key. */
export const NO_KEY = '(no key)';
/** The first-seen version of an inbox entry written before the inbox kept versions. */
export const UNKNOWN_VERSION = '(unknown)';

/** Messages (DLQ messages, quarantine entries) of one failure code whose keys were first seen by one worker version. */
export interface FailureClass {
  readonly code: string;
  /** The worker version that first saw the key, or one of the labels above. */
  readonly firstVersion: string;
  readonly count: number;
  /** Up to three idempotency keys of the class, to look up with `inbox show`. */
  readonly sampleKeys: string[];
}

/**
 * One message to classify — or, counted by the store already, `count` messages of one code and inbox state — its
 * failure code, its key (or some of them), and what the inbox says of the key.
 */
export interface ClassifiedItem {
  readonly code: string;
  /** The message's idempotency key, or sample keys of the counted messages; empty: no usable key. */
  readonly keys: readonly string[];
  /** The inbox entry of the key, if it has one: the version that first saw it (null: not recorded). */
  readonly inbox: { readonly firstVersion: string | null } | undefined;
  /** How many messages this item stands for. @default 1 */
  readonly count?: number;
}

/**
 * Counts `items` by failure code and first-seen version, largest class first: before a redrive, whether the
 * failures started with one deploy (one version) or span versions (a producer's change, a dependency). A key
 * without an inbox entry is a class of its own (`missing`: {@link NEVER_ATTEMPTED} for the DLQ).
 *
 * @example
 * classifyFailures([{ code: 'CASE_NOT_FOUND', keys: ['k1'], inbox: { firstVersion: '3f9c2a1b' } }], NEVER_ATTEMPTED);
 * // [{ code: 'CASE_NOT_FOUND', firstVersion: '3f9c2a1b', count: 1, sampleKeys: ['k1'] }]
 */
export function classifyFailures(items: readonly ClassifiedItem[], missing: string): FailureClass[] {
  const classes = new Map<
    string,
    { code: string; firstVersion: string; count: number; sampleKeys: string[] }
  >();
  for (const item of items) {
    const firstVersion =
      item.keys.length === 0 ? NO_KEY : !item.inbox ? missing : (item.inbox.firstVersion ?? UNKNOWN_VERSION);
    const id = `${item.code}\u0000${firstVersion}`;
    const found = classes.get(id) ?? { code: item.code, firstVersion, count: 0, sampleKeys: [] };
    found.count += item.count ?? 1;
    for (const key of item.keys) {
      if (found.sampleKeys.length < 3 && !found.sampleKeys.includes(key)) found.sampleKeys.push(key);
    }
    classes.set(id, found);
  }
  return [...classes.values()].sort(
    (a, b) =>
      b.count - a.count || a.code.localeCompare(b.code) || a.firstVersion.localeCompare(b.firstVersion),
  );
}

/**
 * The table of {@link classifyFailures}' classes (`dlq peek --group`, `quarantine list --group`).
 *
 * @internal
 */
export function renderFailureClasses(classes: readonly FailureClass[]): string {
  return table(
    ['code', 'first-seen version', 'count', 'sample keys'],
    classes.map((c) => [c.code, c.firstVersion, c.count, c.sampleKeys.join('\n')]),
  );
}
