import type { CommitMode } from '../../lambda/types.ts';
import { runMinimalDirect } from './minimal-direct.ts';
import { pollerSide } from './poller-side.ts';
import type { QueueRig } from './queue-rig.ts';
import { type QueueRunFigures, type QueueRunPlan, runQueueSide } from './queue-run.ts';

/** Records in flight of the scale curve's points. */
export const SCALE_CONCURRENCIES: readonly number[] = [1, 2, 4, 8];

/** One point of the curve: the poller's median run and the database's own figure at the same records in flight. */
export interface ScalePoint {
  readonly commitMode: CommitMode;
  readonly concurrency: number;
  readonly poller: QueueRunFigures;
  readonly minimal: QueueRunFigures;
}

/** The run with the median throughput. */
function medianOf(runs: readonly QueueRunFigures[]): QueueRunFigures {
  const sorted = [...runs].sort((a, b) => a.messagesPerSecond - b.messagesPerSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)] as QueueRunFigures;
}

/**
 * The poller's throughput at 1, 2, 4 and 8 records in flight, per message and per batch, each point beside the
 * hand-written minimal transaction with no queue at the same records in flight (`minimal-direct.ts`), the two
 * interleaved over `rounds` rounds (order alternating); `messagesPerRecord` × the records in flight (at least 50) are
 * measured per run, after a warm-up of two batches (at least 10 messages).
 */
export async function benchScaleCurve(
  rig: QueueRig,
  options: { readonly rounds: number; readonly messagesPerRecord: number },
): Promise<ScalePoint[]> {
  const points: ScalePoint[] = [];
  for (const commitMode of ['per-message', 'per-batch'] as const) {
    for (const concurrency of SCALE_CONCURRENCIES) {
      const plan: QueueRunPlan = {
        concurrency,
        commitMode,
        warmupMessages: Math.max(10, 2 * concurrency),
        messages: Math.max(50, options.messagesPerRecord * concurrency),
      };
      const poller: QueueRunFigures[] = [];
      const minimal: QueueRunFigures[] = [];
      for (let round = 0; round < options.rounds; round += 1) {
        const runPoller = async () => poller.push(await runQueueSide(rig, pollerSide, plan));
        const runMinimal = async () => minimal.push(await runMinimalDirect(rig, plan));
        for (const step of round % 2 === 0 ? [runPoller, runMinimal] : [runMinimal, runPoller]) await step();
      }
      const point = { commitMode, concurrency, poller: medianOf(poller), minimal: medianOf(minimal) };
      rig.log(
        `scale, ${commitMode} × ${concurrency}: poller ${point.poller.messagesPerSecond.toFixed(0)} msgs/s, minimal without a queue ${point.minimal.messagesPerSecond.toFixed(0)} msgs/s`,
      );
      points.push(point);
    }
  }
  return points;
}
