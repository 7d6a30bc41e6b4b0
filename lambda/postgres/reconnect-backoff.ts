import { connect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { DatabaseConnectError } from '../errors.ts';

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
  /**
   * Failed attempts in a row after which the next attempt is not made: the waiting query fails with a
   * {@link DatabaseConnectError} (`CONNECTION_CLOSED`) instead. After that, each attempt that fails again is
   * followed by one such refusal, so every waiting query gets at most one more connection. A connection that
   * lives resets the count. With the default waits, 8 attempts span about 5 s. @default 8
   */
  readonly maxAttempts?: number;
  /**
   * A socket whose server has not sent a single byte this long after it was opened is destroyed with a
   * {@link DatabaseConnectError} (`CONNECT_TIMEOUT`): a listener that accepts and never answers, or an address
   * where nothing answers the TCP handshake. Give postgres.js the same `connect_timeout`, which still bounds a
   * server that answers and then stalls. @default no timeout of its own
   */
  readonly connectTimeoutMs?: number;
  /** The setting the address comes from, named in the errors: `DATABASE_URL`, `--database-url`, … @default 'the database URL' */
  readonly setting?: string;
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
 * A postgres.js `socket` option that spaces out connection attempts while they keep failing, and bounds them.
 *
 * postgres.js waits between reconnections only after a socket error. When every new connection is closed without
 * a word (a listener with nothing behind it), it reconnects at once, again and again, for as long as a query waits
 * (measured: ~650 attempts per second from one client with a pool of 1). Something that is not PostgreSQL (an HTTP
 * server answering the startup message and closing) gets the same endless loop, and its connect timeout never
 * fires because every close restarts it. (Released 3.4.9 looped the same way after a connection was cut during a
 * query and the server then refused new ones with an error — FATAL 57P03, 53300, a rejected IAM token —, each
 * attempt a backend process the server forks; the patch in patches/ fails the waiting query with that error at the
 * first attempt instead.) This factory opens the sockets itself: when the
 * previous socket it opened is already closed less than `quickCloseMs` after it was opened, the next attempt
 * waits {@link reconnectDelayMs}; a connection that lived longer, or one still open (a pool opening several),
 * resets the count. The first attempt never waits. After `maxAttempts` failures in a row the waiting query fails
 * with a {@link DatabaseConnectError}; with `connectTimeoutMs`, a server that never says a word fails it too.
 *
 * postgres.js treats a socket from this option as its own (TLS, startup, timeouts, keepalive): the factory only
 * decides when to connect, to which of the configured hosts (in turn), and when to stop.
 *
 * @internal
 */
export function reconnectBackoff(
  settings: ReconnectBackoffSettings = {},
): (target: SocketTarget) => Promise<Socket> {
  const quickCloseMs = settings.quickCloseMs ?? 1000;
  const maxAttempts = settings.maxAttempts ?? 8;
  const setting = settings.setting ?? 'the database URL';
  const now = settings.now ?? Date.now;
  const random = settings.random ?? Math.random;
  const wait = settings.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)));
  let previous: { socket: Socket; openedAt: number; timedOut: boolean } | 'refused' | undefined;
  let failures = 0;
  let attempts = 0;

  return async (target) => {
    if (previous && previous !== 'refused') {
      const failed =
        previous.timedOut || (previous.socket.destroyed && now() - previous.openedAt < quickCloseMs);
      failures = failed ? failures + 1 : 0;
    }
    const index = attempts % Math.max(1, target.host.length);
    const host = target.host[index] ?? 'localhost';
    const port = target.port[index] ?? target.port[0] ?? 5432;
    const address = target.path ? target.path : `${host}:${port}`;
    if (failures >= maxAttempts && previous !== 'refused') {
      previous = 'refused';
      return refusedSocket(
        new DatabaseConnectError(
          'CONNECTION_CLOSED',
          `${failures} connection attempts in a row were closed or refused before the server was ready (not a PostgreSQL server, or one that is starting up, shutting down or out of connections)`,
          { setting, address },
        ),
        { host, port },
      );
    }
    const delayMs = reconnectDelayMs(failures, settings, random);
    if (delayMs > 0) await wait(delayMs);

    attempts += 1;
    const socket = target.path ? connect(target.path) : connect(port, host);
    // postgres.js names the server by these in TLS (servername) and in its connection errors.
    Object.assign(socket, { host, port });
    const opened = { socket, openedAt: now(), timedOut: false };
    previous = opened;
    const timeoutMs = settings.connectTimeoutMs;
    if (timeoutMs !== undefined) {
      setTimeout(() => {
        if (socket.destroyed || socket.bytesRead > 0) return;
        opened.timedOut = true;
        socket.destroy(
          new DatabaseConnectError(
            'CONNECT_TIMEOUT',
            `no answer within ${timeoutMs / 1000} s (connect timeout)`,
            { setting, address },
          ),
        );
      }, timeoutMs).unref();
    }
    return socket;
  };
}

/**
 * A stand-in for an attempt that is not made: it fails with `error` once postgres.js has written its first message
 * to it (its `error` and `close` events then end the waiting query, as a real socket error would). Failing before
 * that write would leave postgres.js's write timer set on the connection, and its next socket would never be
 * written to.
 */
function refusedSocket(error: Error, names: { host: string; port: number }): Socket {
  let failing = false;
  const stub = new Duplex({
    read() {},
    write(_chunk, _encoding, callback) {
      callback();
      if (failing) return;
      failing = true;
      setImmediate(() => stub.destroy(error));
    },
  });
  Object.assign(stub, names);
  return stub as unknown as Socket;
}
