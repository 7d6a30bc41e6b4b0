import type postgres from 'postgres';
import { RetryableError, TerminalError } from '../errors.ts';
import { checkEffectNames, describeEffectError, effectRequestHash } from './effect-request.ts';

/** Options of {@link performExternalEffect}. */
export interface PerformExternalEffectOptions {
  /**
   * A pool or reserved client, NOT the caller's transaction: the PENDING row must commit before the call,
   * whatever happens to the caller's transaction. It needs a free connection while the caller's transaction
   * holds its own (pool size ≥ 2, or a separate client).
   */
  readonly sql: postgres.Sql;
  /** Stable key of this effect (≤ 200 characters), also sent to the provider as its idempotency key. */
  readonly effectKey: string;
  /** Provider name (≤ 100 characters), e.g. `notifications-http`. */
  readonly provider: string;
  /** Operation name (≤ 100 characters), e.g. `send-escalation-notification`. */
  readonly operation: string;
  /** The request content; only its hash is stored (never the values). */
  readonly request: unknown;
  /**
   * Calls the provider with `idempotencyKey` (= `effectKey`; for a row written before effect keys named their
   * consumer, the key it was first sent with) and returns its reference (≤ 300 characters).
   * Throw `TerminalError` when the provider rejects the request for good; anything else is an unknown
   * outcome, retried later with the same key.
   */
  readonly call: (idempotencyKey: string) => Promise<{ reference: string }>;
}

/** What {@link performExternalEffect} returns. */
export interface ExternalEffectResult {
  /** The provider's reference of the effect. */
  readonly reference: string;
  /** True when the log already held COMPLETED and the provider was not called. */
  readonly replayed: boolean;
  /** Calls made for this key so far, this one included. */
  readonly attempts: number;
}

interface LogRow {
  status: 'PENDING' | 'COMPLETED' | 'FAILED_TERMINAL';
  /** The key sent to the provider: the effect key, or the one a row had before keys named their consumer. */
  provider_key: string;
  request_hash: string;
  provider_reference: string | null;
  attempts: number;
  last_error: string | null;
}

/**
 * Performs an external side effect at most once per `effectKey` as far as the provider can tell
 * (pattern document §17, `external_effect_log`):
 *
 * 1. **Read/record first** — one autocommitted statement inserts the key as PENDING with the request hash, or
 *    reads the existing row (and counts the attempt). It commits BEFORE the provider is called.
 * 2. COMPLETED → returns the stored reference; the provider is not called (`replayed: true`).
 *    Different request hash under the same key → `TerminalError('EFFECT_HASH_MISMATCH')`.
 *    FAILED_TERMINAL → `TerminalError('EFFECT_FAILED_TERMINAL')`.
 * 3. PENDING (new, or an earlier attempt whose outcome is unknown) → `call(providerKey)`: the effect key (or,
 *    for a row older than consumer-scoped keys, the key it was first sent with) is the provider's idempotency key, so a provider that already applied it answers with the same reference.
 * 4. Stores the reference and COMPLETED. If this fails or the process dies before it, the row stays PENDING
 *    and the next attempt calls again with the same key (never a new one).
 *
 * A `TerminalError` from `call` marks the row FAILED_TERMINAL and is rethrown; any other error is recorded in
 * `last_error` and rethrown as `RetryableError` (its own code, or `EFFECT_OUTCOME_UNKNOWN`). Concurrent
 * attempts with one key (two copies of a message in flight) may both call the provider; its idempotency key
 * makes that one effect.
 *
 * @example
 * ```ts
 * const { reference } = await performExternalEffect({
 *   sql: effectsSql,
 *   effectKey: effectKey(consumer, 'escalation-notification', envelope.idempotencyKey),
 *   provider: provider.name,
 *   operation: 'send-escalation-notification',
 *   request,
 *   call: (idempotencyKey) => provider.send(request, idempotencyKey),
 * });
 * ```
 */
export async function performExternalEffect(
  options: PerformExternalEffectOptions,
): Promise<ExternalEffectResult> {
  const { sql, effectKey, provider, operation, call } = options;
  if (typeof (sql as { begin?: unknown }).begin !== 'function') {
    throw new TerminalError(
      'EFFECT_LOG_IN_TRANSACTION',
      `performExternalEffect(${effectKey}) was given a transaction; pass a pool or reserved client so that the PENDING row commits before the provider is called`,
    );
  }
  checkEffectNames({ effectKey, provider, operation });
  const requestHash = effectRequestHash(effectKey, { provider, operation, request: options.request });

  const [row] = await sql<LogRow[]>`
    insert into external_effect_log (effect_key, provider_key, provider, operation, status, request_hash, attempts)
    values (${effectKey}, ${effectKey}, ${provider}, ${operation}, 'PENDING', ${requestHash}, 1)
    on conflict (effect_key) do update
    set attempts = external_effect_log.attempts + 1, updated_at = now()
    where external_effect_log.status = 'PENDING' and external_effect_log.request_hash = excluded.request_hash
    returning status, provider_key, request_hash, provider_reference, attempts, last_error
  `;
  // No row returned: the key exists and is not a PENDING row with this hash; read what it is.
  const current =
    row ??
    (
      await sql<LogRow[]>`
        select status, provider_key, request_hash, provider_reference, attempts, last_error
        from external_effect_log where effect_key = ${effectKey}
      `
    )[0];
  if (!current)
    throw new RetryableError(
      'EFFECT_LOG_RACE',
      `External effect ${effectKey} vanished while being read; retry`,
    );

  if (current.request_hash !== requestHash) {
    throw new TerminalError(
      'EFFECT_HASH_MISMATCH',
      `External effect ${effectKey} (${provider}/${operation}) was first requested with different content (request hash ${current.request_hash.slice(0, 12)}…, now ${requestHash.slice(0, 12)}…); a key names one effect: derive a new key for a different request`,
    );
  }
  if (current.status === 'COMPLETED') {
    return { reference: current.provider_reference as string, replayed: true, attempts: current.attempts };
  }
  if (current.status === 'FAILED_TERMINAL') {
    throw new TerminalError(
      'EFFECT_FAILED_TERMINAL',
      `External effect ${effectKey} (${provider}/${operation}) was rejected by the provider earlier (${current.last_error ?? 'no detail'}); it is not retried`,
    );
  }

  let reference: string;
  try {
    ({ reference } = await call(current.provider_key));
    if (typeof reference !== 'string' || reference.length < 1 || reference.length > 300) {
      throw new RetryableError(
        'EFFECT_BAD_REFERENCE',
        `Provider ${provider} returned no usable reference for ${effectKey} (expected 1 to 300 characters)`,
      );
    }
  } catch (error) {
    const terminal = error instanceof TerminalError;
    const detail = describeEffectError(error);
    await sql`
      update external_effect_log
      set status = ${terminal ? 'FAILED_TERMINAL' : 'PENDING'}, last_error = ${detail}, updated_at = now()
      where effect_key = ${effectKey} and status = 'PENDING'
    `.catch(() => {
      // Best effort: the row is PENDING either way and the next attempt reuses the key.
    });
    if (terminal) throw error;
    throw new RetryableError(
      error instanceof RetryableError ? error.code : 'EFFECT_OUTCOME_UNKNOWN',
      `External effect ${effectKey} (${provider}/${operation}) did not confirm: ${detail}; it will be retried with the same idempotency key`,
      { cause: error },
    );
  }

  const [completed] = await sql<{ provider_reference: string }[]>`
    update external_effect_log
    set status = 'COMPLETED', provider_reference = ${reference}, completed_at = now(), updated_at = now(),
      last_error = null
    where effect_key = ${effectKey} and status = 'PENDING'
    returning provider_reference
  `;
  if (completed) return { reference, replayed: false, attempts: current.attempts };
  // A concurrent attempt completed it first; the provider deduplicated on the key, so its reference stands.
  const [stored] = await sql<LogRow[]>`
    select status, provider_key, request_hash, provider_reference, attempts, last_error
    from external_effect_log where effect_key = ${effectKey}
  `;
  if (stored?.status === 'COMPLETED') {
    return { reference: stored.provider_reference as string, replayed: false, attempts: stored.attempts };
  }
  throw new RetryableError(
    'EFFECT_LOG_RACE',
    `External effect ${effectKey} changed state while it was recorded; retry`,
  );
}
