import { DatabaseConnectError, DatabaseTimeoutError, RetryableError, TerminalError } from '../../errors.ts';
import { missingTable } from '../../postgres/describe-database-error.ts';
import { classifyError, type Failure, NETWORK_ERROR_CODES, truncate } from '../../worker/classify-error.ts';
import { CANCELLED_SQLSTATE } from './inbox.ts';

/** SQLSTATEs that may clear on their own (pattern document §13). */
const RETRYABLE_SQLSTATES: Record<string, string> = {
  '40001': 'SERIALIZATION_FAILURE',
  '40P01': 'DEADLOCK_DETECTED',
  '55P03': 'LOCK_TIMEOUT',
  '57014': 'QUERY_CANCELED',
};

/** SQLSTATEs that mean the server cannot serve us now: the rest of the batch must not try. */
const CONNECTION_SQLSTATES: Record<string, string> = {
  '53300': 'TOO_MANY_CONNECTIONS',
  '57P01': 'ADMIN_SHUTDOWN',
  '57P02': 'CRASH_SHUTDOWN',
  '57P03': 'CANNOT_CONNECT_NOW',
};

/** Codes only postgres.js raises (a closed or timed-out database connection), with or without a query. */
const POSTGRES_JS_CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/** Network and postgres.js connection error codes. */
const CONNECTION_ERROR_CODES = new Set([...NETWORK_ERROR_CODES, ...POSTGRES_JS_CONNECTION_CODES]);

interface PostgresLikeError {
  name?: string;
  code?: string;
  severity?: string;
  message?: string;
  table_name?: string;
  column_name?: string;
  constraint_name?: string;
  /** The statement's text (postgres.js attaches it; its parameters are not part of it). */
  query?: unknown;
}

/**
 * What {@link classifyPostgresError} may know of where the error happened.
 *
 * @internal
 */
export interface ClassifyContext {
  /** The database role the failing connection signed in as (postgres.js `sql.options.user`). */
  readonly databaseUser?: string;
}

/** PostgreSQL's SQLSTATE for "permission denied". */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * A "permission denied" (42501) told as the missing grant it is: the object PostgreSQL names (a table, a sequence,
 * a schema: names from the code, never a payload value), the role, and the kind of statement (the first keyword
 * of its text: insert, update, …). PostgreSQL's own message names neither the role nor the privilege.
 */
function privilegeMessage(error: PostgresLikeError, context: ClassifyContext): string {
  const object =
    /^permission denied for (table|sequence|schema|view|function|database|relation) "?([\w.$]+)"?/.exec(
      error.message ?? '',
    );
  const statement =
    typeof error.query === 'string'
      ? /^\s*(select|insert|update|delete|merge)\b/i.exec(error.query)?.[1]?.toLowerCase()
      : undefined;
  const what = object ? `permission denied for ${object[1]} ${object[2]}` : 'permission denied';
  const role = context.databaseUser
    ? `database role ${context.databaseUser}`
    : "the connection's database role";
  const kind = statement ? ` (${/^[aeiou]/.test(statement) ? 'an' : 'a'} ${statement} statement)` : '';
  return `PostgreSQL ${INSUFFICIENT_PRIVILEGE}: ${what} to ${role}${kind}; grant it to the role in lambda/postgres/provision-roles.ts (the migration function applies it on deploy)`;
}

function postgresWhere(error: PostgresLikeError): string {
  const parts = [
    error.table_name && `table ${error.table_name}`,
    error.column_name && `column ${error.column_name}`,
    error.constraint_name && `constraint ${error.constraint_name}`,
  ].filter(Boolean);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

/**
 * Classifies any error thrown while the PostgreSQL store processes a record (DESIGN.md rule 4): the PostgreSQL
 * errors here, everything else by the engine's {@link classifyError}.
 *
 * - `RetryableError` / `TerminalError` from a handler keep their code (cut to 100 characters).
 * - PostgreSQL: IWC01 (a key cancelled while this copy was in flight, migration 00013) → terminal `CANCELLED`;
 *   40001, 40P01, 55P03, 57014 → retryable; 53300, 57P01–57P03 and class 08 → retryable and
 *   connection-class; class 22 (data) and 23 (constraint) → terminal; any other SQLSTATE → retryable (42P01
 *   names the missing table and the migrations to apply; 42501 the object, the role of `context.databaseUser` and
 *   the statement's kind: the grant a deploy must add).
 * - Network / postgres.js connection errors raised for a query → retryable and connection-class; the same
 *   codes from a handler's own network call → retryable `NETWORK_ERROR`.
 * - Anything else → retryable `UNHANDLED_ERROR`, bounded by the attempt policy, described by name, code and
 *   location only (see `describeUnknownError`).
 *
 * Class 22 and 23 messages can quote the offending value, so for PostgreSQL errors the stored message
 * names only the SQLSTATE, table, column and constraint.
 *
 * @internal
 */
export function classifyPostgresError(error: unknown, context: ClassifyContext = {}): Failure {
  if (
    error instanceof TerminalError ||
    error instanceof RetryableError ||
    error instanceof DatabaseTimeoutError
  ) {
    return classifyError(error);
  }
  const e = (typeof error === 'object' && error !== null ? error : {}) as PostgresLikeError;
  const code = typeof e.code === 'string' ? e.code : undefined;

  if (code && e.name === 'PostgresError') {
    const where = postgresWhere(e);
    if (code in CONNECTION_SQLSTATES) {
      return {
        retryable: true,
        code: CONNECTION_SQLSTATES[code] as string,
        message: `PostgreSQL ${code}${where}`,
        connection: true,
      };
    }
    if (code.startsWith('08')) {
      return {
        retryable: true,
        code: 'CONNECTION_EXCEPTION',
        message: `PostgreSQL ${code}`,
        connection: true,
      };
    }
    if (code === CANCELLED_SQLSTATE) {
      return {
        retryable: false,
        code: 'CANCELLED',
        message:
          'an operator cancelled this idempotency key while this copy was in flight (sqs-worker inbox cancel); its transaction was rolled back, nothing was applied',
        connection: false,
      };
    }
    if (code in RETRYABLE_SQLSTATES) {
      return {
        retryable: true,
        code: RETRYABLE_SQLSTATES[code] as string,
        message: `PostgreSQL ${code}${where}`,
        connection: false,
      };
    }
    if (code.startsWith('22')) {
      return {
        retryable: false,
        code: 'DATA_EXCEPTION',
        message: `PostgreSQL ${code} data exception${where}`,
        connection: false,
      };
    }
    if (code.startsWith('23')) {
      return {
        retryable: false,
        code: 'CONSTRAINT_VIOLATION',
        message: `PostgreSQL ${code} integrity constraint violation${where}`,
        connection: false,
      };
    }
    // A table name comes from the code, never from a payload: safe to name.
    const table = missingTable(error);
    return {
      retryable: true,
      code: `POSTGRES_${code}`,
      message: table
        ? `PostgreSQL ${code}: table ${table} does not exist; apply the migrations (npm run migrate, or the migration function on deploy)`
        : code === INSUFFICIENT_PRIVILEGE
          ? truncate(privilegeMessage(e, context))
          : `PostgreSQL ${code}${where}`,
      connection: false,
    };
  }
  // A network error is the database's only when postgres.js raised it for a query (it attaches `query`): the
  // same ECONNREFUSED from a handler's own HTTP call must not stop the batch from using a healthy database.
  if (code && CONNECTION_ERROR_CODES.has(code) && (POSTGRES_JS_CONNECTION_CODES.has(code) || 'query' in e)) {
    return {
      retryable: true,
      code: 'DATABASE_UNAVAILABLE',
      // DatabaseConnectError names the setting and host:port to check, never a password.
      message: error instanceof DatabaseConnectError ? error.message : `database connection failed: ${code}`,
      connection: true,
    };
  }
  return classifyError(error);
}
