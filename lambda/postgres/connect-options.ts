import type postgres from 'postgres';
import type { DatabaseConnectError } from '../errors.ts';
import { trackSockets } from './discard-connections.ts';
import { reconnectBackoff } from './reconnect-backoff.ts';

/** What {@link connectOptions} needs to know about a client. */
export interface ConnectSettings {
  /** The setting the address comes from, named in connection errors: `DATABASE_URL`, `--database-url`, … */
  readonly setting: string;
  /** Seconds a connection may take to open before its query fails. @default 5 */
  readonly connectTimeoutSeconds?: number;
  /** Failed connection attempts in a row before a waiting query fails (see `reconnectBackoff`). @default 8 */
  readonly maxAttempts?: number;
}

/**
 * The postgres.js options that bound how a client connects; spread them into the options of every client the
 * project opens (worker, ops CLI, migrations, local stack).
 *
 * - `connect_timeout`: postgres.js's own timeout, for a server that answers and then stalls.
 * - `socket`: {@link reconnectBackoff}, which spaces out failing attempts, fails a waiting query after
 *   `maxAttempts` of them in a row (postgres.js alone reconnects without end to a server that closes every
 *   connection: ~600 a second to an HTTP server), and fails it at the same timeout when the server never sends a
 *   byte (a listener that does not speak first, an unroutable address) with a {@link DatabaseConnectError}
 *   naming `setting` and host:port; its sockets are tracked, so the engine can discard the connections of a call it
 *   gave up on (`discardConnections`: postgres.js would keep a connection whose server stopped answering for ever).
 *
 * @example
 * ```ts
 * const sql = postgres(url, { ...connectOptions({ setting: 'DATABASE_URL' }), max: 1 });
 * ```
 */
export function connectOptions(
  settings: ConnectSettings,
): postgres.Options<Record<string, postgres.PostgresType>> {
  const connectTimeoutSeconds = settings.connectTimeoutSeconds ?? 5;
  // `socket` is a documented postgres.js option (its README, "Custom socket") that its type declarations leave out.
  return {
    socket: trackSockets(
      reconnectBackoff({
        setting: settings.setting,
        maxAttempts: settings.maxAttempts,
        connectTimeoutMs: connectTimeoutSeconds * 1000,
      }),
    ),
    connect_timeout: connectTimeoutSeconds,
  } as postgres.Options<Record<string, postgres.PostgresType>>;
}
