import { DatabaseConnectError } from '../errors.ts';

/** Where a client connects, for the messages of {@link describeDatabaseError}. */
export interface DatabaseTarget {
  /** The setting the URL came from: `DATABASE_URL`, `--database-url`. */
  readonly setting: string;
  /** `host:port` of the server. */
  readonly address: string;
}

/** What {@link describeDatabaseError} made of an error. */
export interface DatabaseErrorDescription {
  /** One line: what happened, with the setting and host:port where they help, and what to do. */
  readonly message: string;
  /** True when the value of the setting is what must change (login rejected, no such database). */
  readonly configuration: boolean;
}

interface ErrorFields {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
}

/**
 * The table a PostgreSQL `42P01` (undefined_table) error names: its message is `relation "name" does not
 * exist`. Table names come from the code, never from a payload, so they are safe to log.
 */
export function missingTable(error: unknown): string | undefined {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorFields;
  if (e.name !== 'PostgresError' || e.code !== '42P01' || typeof e.message !== 'string') return undefined;
  return /relation "([^"]+)" does not exist/.exec(e.message)?.[1] ?? 'a table';
}

/**
 * Turns an error of a database client into one line for a person (CLI, `npm run migrate`, `npm start`): a
 * connection that failed names the setting and host:port to check, a rejected login or an unknown database says
 * to fix the setting, a missing table says that `npm run migrate` creates it. Other errors keep their message.
 * Never quotes the password: only the messages of PostgreSQL's connection and login errors are used, and they
 * name the user and the database, not the password.
 */
export function describeDatabaseError(error: unknown, target: DatabaseTarget): DatabaseErrorDescription {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorFields;
  const text = typeof e.message === 'string' ? e.message : String(error);
  const at = `PostgreSQL at ${target.address} (${target.setting})`;
  const check = `Check that ${target.setting} names a PostgreSQL server that is running and reachable from here.`;
  if (error instanceof DatabaseConnectError) return { message: text, configuration: false };
  const table = missingTable(error);
  if (table !== undefined) {
    return {
      message: `Table ${table} does not exist in the database of ${target.setting} (${target.address}): its migration is not applied. Run npm run migrate with DATABASE_URL set to that database.`,
      configuration: false,
    };
  }
  if (e.name === 'PostgresError' && (e.code === '28P01' || e.code === '28000')) {
    return {
      message: `${at} rejected the login: ${text}. Fix the user or password in ${target.setting}.`,
      configuration: true,
    };
  }
  if (e.name === 'PostgresError' && e.code === '3D000') {
    return {
      message: `${at}: ${text}. Fix the database name in ${target.setting}, or create the database.`,
      configuration: true,
    };
  }
  const connection: Record<string, string> = {
    ECONNREFUSED: 'connection refused (nothing listens on that port)',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host not found (DNS did not answer)',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    ETIMEDOUT: 'the connection timed out',
    CONNECT_TIMEOUT: 'the server did not complete the connection within the connect timeout',
  };
  const code = typeof e.code === 'string' ? e.code : '';
  const reason = connection[code];
  if (reason !== undefined) {
    return { message: `Cannot connect to ${at}: ${reason}. ${check}`, configuration: false };
  }
  if (code === 'ECONNRESET' || code === 'CONNECTION_CLOSED') {
    return {
      message: `The connection to ${at} was closed by the server (${code}). ${check}`,
      configuration: false,
    };
  }
  return { message: text, configuration: false };
}
