import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { SQSRecord } from 'aws-lambda';
import type { BenchMode } from './bench-lanes.ts';
import type { LaneReply, LaneRequest } from './lane-thread.ts';
import type { Lane } from './run-lanes.ts';

/** Threads that each run one lane at a time (see `lane-thread.ts`), started once for the whole bench. */
export interface LaneThreads {
  /** Opens a lane of `mode` over `url` in each of the first `count` threads. */
  open(count: number, mode: BenchMode, url: string): Promise<Lane[]>;
  /** Stops every thread. */
  close(): Promise<void>;
}

/** One request to a thread and its reply, in order (a thread handles one request at a time). */
async function ask(worker: Worker, request: LaneRequest): Promise<LaneReply> {
  const reply = once(worker, 'message') as Promise<[LaneReply]>;
  worker.postMessage(request);
  const [answer] = await reply;
  if (answer.error) throw new Error(answer.error);
  return answer;
}

/**
 * Starts `size` lane threads. Node 20 does not pass tsx's loader on to worker threads: each thread registers
 * it, then loads its entry (as the proxy thread does).
 */
export async function startLaneThreads(size: number): Promise<LaneThreads> {
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
    .then(({ register }) => { register(); return import(${JSON.stringify(new URL('./lane-thread.ts', import.meta.url).href)}); })
    .then(() => require('node:worker_threads').parentPort.postMessage({}))`;
  const workers = Array.from({ length: size }, () => new Worker(bootstrap, { eval: true }));
  await Promise.all(workers.map((worker) => once(worker, 'message')));
  return {
    async open(count, mode, url) {
      if (count > workers.length) throw new Error(`${count} lanes asked of ${workers.length} lane threads`);
      return Promise.all(
        workers.slice(0, count).map(async (worker) => {
          await ask(worker, { kind: 'open', mode, url });
          return {
            async process(batch: SQSRecord[]) {
              return (await ask(worker, { kind: 'process', batch })).latencies ?? [];
            },
            async close() {
              await ask(worker, { kind: 'close' });
            },
          } satisfies Lane;
        }),
      );
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
