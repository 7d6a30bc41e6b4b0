import postgres from 'postgres';
import { onTestFinished } from 'vitest';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

/** The test database behind a {@link TcpProxy}, returned by {@link proxiedDatabase}. */
export interface ProxiedDatabase {
  /** The proxy: `down()`, `stall()` and `up()` cut and restore every client made by `connect`. */
  readonly proxy: TcpProxy;
  /** The database's URL with the proxy's port: for a client made another way (`createSql`). */
  readonly url: string;
  /**
   * A postgres.js client of at most `max` connections through the proxy, as a worker reaches RDS Proxy
   * (`prepare: false`), giving up on a connection after 1 s. Ended when the test finishes.
   */
  connect(max: number): postgres.Sql;
}

/**
 * Starts a TCP proxy in front of the database at `databaseUrl`, for a test that cuts the database of a worker, a
 * breaker or a poller for real. Call it inside a test: the clients are ended when the test finishes; the test
 * closes the proxy.
 */
export async function proxiedDatabase(databaseUrl: string): Promise<ProxiedDatabase> {
  const target = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  const viaProxy = new URL(databaseUrl);
  viaProxy.port = String(proxy.port);
  const clients: postgres.Sql[] = [];
  onTestFinished(async () => {
    await Promise.all(clients.map((sql) => sql.end({ timeout: 0 }).catch(() => {})));
  });
  return {
    proxy,
    url: viaProxy.toString(),
    connect(max) {
      const sql = postgres(viaProxy.toString(), {
        max,
        prepare: false,
        connect_timeout: 1,
        onnotice: () => {},
      });
      clients.push(sql);
      return sql;
    },
  };
}
