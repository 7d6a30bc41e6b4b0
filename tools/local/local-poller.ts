import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  type Poller,
  type PollerOptions,
  type PollerStats,
  startPoller,
} from '../../lambda/runtimes/poller/start-poller.ts';
import { queueCounts } from './local-queues.ts';

/** The poller of the local runtime (`npm start -- --runtime poller`), with the mapping's `drain`. */
export interface LocalPoller {
  readonly poller: Poller;
  readonly stats: Readonly<PollerStats>;
  /**
   * Resolves when the queue has no visible, in-flight or delayed message and the poller holds nothing.
   *
   * @throws Error with the remaining counts after `timeoutMs` (default 30,000).
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops the poller (in-flight records settle first) and resolves with its final stats. */
  stop(): Promise<PollerStats>;
}

/**
 * Starts the long-running poller in this process for the local runtime, with the drain the demo scenario needs.
 * `options.processBatch` is the engine's; its `onOutcome` must call `recordSettled` of the returned poller
 * (`bindOutcomes` receives it as soon as the poller exists).
 */
export async function startLocalPoller(
  options: PollerOptions & {
    readonly bindOutcomes?: (poller: Poller) => void;
    /** The operator's client that `drain` counts the queue with (the poller's role may not read counts). @default `sqs` */
    readonly inspect?: SQSClient;
  },
): Promise<LocalPoller> {
  const { bindOutcomes, inspect, ...pollerOptions } = options;
  const poller = await startPoller(pollerOptions);
  bindOutcomes?.(poller);
  const sqs: SQSClient = inspect ?? options.sqs;
  return {
    poller,
    stats: poller.stats,
    async drain({ timeoutMs = 30_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      let quietChecks = 0;
      while (Date.now() < deadline) {
        await poller.idle();
        const counts = await queueCounts(sqs, options.queueUrl);
        const quiet = poller.stats.inFlight === 0 && counts.visible + counts.inFlight + counts.delayed === 0;
        quietChecks = quiet ? quietChecks + 1 : 0;
        if (quietChecks >= 2) return;
        await sleep(50);
      }
      const counts = await queueCounts(sqs, options.queueUrl);
      throw new Error(
        `Queue ${options.queueUrl} did not drain within ${timeoutMs} ms (visible ${counts.visible}, in flight ${counts.inFlight}, delayed ${counts.delayed}, records held ${poller.stats.inFlight})`,
      );
    },
    async stop() {
      return (await poller.stop({ timeoutMs: 10_000 })).stats;
    },
  };
}
