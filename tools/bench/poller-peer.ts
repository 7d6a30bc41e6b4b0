import { pollerSide } from './poller-side.ts';
import type { QueueRig } from './queue-rig.ts';
import { type ConsumerSide, type QueueRunFigures, runQueueSide } from './queue-run.ts';
import { sqsConsumerSide } from './sqs-consumer-side.ts';
import { median } from './statistics.ts';

/** Records in flight and messages per receive on both sides: sqs-consumer's concurrency is its batch size. */
export const PEER_CONCURRENCY = 10;

/** The sides of the comparison, the poller first (its row is the one compared). */
export const PEER_SIDES: readonly ConsumerSide[] = [
  pollerSide,
  sqsConsumerSide('handleMessageBatch'),
  sqsConsumerSide('handleMessage'),
  sqsConsumerSide('handleMessageBatch', 'worker-sql'),
];

/** One side's median run, and its throughput against the poller's within each round. */
export interface PeerRow {
  readonly median: QueueRunFigures;
  readonly runs: readonly QueueRunFigures[];
  /** The poller's msgs/s ÷ this side's, the median over rounds of the ratio within a round. */
  readonly pollerRatio: number;
}

/**
 * The poller against the peer a user would build on sqs-consumer, per message, at {@link PEER_CONCURRENCY}
 * records in flight: a warm-up run of each side, then `rounds` rounds in which every side drains a queue of its
 * own, the order rotating from round to round.
 */
export async function benchPollerPeer(
  rig: QueueRig,
  options: { readonly rounds: number; readonly messages: number; readonly warmupMessages: number },
): Promise<PeerRow[]> {
  const plan = {
    concurrency: PEER_CONCURRENCY,
    commitMode: 'per-message' as const,
    warmupMessages: options.warmupMessages,
    messages: options.messages,
  };
  for (const side of PEER_SIDES) {
    await runQueueSide(rig, side, { ...plan, messages: Math.max(10, options.warmupMessages) });
  }
  const runs = new Map<ConsumerSide, QueueRunFigures[]>(PEER_SIDES.map((side) => [side, []]));
  for (let round = 0; round < options.rounds; round += 1) {
    const shift = round % PEER_SIDES.length;
    for (const side of [...PEER_SIDES.slice(shift), ...PEER_SIDES.slice(0, shift)]) {
      const figures = await runQueueSide(rig, side, plan);
      runs.get(side)?.push(figures);
      rig.log(
        `poller vs peer, round ${round + 1}: ${side.name} ${figures.messagesPerSecond.toFixed(0)} msgs/s, ${(figures.dbRoundTrips / plan.messages).toFixed(2)} RT/msg`,
      );
    }
  }
  const poller = runs.get(pollerSide) ?? [];
  return PEER_SIDES.map((side) => {
    const sideRuns = runs.get(side) ?? [];
    const sorted = [...sideRuns].sort((a, b) => a.messagesPerSecond - b.messagesPerSecond);
    return {
      median: sorted[Math.floor((sorted.length - 1) / 2)] as QueueRunFigures,
      runs: sideRuns,
      pollerRatio: median(
        sideRuns.map(
          (run, index) => (poller[index]?.messagesPerSecond ?? Number.NaN) / run.messagesPerSecond,
        ),
      ),
    };
  });
}
