import { parentPort } from 'node:worker_threads';
import type { SQSRecord } from 'aws-lambda';
import { type BenchMode, benchLane } from './bench-lanes.ts';
import type { Lane } from './run-lanes.ts';

/** What the parent asks of a lane thread; every request gets one reply. */
export type LaneRequest =
  | { readonly kind: 'open'; readonly mode: BenchMode; readonly url: string }
  | { readonly kind: 'process'; readonly batch: SQSRecord[] }
  | { readonly kind: 'close' };

/** A reply: the latencies of a processed batch, nothing for open/close, or the error that stopped it. */
export type LaneReply = { readonly latencies?: number[]; readonly error?: string };

// One simulated Lambda environment per thread, as each environment has its own CPU in Lambda: a lane (its own
// client and worker) is opened per configuration, fed batches, and closed.
let lane: Lane | undefined;
parentPort?.on('message', async (request: LaneRequest) => {
  try {
    if (request.kind === 'open') lane = benchLane(request.mode, request.url);
    else if (request.kind === 'close') {
      await lane?.close();
      lane = undefined;
    } else {
      if (!lane) throw new Error('no lane is open in this thread');
      parentPort?.postMessage({ latencies: await lane.process(request.batch) } satisfies LaneReply);
      return;
    }
    parentPort?.postMessage({} satisfies LaneReply);
  } catch (error) {
    parentPort?.postMessage({
      error: error instanceof Error ? error.message : String(error),
    } satisfies LaneReply);
  }
});
