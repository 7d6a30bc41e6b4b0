import type postgres from 'postgres';
import { ATTEMPT_HISTORY_LIMIT, type AttemptOutcome } from '../../attempt-history.ts';

type Sql = postgres.Sql | postgres.TransactionSql;
/** A value bound as a parameter, or an SQL fragment (a column of the statement, `sql\`r.m\``). */
type SqlValue = postgres.Fragment | string | number | null;

/**
 * What one attempt entry of `worker_inbox.attempt_history` is made of (`AttemptRecord`): each a parameter, or a
 * fragment naming a column of the statement it is used in.
 *
 * @internal
 */
export interface AttemptEntryValues {
  readonly outcome: AttemptOutcome;
  readonly code?: string | null;
  readonly version: SqlValue;
  readonly messageId: SqlValue;
  /** The business attempt number. @default the row's `receive_count` (an update of the row) */
  readonly attempt?: SqlValue;
  readonly receiveCount: SqlValue;
}

/**
 * The delivery an attempt is of (an `InboxEntry` is one).
 *
 * @internal
 */
export interface AttemptDelivery {
  readonly sqsMessageId: string;
  readonly workerVersion?: string;
  readonly receiveCount?: number;
}

/**
 * The attempt-history values of `delivery` that ended `outcome` (a failure with `code`).
 *
 * @internal
 */
export function deliveryAttempt(
  delivery: AttemptDelivery,
  outcome: AttemptOutcome,
  code?: string,
): AttemptEntryValues {
  return {
    outcome,
    code: code ?? null,
    version: delivery.workerVersion ?? null,
    messageId: delivery.sqsMessageId,
    receiveCount: delivery.receiveCount ?? null,
  };
}

/**
 * The jsonb of one attempt (`AttemptRecord`), timed `now()`; null members left out.
 *
 * @internal
 */
export function attemptEntry(sql: Sql, values: AttemptEntryValues): postgres.Fragment {
  const attempt = values.attempt ?? sql`receive_count`;
  return sql`jsonb_strip_nulls(jsonb_build_object(
    'at', now(), 'outcome', ${values.outcome}::text, 'code', ${values.code ?? null}::text,
    'version', ${values.version}::text, 'messageId', ${values.messageId}::text, 'attempt', ${attempt}::int,
    'receiveCount', ${values.receiveCount}::int
  ))`;
}

/**
 * The row's `attempt_history` with `entry` appended, cut to the last {@link ATTEMPT_HISTORY_LIMIT} attempts in the
 * same expression (a lax jsonpath slice `$[last - (limit - 1) to last]`, which keeps a shorter array whole): the
 * statement that records an outcome keeps the history bounded, with no extra round trip and no session state.
 * `history` names the column where a bare name is ambiguous (`worker_inbox.attempt_history` in an `on conflict`).
 *
 * @internal
 */
export function appendedAttemptHistory(
  sql: Sql,
  entry: postgres.Fragment,
  history: postgres.Fragment = sql`attempt_history`,
): postgres.Fragment {
  return sql`jsonb_path_query_array(
    ${history} || jsonb_build_array(${entry}), '$[last - $keep to last]',
    jsonb_build_object('keep', ${ATTEMPT_HISTORY_LIMIT - 1}::int)
  )`;
}
