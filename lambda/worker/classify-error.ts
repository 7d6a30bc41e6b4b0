import { RetryableError, TerminalError } from '../errors.ts';

/** A failure after classification. */
export interface Failure {
  /** True → the message may succeed later; false → it never will as it is. */
  readonly retryable: boolean;
  /** Stable code (stored in `failure_code`, matched by `terminalAfterCodes`). */
  readonly code: string;
  /** Text safe to log and store: never a payload value or SQL parameter. */
  readonly message: string;
  /** True when the database itself is unreachable or refusing connections: stop using it for this batch. */
  readonly connection: boolean;
}

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

/** Network and postgres.js connection error codes. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

const MAX_MESSAGE = 500;

interface PostgresLikeError {
  name?: string;
  code?: string;
  severity?: string;
  message?: string;
  table_name?: string;
  column_name?: string;
  constraint_name?: string;
}

/** Truncates a failure message to what fits a log line and the inbox column. */
export function truncate(text: string, max = MAX_MESSAGE): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
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
 * Classifies any error thrown while processing a record (DESIGN.md rule 4).
 *
 * - `RetryableError` / `TerminalError` from a handler keep their code.
 * - PostgreSQL: 40001, 40P01, 55P03, 57014 → retryable; 53300, 57P01–57P03 and class 08 → retryable and
 *   connection-class; class 22 (data) and 23 (constraint) → terminal; any other SQLSTATE → retryable.
 * - Network / postgres.js connection errors → retryable and connection-class.
 * - Anything else → retryable `UNHANDLED_ERROR`, bounded by the attempt policy.
 *
 * Class 22 and 23 messages can quote the offending value, so for PostgreSQL errors the stored message
 * names only the SQLSTATE, table, column and constraint.
 */
export function classifyError(error: unknown): Failure {
  if (error instanceof TerminalError) {
    return { retryable: false, code: error.code, message: truncate(error.message), connection: false };
  }
  if (error instanceof RetryableError) {
    return { retryable: true, code: error.code, message: truncate(error.message), connection: false };
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
    return {
      retryable: true,
      code: `POSTGRES_${code}`,
      message: `PostgreSQL ${code}${where}`,
      connection: false,
    };
  }
  if (code && CONNECTION_ERROR_CODES.has(code)) {
    return {
      retryable: true,
      code: 'DATABASE_UNAVAILABLE',
      message: `database connection failed: ${code}`,
      connection: true,
    };
  }
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  return {
    retryable: true,
    code: 'UNHANDLED_ERROR',
    message: truncate(`${name}: ${message}`),
    connection: false,
  };
}
