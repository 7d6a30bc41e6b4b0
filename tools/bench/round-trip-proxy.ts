import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/** A counting TCP proxy in front of PostgreSQL (see `proxy-thread.ts`). */
export interface RoundTripProxy {
  /** Loopback port to connect to instead of the database's. */
  readonly port: number;
  /**
   * Over every connection so far: round trips (client write bursts that follow a server response) and
   * statements (Parse and Query messages, read off the wire).
   */
  counts(): Promise<{ roundTrips: number; statements: number }>;
  close(): Promise<void>;
}

/**
 * Starts the counting proxy on its own thread, forwarding to `target`. Round trips are counted by traffic order
 * only, so they do not depend on the PostgreSQL protocol: `BEGIN`, a pipelined set of statements, and the
 * describe + execute halves of an unprepared parameterized statement are counted as the network sees them.
 */
export async function startRoundTripProxy(target: { host: string; port: number }): Promise<RoundTripProxy> {
  // Node 20 does not pass tsx's loader on to worker threads: the thread registers it, then loads the proxy.
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
    .then(({ register }) => { register(); return import(${JSON.stringify(new URL('./proxy-thread.ts', import.meta.url).href)}); })`;
  const worker = new Worker(bootstrap, { eval: true, workerData: target });
  const [ready] = (await once(worker, 'message')) as [{ port: number }];
  return {
    port: ready.port,
    async counts() {
      const reply = once(worker, 'message') as Promise<[{ bursts: number; statements: number }]>;
      worker.postMessage('count');
      const [{ bursts, statements }] = await reply;
      return { roundTrips: bursts, statements };
    },
    async close() {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}
