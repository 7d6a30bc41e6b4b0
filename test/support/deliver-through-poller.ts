import { type MessageAttributeValue, SendMessageCommand } from '@aws-sdk/client-sqs';
import { startPoller } from '../../lambda/runtimes/poller/start-poller.ts';
import type { BatchEngine } from '../../lambda/worker/batch-engine.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import type { LocalQueueFixture } from '../e2e/local-queue-fixture.ts';
import type { MessageHistory } from './deliver-until-settled.ts';
import type { PropertyRuntime } from './hostile-batch-property.ts';
import type { HostileMessage } from './hostile-messages.ts';
import { waitFor } from './wait-for.ts';

/** What {@link pollerRuntime} needs of a store: its engine, with the hooks the poller settles through. */
export interface PollerEngineSource {
  /** An engine whose `onOutcome` is `onOutcome` and whose `onRecordSettled` is `onRecordSettled`. */
  engine(hooks: {
    onOutcome: (outcome: RecordOutcome) => void;
    onRecordSettled: (outcome: RecordOutcome) => void;
  }): { readonly engine: BatchEngine; readonly concurrency: number; close(): Promise<void> };
  /** The pause's probe: resolves when the store answers. */
  probe(): Promise<unknown>;
}

/** Settings of {@link pollerRuntime}. */
export interface PollerRuntimeSettings {
  readonly queues: LocalQueueFixture;
  readonly source: PollerEngineSource;
  /** The poller's batch budget (`POLLER_BATCH_TIMEOUT_SECONDS`). */
  readonly batchTimeoutSeconds: number;
  /** How long a run may take before the messages not yet settled fail it. */
  readonly runLimitMs: number;
}

/**
 * fauxqs refuses characters above U+FFFF that SQS accepts (#x10000–#x10FFFF): the run sends them as JSON escapes,
 * which only occur inside JSON strings here (a body that is not JSON has none), so the body means the same.
 */
const sendable = (message: HostileMessage): HostileMessage => ({
  ...message,
  body: message.body.replace(
    /[\u{10000}-\u{10FFFF}]/gu,
    (pair) => `\\u${pair.charCodeAt(0).toString(16)}\\u${pair.charCodeAt(1).toString(16)}`,
  ),
});

const toAttributes = (message: HostileMessage): Record<string, MessageAttributeValue> =>
  Object.fromEntries(
    Object.entries(message.messageAttributes).map(([name, value]) => [
      name,
      value.dataType === 'Binary'
        ? { DataType: 'Binary', BinaryValue: Buffer.from(value.binaryValue ?? '', 'base64') }
        : { DataType: value.dataType, StringValue: value.stringValue },
    ]),
  );

/**
 * The poller runtime: the real poller (`startPoller`) over the store's engine, on a fresh fauxqs queue with a DLQ
 * after 5 receives, every message sent as SQS takes it (body and message attributes); a stall lasts until the
 * first record of the run timed out (or the run's first batch budget passed). A message is deleted when its last
 * outcome was acknowledged, in the DLQ once SQS moved it there.
 */
export const pollerRuntime =
  (settings: PollerRuntimeSettings): PropertyRuntime =>
  async (store, messages, injection, onOutcome) => {
    const queues = await settings.queues.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 5 });
    const histories: MessageHistory[] = [];
    for (const original of messages) {
      const message = sendable(original);
      const sent = await settings.queues.sqs.send(
        new SendMessageCommand({
          QueueUrl: queues.queueUrl,
          MessageBody: message.body,
          MessageAttributes: toAttributes(message),
        }),
      );
      histories.push({ message, messageId: sent.MessageId ?? '', deliveries: 0, fate: 'pending' });
    }
    const byId = new Map(histories.map((history) => [history.messageId, history]));
    let timedOut = false;
    const seen = (outcome: RecordOutcome) => {
      const history = byId.get(outcome.messageId);
      if (history) {
        history.deliveries = Math.max(history.deliveries, outcome.receiveCount);
        history.fate = outcome.acknowledged ? 'deleted' : 'pending';
      }
      if (outcome.failureCode === 'DATABASE_TIMEOUT' || outcome.failureCode === 'HANDLER_TIMEOUT')
        timedOut = true;
      onOutcome(outcome);
    };
    let settle: (outcome: RecordOutcome) => void = () => {};
    const built = settings.source.engine({ onOutcome: seen, onRecordSettled: (outcome) => settle(outcome) });
    if (injection === 'store-stall') store.stall();
    const poller = await startPoller({
      sqs: settings.queues.sqs,
      queueUrl: queues.queueUrl,
      processBatch: built.engine.processBatch,
      concurrency: built.concurrency,
      waitSeconds: 1,
      visibilitySeconds: 5,
      batchTimeoutSeconds: settings.batchTimeoutSeconds,
      probe: () => settings.source.probe(),
      pause: { probeBackoffBaseMs: 100, probeBackoffMaxMs: 500, halfOpenMs: 500, probeTimeoutMs: 500 },
      logger: { info: () => {}, warn: () => {}, error: () => {} } as never,
      metrics: { addMetric: () => {}, publishStoredMetrics: () => {} } as never,
    });
    settle = (outcome) => poller.recordSettled(outcome);
    try {
      if (injection === 'store-stall') {
        await waitFor(
          'a record of the stalled run to time out',
          () => timedOut,
          settings.batchTimeoutSeconds * 3000,
        ).catch(() => {});
        store.restore();
      }
      const dlq = new Set<string>();
      await waitFor(
        'every message deleted or in the DLQ',
        async () => {
          for (const moved of await settings.queues.receiveAll(queues.dlqUrl)) dlq.add(moved.messageId);
          return histories.every((history) => history.fate === 'deleted' || dlq.has(history.messageId));
        },
        settings.runLimitMs,
        250,
      ).catch(() => {});
      for (const history of histories) if (dlq.has(history.messageId)) history.fate = 'dlq';
    } finally {
      store.restore();
      await poller.stop({ timeoutMs: 5_000 });
      await built.close();
    }
    return histories;
  };
