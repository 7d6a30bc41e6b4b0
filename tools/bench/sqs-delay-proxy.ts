import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/** SQS calls by action (`ReceiveMessage`, `DeleteMessageBatch`, …), as counted on the wire. */
export type SqsCalls = Readonly<Record<string, number>>;

/** A delaying, call-counting TCP proxy in front of the SQS emulator (see `sqs-proxy-thread.ts`). */
export interface SqsDelayProxy {
  /** The endpoint to give an SQS client instead of the emulator's. */
  readonly endpoint: string;
  /** Calls by action over every connection so far. */
  calls(): Promise<SqsCalls>;
  close(): Promise<void>;
}

/**
 * Starts the SQS proxy on its own thread, forwarding to the emulator at `endpoint` (`http://host:port`), every
 * chunk delayed `delayMs` per direction: the network between a task and SQS, as the database's proxy
 * (`round-trip-proxy.ts`) models the one to RDS Proxy.
 */
export async function startSqsDelayProxy(endpoint: string, delayMs: number): Promise<SqsDelayProxy> {
  const { hostname: host, port } = new URL(endpoint);
  // Node 20 does not pass tsx's loader on to worker threads: the thread registers it, then loads the proxy.
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
    .then(({ register }) => { register(); return import(${JSON.stringify(new URL('./sqs-proxy-thread.ts', import.meta.url).href)}); })`;
  const worker = new Worker(bootstrap, { eval: true, workerData: { host, port: Number(port), delayMs } });
  const [ready] = (await once(worker, 'message')) as [{ port: number }];
  return {
    endpoint: `http://127.0.0.1:${ready.port}`,
    async calls() {
      const reply = once(worker, 'message') as Promise<[{ calls: SqsCalls }]>;
      worker.postMessage('count');
      const [{ calls }] = await reply;
      return calls;
    },
    async close() {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}
