import { type RoundTripProxy, startRoundTripProxy } from '../../tools/bench/round-trip-proxy.ts';

/**
 * The bench's counting TCP proxy (no delay) in front of the database at `databaseUrl`, and the URL that connects
 * through it: round trips and statements of the clients that use the URL, read off the wire. Close it after the file.
 */
export async function countingProxy(databaseUrl: string): Promise<{ proxy: RoundTripProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await startRoundTripProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const proxied = new URL(databaseUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  return { proxy, url: proxied.href };
}
