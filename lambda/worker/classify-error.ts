import { DatabaseTimeoutError, RetryableError, TerminalError } from '../errors.ts';
import { ENVELOPE_LIMITS } from './envelope.ts';

/**
 * A failure after classification.
 *
 * @internal
 */
export interface Failure {
  /** True → the message may succeed later; false → it never will as it is. */
  readonly retryable: boolean;
  /** Stable code (stored in `failure_code`, matched by `terminalAfterCodes`). */
  readonly code: string;
  /** Text safe to log and store: never a payload value or SQL parameter. */
  readonly message: string;
  /** True when the database itself is unreachable or refusing connections: stop using it for this batch. */
  readonly connection: boolean;
  /** The delay a handler's `RetryableError` asked for before the next delivery (`retryAfterSeconds`), in seconds. */
  readonly retryAfterSeconds?: number;
}

/**
 * Node's network error codes: the endpoint cannot be reached or the connection broke (any client's, the DynamoDB
 * store's SDK included).
 *
 * @internal
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

const MAX_MESSAGE = 500;

/**
 * Truncates a failure message to what fits a log line and the inbox column.
 *
 * @internal
 */
export function truncate(text: string, max = MAX_MESSAGE): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A handler's own code as the stores keep it: at most {@link ENVELOPE_LIMITS.failureCode} characters (the
 * `failure_code` and `reason_code` columns), cut rather than refused, so an overlong code cannot make its
 * bookkeeping or quarantine write fail on every delivery until the DLQ.
 */
const handlerCode = (code: string): string =>
  Array.from(String(code)).slice(0, ENVELOPE_LIMITS.failureCode).join('');

/**
 * Classifies an error by what every store shares (DESIGN.md rule 4): a store classifies its own errors first
 * (`classifyPostgresError`: SQLSTATEs and postgres.js connection codes; `classifyDynamoError`: DynamoDB's refusals)
 * and hands the rest here.
 *
 * - `RetryableError` / `TerminalError` from a handler keep their code (cut to 100 characters); a `RetryableError`'s
 *   `retryAfterSeconds` is kept too (`retry-visibility.ts`).
 * - `DatabaseTimeoutError` (a store call abandoned at its deadline) → retryable and connection-class.
 * - Node's network error codes (a handler's own network call) → retryable `NETWORK_ERROR`.
 * - Anything else → retryable `UNHANDLED_ERROR`, bounded by the attempt policy, described by name, code and
 *   location only (see {@link describeUnknownError}).
 *
 * @internal
 */
export function classifyError(error: unknown): Failure {
  if (error instanceof TerminalError) {
    return {
      retryable: false,
      code: handlerCode(error.code),
      message: truncate(error.message),
      connection: false,
    };
  }
  if (error instanceof DatabaseTimeoutError) {
    return { retryable: true, code: error.code, message: error.message, connection: true };
  }
  if (error instanceof RetryableError) {
    return {
      retryable: true,
      code: handlerCode(error.code),
      message: truncate(error.message),
      connection: false,
      ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    };
  }
  const { code } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown };
  return {
    retryable: true,
    code: typeof code === 'string' && NETWORK_ERROR_CODES.has(code) ? 'NETWORK_ERROR' : 'UNHANDLED_ERROR',
    message: describeUnknownError(error),
    connection: false,
  };
}

/**
 * Describes an error the toolkit did not raise, safely: its name, its code and where it was thrown
 * (`TypeError at lambda/domain/x.ts:42:7`) — never its message, which can quote input (`JSON.parse`'s
 * SyntaxError shows a piece of the text it failed on; a RangeError can name the value).
 *
 * @internal
 */
export function describeUnknownError(error: unknown): string {
  if (!(error instanceof Error)) return `non-Error thrown (${typeof error})`;
  const code = (error as { code?: unknown }).code;
  // The first stack frame with a file position (skipping built-ins such as `JSON.parse (<anonymous>)`).
  const location = error.stack
    ?.split('\n')
    .slice(1)
    .map((line) => line.match(/\(?((?:file:\/\/)?[^()\s]+:\d+:\d+)\)?\s*$/)?.[1])
    .find((match) => match !== undefined);
  const where = location
    ? ` at ${location.replace(/^file:\/\//, '').replace(/^.*?\/(lambda|node_modules)\//, '$1/')}`
    : '';
  return truncate(
    `${error.name}${typeof code === 'string' ? ` (${code})` : ''}${where}; message withheld (it may quote input)`,
  );
}
