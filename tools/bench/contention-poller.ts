import { randomBytes } from 'node:crypto';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';
import type { PollerEvent } from '../../lambda/runtimes/poller/start-poller.ts';
import { startPollerFromConfig } from '../../lambda/runtimes/poller/start-poller-from-config.ts';
import { createLocalQueues } from '../local/local-queues.ts';
import type { ContentionPass } from './contention.ts';
import {
  awaitSettled,
  type ContentionPassInput,
  type ContentionPlan,
  contentionFigures,
  holdHotRows,
  hotIncrement,
  receivesHistogram,
  sendHotMessages,
} from './contention-rig.ts';

/**
 * One poller pass: a fresh queue (DLQ after 5 receives, the stack's lowest `maxReceiveCount`), the messages sent, the slow phase started,
 * and the real poller (`startPollerFromConfig`, the Fargate runtime's wiring) draining the queue with its adaptive
 * limit on or off; ends when every message completed or sits in the DLQ. Receives, retryables and record times come
 * from the poller's events: a record's time runs from its receive to its settle.
 */
export async function runPollerPass(
  plan: ContentionPlan,
  input: ContentionPassInput,
): Promise<ContentionPass> {
  const { admin, sqs, settings } = input;
  const { concurrency } = settings.poller;
  const run = `poller-${plan.mode}-${randomBytes(3).toString('hex')}`;
  const client = sqs.client();
  const queues = await createLocalQueues(client, {
    name: `bench-contention-${run}`,
    maxReceiveCount: 5,
    visibilityTimeoutSeconds: 30,
  });
  await sendHotMessages(client, queues.queueUrl, { count: plan.messages, rows: settings.hotRows, run });
  const consumer = `bench-contention-${run}`;
  const url = new URL(input.url);
  url.searchParams.set('lock_timeout', String(settings.lockTimeoutMs));
  const config = loadPollerConfig({
    DATABASE_URL: url.toString(),
    WORKER_CONSUMER: consumer,
    WORKER_QUEUE_URL: queues.queueUrl,
    SQS_ENDPOINT: sqs.endpoint,
    AWS_REGION: sqs.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    DB_POOL_SIZE: String(concurrency),
    POLLER_CONCURRENCY: String(concurrency),
    POLLER_ADAPTIVE_CONCURRENCY: plan.mode === 'adaptive' ? 'on' : 'off',
    POLLER_WAIT_SECONDS: '1',
    WORKER_BACKOFF_BASE_SECONDS: '1',
    WORKER_BACKOFF_MAX_SECONDS: '4',
  });
  const receivedAt = new Map<string, number>();
  const receiveCount = new Map<string, number>();
  const recordMs: number[] = [];
  let retryable = 0;
  let receives = 0;
  let lowestLimit = concurrency;
  const onEvent = (event: PollerEvent) => {
    const now = performance.now();
    if (event.type === 'received') {
      receives += event.messageIds.length;
      for (const id of event.messageIds) {
        receivedAt.set(id, now);
        receiveCount.set(id, (receiveCount.get(id) ?? 0) + 1);
      }
    } else if (event.type === 'settled') {
      retryable += event.visibility.length;
      const ids = [...event.deleted, ...event.visibility.map((entry) => entry.messageId)];
      for (const id of ids) recordMs.push(now - (receivedAt.get(id) ?? now));
    } else if (event.type === 'limit') {
      lowestLimit = Math.min(lowestLimit, event.to);
    }
  };
  const started = performance.now();
  const slow = holdHotRows(admin, plan.holdMs, plan.slowForMs);
  const running = await startPollerFromConfig({ handlers: [hotIncrement], config, onEvent });
  let settled = { completed: 0, dlq: 0 };
  let seconds = 0;
  try {
    settled = await awaitSettled(input, { consumer, dlqUrl: queues.dlqUrl, client, messages: plan.messages });
    seconds = (performance.now() - started) / 1000;
  } finally {
    await running.poller.stop({ timeoutMs: 30_000 });
    await running.close('graceful');
    await slow;
  }
  input.log(
    `contention, poller, ${plan.scenario} ${plan.slowForMs / 1000} s, ${plan.mode}: ${settled.completed} completed, ${settled.dlq} in the DLQ in ${seconds.toFixed(1)} s; lowest limit ${lowestLimit}; receives per message ${receivesHistogram(receiveCount.values())}`,
  );
  const extraReceives = Math.max(0, receives - plan.messages);
  const counts = { seconds, ...settled, retryable, extraReceives, recordMs, lowestLimit };
  return contentionFigures('poller', plan, counts);
}
