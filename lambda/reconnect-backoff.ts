import { connect, type Socket } from 'node:net';

/**
 * Settings of {@link reconnectBackoff}; the defaults suit a Lambda environment.
 *
 * @internal
 */
export interface ReconnectBackoffSettings {
  /** A connection closed sooner than this after it was opened counts as a failed attempt. @default 1000 */
  readonly quickCloseMs?: number;
  /** Wait before the attempt after the first quick failure; doubles with every further one. @default 50 */
  readonly baseMs?: number;
  /** Longest wait between two attempts. @default 2000 */
  readonly maxMs?: number;
  /** Clock in epoch milliseconds (tests). @default Date.now */
  readonly now?: () => number;
  /** Random source in [0, 1) for the jitter (tests). @default Math.random */
  readonly random?: () => number;
  /** Waits `ms` milliseconds (tests). @default a `setTimeout` promise */
  readonly sleep?: (ms: number) => Promise<unknown>;
}

/**
 * What postgres.js passes to its `socket` option: the parsed connection options.
 *
 * @internal
 */
export interface SocketTarget {
  readonly host: readonly string[];
  readonly port: readonly number[];
  readonly path?: string | false;
}

/**
 * Wait before an attempt that follows `failures` quick failures in a row: none after a healthy connection, then
 * `baseMs` doubling up to `maxMs`, with ±25 % jitter so that environments do not reconnect in step.
 *
 * @internal
 */
export function reconnectDelayMs(
  failures: number,
  settings: Pick<ReconnectBackoffSettings, 'baseMs' | 'maxMs'> = {},
  random: () => number = Math.random,
): number {
  if (failures <= 0) return 0;
  const baseMs = settings.baseMs ?? 50;
  const maxMs = settings.maxMs ?? 2000;
  const delay = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(delay * (0.75 + random() / 2));
}

/**
 * A postgres.js `socket` option that spaces out connection attempts while they keep failing at once.
 *
 * postgres.js waits between reconnections only after a socket error. When a pooled connection was cut during a
 * query and the server then answers every new connection with an error and closes it — FATAL 57P03 while it
 * starts up or shuts down, 53300 with too many connections, a rejected IAM token — it reconnects at once, again
 * and again, for as long as a query waits (measured: ~650 attempts per second from one client with a pool of 1,
 * each one a backend process the server forks, at the moment it can least afford it). This factory opens the
 * sockets itself: when the previous socket it opened is already closed less than `quickCloseMs` after it was
 * opened, the next attempt waits {@link reconnectDelayMs}; a connection that lived longer, or one still open (a
 * pool opening several), resets the count. The first attempt never waits.
 *
 * postgres.js treats a socket from this option as its own (TLS, startup, timeouts, keepalive): the factory only
 * decides when to connect, and to which of the configured hosts (in turn).
 *
 * @internal
 */
export function reconnectBackoff(
  settings: ReconnectBackoffSettings = {},
): (target: SocketTarget) => Promise<Socket> {
  const quickCloseMs = settings.quickCloseMs ?? 1000;
  const now = settings.now ?? Date.now;
  const random = settings.random ?? Math.random;
  const wait = settings.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)));
  let previous: { socket: Socket; openedAt: number } | undefined;
  let failures = 0;
  let attempts = 0;

  return async (target) => {
    if (previous) {
      const failedQuickly = previous.socket.destroyed && now() - previous.openedAt < quickCloseMs;
      failures = failedQuickly ? failures + 1 : 0;
    }
    const delayMs = reconnectDelayMs(failures, settings, random);
    if (delayMs > 0) await wait(delayMs);

    const index = attempts % Math.max(1, target.host.length);
    attempts += 1;
    const host = target.host[index] ?? 'localhost';
    const port = target.port[index] ?? target.port[0] ?? 5432;
    const socket = target.path ? connect(target.path) : connect(port, host);
    // postgres.js names the server by these in TLS (servername) and in its connection errors.
    Object.assign(socket, { host, port });
    previous = { socket, openedAt: now() };
    return socket;
  };
}
