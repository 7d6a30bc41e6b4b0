import { setTimeout as sleep } from 'node:timers/promises';
import type { Message } from '@aws-sdk/client-sqs';

/**
 * How {@link gatherBatch} receives and when it stops gathering.
 *
 * @internal
 */
export interface GatherBatchSettings {
  readonly batchSize: number;
  readonly windowMs: number;
  /** WaitTimeSeconds of the first receive. */
  readonly waitTimeSeconds: number;
  /** One ReceiveMessage call. */
  receive(max: number, waitSeconds: number): Promise<Message[]>;
  /** False once the mapping is stopping or disabled: the batch is invoked with what it holds. */
  gathering(): boolean;
  /** Called once the first receive returned messages (the batch is in progress from then on). */
  onFirstMessages(): void;
  /** A receive after the first failed; the batch keeps what it gathered. */
  onGatherError(error: unknown, records: number): void;
}

/**
 * Gathers one batch (Lambda's batching window): a long poll, then more receives until the batch is full or the
 * window ends. A throw of the first receive propagates; a later one ends the gathering with the records held.
 *
 * @internal
 */
export async function gatherBatch(settings: GatherBatchSettings): Promise<Message[]> {
  const { batchSize, windowMs, waitTimeSeconds, receive } = settings;
  const first = await receive(Math.min(10, batchSize), waitTimeSeconds);
  if (first.length === 0) {
    if (waitTimeSeconds === 0) await sleep(20); // short polling: do not spin
    return [];
  }
  settings.onFirstMessages();
  // A message received twice while gathering (its visibility ended) keeps its latest receipt handle.
  const batch = new Map<string, Message>(first.map((message) => [message.MessageId as string, message]));
  const windowEnd = Date.now() + windowMs;
  try {
    while (batch.size < batchSize && settings.gathering()) {
      const remaining = windowEnd - Date.now();
      if (remaining <= 0) break;
      const wait = Math.min(20, Math.floor(remaining / 1000));
      const more = await receive(Math.min(10, batchSize - batch.size), wait);
      for (const message of more) batch.set(message.MessageId as string, message);
      if (more.length === 0 && wait === 0) await sleep(Math.min(remaining, 20));
    }
  } catch (error) {
    // Keep what was gathered: it is invisible now and would otherwise wait out its visibility timeout.
    settings.onGatherError(error, batch.size);
  }
  return [...batch.values()];
}
