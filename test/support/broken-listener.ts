import { createServer, type Socket } from 'node:net';
import { afterAll } from 'vitest';

/** How a {@link startBrokenListener} treats the connections it accepts. */
export type BrokenMode =
  /** Accepts and never sends a byte (a hung server, a port that is not PostgreSQL's and waits for its client). */
  | 'silent'
  /** Accepts and closes at once, cleanly (FIN): postgres.js alone reconnects to it without end. */
  | 'close'
  /** Reads the startup message, answers as an HTTP server does, and closes. */
  | 'http';

/** A loopback TCP listener that is not PostgreSQL, counting the connections it accepted. */
export interface BrokenListener {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** A connection URL to it, with a password that must never show up in output. */
  readonly url: string;
  close(): Promise<void>;
}

/** The password in {@link BrokenListener.url}: assert that no output contains it. */
export const SECRET_PASSWORD = 's3cret-pw-never-printed';

/**
 * Starts a TCP listener on 127.0.0.1 (a free port) that accepts connections and treats them as `mode` says.
 * Closed after the calling test file.
 */
export async function startBrokenListener(mode: BrokenMode): Promise<BrokenListener> {
  let connections = 0;
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    connections += 1;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {});
    if (mode === 'close') socket.end();
    if (mode === 'http') {
      socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.destroy();
      server.close(() => resolve());
    });
  afterAll(close);
  return {
    port,
    get connections() {
      return connections;
    },
    url: `postgres://worker:${SECRET_PASSWORD}@127.0.0.1:${port}/cases`,
    close,
  };
}
