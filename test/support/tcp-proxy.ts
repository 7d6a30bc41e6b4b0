import { createServer, type Server, Socket } from 'node:net';
import postgres from 'postgres';

/** A loopback TCP proxy in front of PostgreSQL that a test can take down and bring back. */
export interface TcpProxy {
  /** Port to connect to instead of the database's. */
  readonly port: number;
  /** Connections accepted since start (or since {@link TcpProxy.resetCount}). */
  readonly connections: number;
  /**
   * Cuts the open connections and answers new ones as a PostgreSQL server that is shutting down does: a
   * FATAL 57P03 ErrorResponse, then close. (A server that closes a new connection without a word makes
   * postgres.js reconnect in a tight loop, which is not what a real PostgreSQL or RDS Proxy does.)
   */
  down(): void;
  /**
   * Cuts the open connections and closes new ones at once without a word (a listener with nothing behind it, such
   * as a load balancer without a healthy target): postgres.js then reconnects in a tight loop while a query waits.
   */
  refuse(): void;
  /**
   * Resets the open connections (a TCP RST to the client, as a failover or a network device that drops a flow
   * sends) and keeps forwarding new ones.
   */
  reset(): void;
  /**
   * The database stops answering: open connections are left open but nothing is forwarded any more, and new
   * connections are accepted and never answered (a hung server, a network black hole).
   */
  stall(): void;
  /** Forwards connections again. */
  up(): void;
  resetCount(): void;
  close(): Promise<void>;
}

/** A PostgreSQL protocol ErrorResponse message (severity FATAL). */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/**
 * Starts a TCP proxy on a free loopback port forwarding to `target` (host:port). Failure injection for
 * "the database is unreachable": real connections, real errors (a cut connection, then SQLSTATE 57P03 on reconnect).
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let isUp = true;
  let stalled = false;
  let refusing = false;
  let connections = 0;
  const open = new Set<Socket>();
  /** Every client socket ever accepted, so close() never waits for one a client keeps half-open. */
  const all = new Set<Socket>();
  const server: Server = createServer((client) => {
    connections += 1;
    all.add(client);
    client.on('close', () => all.delete(client));
    if (stalled) {
      client.on('error', () => {});
      open.add(client);
      return;
    }
    if (refusing) {
      client.on('error', () => {});
      client.destroy();
      return;
    }
    if (!isUp) {
      client.on('error', () => {});
      client.end(errorResponse('57P03', 'the database system is not accepting connections'));
      return;
    }
    const upstream = new Socket();
    open.add(client);
    open.add(upstream);
    const cleanup = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', cleanup).on('close', cleanup);
    upstream.on('error', cleanup).on('close', cleanup);
    upstream.connect(target.port, target.host, () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    get connections() {
      return connections;
    },
    down() {
      isUp = false;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    refuse() {
      refusing = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    reset() {
      // The client's side gets the RST (`all` holds the accepted sockets); the database's side is just closed.
      for (const socket of open) {
        if (all.has(socket)) socket.resetAndDestroy();
        else socket.destroy();
      }
      open.clear();
    },
    stall() {
      stalled = true;
      for (const socket of open) {
        socket.unpipe();
        socket.pause();
      }
    },
    up() {
      isUp = true;
      stalled = false;
      refusing = false;
    },
    resetCount() {
      connections = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...open, ...all]) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A single-connection postgres.js client to the database at `url`, through a {@link TcpProxy} the test can
 * take down or stall. `close()` ends both.
 */
export async function proxiedClient(
  url: string,
  options: { connectTimeoutSeconds?: number } = {},
): Promise<{ proxy: TcpProxy; sql: postgres.Sql; close(): Promise<void> }> {
  const target = new URL(url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  const viaProxy = new URL(url);
  viaProxy.port = String(proxy.port);
  const sql = postgres(viaProxy.toString(), {
    max: 1,
    onnotice: () => {},
    connect_timeout: options.connectTimeoutSeconds ?? 2,
  });
  return {
    proxy,
    sql,
    async close() {
      await sql.end({ timeout: 0 }).catch(() => {});
      await proxy.close();
    },
  };
}
