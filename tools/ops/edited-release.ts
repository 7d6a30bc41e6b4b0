import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { envelopeSchema } from '../../lambda/worker/envelope.ts';
import { UsageError } from './errors.ts';
import type { QuarantineReleaseResult } from './quarantine-release-result.ts';

/** A corrected body as the operator gave it (`quarantine release <id> --edit <file>`): its text and where it came from. */
export interface EditedBodyInput {
  readonly text: string;
  /** The file it was read from, named in a refusal. */
  readonly source: string;
}

/** The body an edited release sends, and what its audit keeps of the two bodies (hashes, never the bodies). */
export interface EditedRelease {
  /** The edited envelope, its `idempotencyKey` set to {@link EditedRelease.releasedAsKey}. */
  readonly body: string;
  readonly releasedAsKey: string;
  /** sha256 (hex) of the quarantined body and of the body sent. */
  readonly originalBodyHash: string;
  readonly editedBodyHash: string;
  /** True when `forceEdit` let a messageType or aggregate other than the original's through. */
  readonly forced: boolean;
}

/** `<key>:v<N>`, N ≥ 2: a version an edited release gave the key. */
const VERSION = /^(.*):v([2-9]|[1-9][0-9]+)$/;

/** Versions tried before giving up (a key released as this many versions needs a look, not another one). */
const MAX_VERSION = 99;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Reads the file of `--edit`.
 *
 * @throws UsageError (exit 2) naming the file when it cannot be read.
 */
export async function readEditedBody(path: string): Promise<EditedBodyInput> {
  try {
    return { text: await readFile(path, 'utf8'), source: path };
  } catch (error) {
    throw new UsageError(
      `--edit ${path}: the file cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); ` +
        'give the path of a JSON file holding the corrected envelope (start from "sqs-worker quarantine show <id> --json").',
      { cause: error },
    );
  }
}

/**
 * The key an edited release sends its body under: the first `<base>:v<N>` (N from 2, and above the version of
 * `key` itself) that `taken` says no inbox entry, quarantine entry or earlier edited release uses, where `<base>` is
 * `key` without its own `:v<N>`. So `order:1` is released as `order:1:v2`; if `order:1:v2` fails and is edited in turn,
 * as `order:1:v3`. A new key keeps the original's request-hash check intact: the original key stays bound to the
 * original request, and a copy of it is never confused with the edited one.
 *
 * @throws UsageError (exit 2) when versions up to 99 are all taken.
 */
export async function nextVersionedKey(
  key: string,
  taken: (candidate: string) => Promise<boolean>,
): Promise<string> {
  const match = VERSION.exec(key);
  const base = match ? (match[1] as string) : key;
  const from = match ? Number(match[2]) + 1 : 2;
  for (let version = from; version <= MAX_VERSION; version += 1) {
    const candidate = `${base}:v${version}`;
    if (!(await taken(candidate))) return candidate;
  }
  throw new UsageError(
    `Idempotency key "${base}" has been released as versions ${from} to ${MAX_VERSION} already; nothing was sent. ` +
      'Look at "sqs-worker inbox show" of its versions before releasing another one.',
  );
}

/**
 * The key whose next version an edited release is sent under: the quarantined message's, or (a body the worker could
 * not decode has none) the edited body's.
 *
 * @throws UsageError (exit 2) when neither has one.
 */
export function editedKeyBase(originalKey: string | null, edited: EditedBodyInput): string {
  if (originalKey) return originalKey;
  try {
    const key = (JSON.parse(edited.text) as { idempotencyKey?: unknown }).idempotencyKey;
    if (typeof key === 'string' && key.length > 0) return key;
  } catch {
    // refused below, as a body without a key
  }
  throw new UsageError(
    `--edit ${edited.source}: the quarantined message had no usable idempotencyKey and the edited body gives none; ` +
      "put the producer's idempotencyKey in the file (the release sends it as <key>:v2).",
  );
}

/** The envelope fields an edit must keep (unless forced): where the effect lands. */
const TARGET_FIELDS = ['messageType', 'aggregateType', 'aggregateId'] as const;

/**
 * Validates an edited body against the quarantined one and gives it its new key: JSON, a valid envelope, the same
 * messageType, aggregateType and aggregateId as the original (unless `forceEdit`), and an idempotencyKey that is the
 * original's or one of its versions (the release sets `releasedAsKey`). Nothing of either body is put in an error
 * message but the field names and the envelope's own identifiers.
 *
 * @throws UsageError (exit 2) naming the file, the field and the fix.
 */
export function editedRelease(
  original: { readonly body: string; readonly idempotencyKey: string | null },
  edited: EditedBodyInput,
  releasedAsKey: string,
  options: { readonly forceEdit?: boolean } = {},
): EditedRelease {
  const where = `--edit ${edited.source}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(edited.text);
  } catch (error) {
    throw new UsageError(
      `${where}: not JSON (${(error as Error).message}); fix the file and run the release again.`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(
      `${where}: the body must be a JSON object (an envelope); fix the file and run again.`,
    );
  }
  const fields = parsed as Record<string, unknown>;
  refuseForeignKey(where, fields.idempotencyKey, original.idempotencyKey, releasedAsKey);
  const changed = changedTarget(original.body, fields);
  if (changed.length > 0 && options.forceEdit !== true) {
    throw new UsageError(
      `${where}: ${changed.map((c) => `${c.field} is "${c.edited}", the quarantined message's is "${c.original}"`).join('; ')}. ` +
        'An edit corrects a message; it does not redirect it. Restore the field, or pass --force-edit if the ' +
        'message really belongs there.',
    );
  }
  const body = JSON.stringify({ ...fields, idempotencyKey: releasedAsKey });
  const valid = envelopeSchema.safeParse(JSON.parse(body));
  if (!valid.success) {
    const issues = valid.error.issues.map(
      (issue) => `${issue.path.join('.') || '(envelope)'}: ${issue.message}`,
    );
    throw new UsageError(`${where}: not a valid envelope: ${issues.join('; ')}. Fix the file and run again.`);
  }
  return {
    body,
    releasedAsKey,
    originalBodyHash: sha256(original.body),
    editedBodyHash: sha256(body),
    forced: changed.length > 0,
  };
}

/** Refuses an edited idempotencyKey that is neither the original's, nor one of its versions, nor absent. */
function refuseForeignKey(
  where: string,
  given: unknown,
  originalKey: string | null,
  releasedAsKey: string,
): void {
  if (given === undefined || originalKey === null) return;
  const base = (key: string) => VERSION.exec(key)?.[1] ?? key;
  if (typeof given === 'string' && base(given) === base(originalKey)) return;
  throw new UsageError(
    `${where}: idempotencyKey is ${JSON.stringify(given)}, not the quarantined message's "${originalKey}". The release ` +
      `sends the edit as "${releasedAsKey}" (a new version of the original key); leave the key as it was.`,
  );
}

/** The target fields the edit changed, against the original body when it is an object (an undecodable one has none). */
function changedTarget(
  originalBody: string,
  edited: Record<string, unknown>,
): Array<{ field: string; original: unknown; edited: unknown }> {
  let original: unknown;
  try {
    original = JSON.parse(originalBody);
  } catch {
    return [];
  }
  if (typeof original !== 'object' || original === null) return [];
  const before = original as Record<string, unknown>;
  return TARGET_FIELDS.filter((field) => before[field] !== undefined && before[field] !== edited[field]).map(
    (field) => ({ field, original: before[field], edited: edited[field] }),
  );
}

/**
 * What the audit keeps of an edited release: the link to the new key and the hashes of both bodies (never a body).
 *
 * @internal
 */
export function editAuditDetail(edit: EditedRelease): Record<string, unknown> {
  return {
    edited: true,
    releasedAsKey: edit.releasedAsKey,
    originalBodyHash: edit.originalBodyHash,
    editedBodyHash: edit.editedBodyHash,
    editForced: edit.forced,
  };
}

/**
 * The `edit` part of a release's result.
 *
 * @internal
 */
export function editResult(edit: EditedRelease): NonNullable<QuarantineReleaseResult['edit']> {
  const { releasedAsKey, originalBodyHash, editedBodyHash, forced } = edit;
  return { releasedAsKey, originalBodyHash, editedBodyHash, forced };
}
