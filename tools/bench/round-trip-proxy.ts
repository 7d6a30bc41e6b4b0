import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { SeenStatement } from './statement-counter.ts';

/** A counting TCP proxy in front of PostgreSQL (see `proxy-thread.ts`). */
export interface RoundTripProxy {
  /** Loopback port to connect to instead of the database's. */
  readonly port: number;
  /** Milliseconds each chunk waits per direction (0: forwarded at once). */
  readonly delayMs: number;
  /**
   * Over every connection so far: round trips (client write bursts that follow a server response) and
   * statements (Parse and Query messages, read off the wire).
   */
  counts(): Promise<{ roundTrips: number; statements: number }>;
  /** The distinct statements sent since the last call (text, size, prepared-statement name). */
  statements(): Promise<SeenStatement[]>;
  close(): Promise<void>;
}

/**
 * Starts the counting proxy on its own thread, forwarding to `target`. Round trips are counted by traffic order
 * only, so they do not depend on the PostgreSQL protocol: `BEGIN`, a pipelined set of statements, and the
 * describe + execute halves of an unprepared parameterized statement are counted as the network sees them.
 *
 * With `delayMs`, every chunk waits that long in each direction: a model of the network between a Lambda
 * function and RDS Proxy, where each round trip costs about a millisecond each way.
 */
export async function startRoundTripProxy(
  target: { host: string; port: number },
  options: { delayMs?: number } = {},
): Promise<RoundTripProxy> {
  const delayMs = options.delayMs ?? 0;
  // Node 20 does not pass tsx's loader on to worker threads: the thread registers it, then loads the proxy.
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
    .then(({ register }) => { register(); return import(${JSON.stringify(new URL('./proxy-thread.ts', import.meta.url).href)}); })`;
  const worker = new Worker(bootstrap, { eval: true, workerData: { ...target, delayMs } });
  const [ready] = (await once(worker, 'message')) as [{ port: number }];
  return {
    port: ready.port,
    delayMs,
    async counts() {
      const reply = once(worker, 'message') as Promise<[{ bursts: number; statements: number }]>;
      worker.postMessage('count');
      const [{ bursts, statements }] = await reply;
      return { roundTrips: bursts, statements };
    },
    async statements() {
      const reply = once(worker, 'message') as Promise<[{ seen: SeenStatement[] }]>;
      worker.postMessage('statements');
      const [{ seen }] = await reply;
      return seen;
    },
    async close() {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}
