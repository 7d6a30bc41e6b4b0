import type { Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import postgres from 'postgres';
import { Consumer } from 'sqs-consumer';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { sqsClientFor } from '../local/local-sqs.ts';
import { BENCH_QUEUE_ARN } from './bench-messages.ts';
import { minimalBaseline } from './minimal-baseline.ts';
import type { ConsumerSide } from './queue-run.ts';
import { rawBaseline } from './raw-baseline.ts';

/** How the peer hands messages to its code: one at a time, or the received batch at once. */
export type SqsConsumerStyle = 'handleMessage' | 'handleMessageBatch';

/**
 * The transaction the peer runs per message: the hand-written minimal (`minimal-baseline.ts`), or the worker's own
 * SQL by hand (`raw-baseline.ts`: the store's claim statement, text for text) — the latter separates what the
 * poller's statements cost the database from what its runtime costs.
 */
export type PeerTransaction = 'minimal' | 'worker-sql';

/**
 * The peer a user would write with `sqs-consumer` (bbc/sqs-consumer, 14.x): a `Consumer` receiving `batchSize`
 * messages per long poll (its only concurrency: the next receive waits for the whole batch), the same 30 s lease
 * with a heartbeat every 15 s, and for each message the hand-written minimal inbox transaction
 * (`minimal-baseline.ts`) on a postgres.js pool of `concurrency` (`prepare: false`).
 *
 * - `handleMessage`: the library's first example. The batch's messages run at once; each is deleted on its own
 *   (DeleteMessage) as soon as its transaction committed.
 * - `handleMessageBatch`: the batch's messages run at once (`Promise.allSettled`), the committed ones are returned
 *   and deleted together (one DeleteMessageBatch).
 */
export function sqsConsumerSide(
  style: SqsConsumerStyle,
  transaction: PeerTransaction = 'minimal',
): ConsumerSide {
  return {
    name: `sqs-consumer ${style}${transaction === 'minimal' ? '' : ", worker's SQL"}`,
    async start({ rig, queueUrl, consumer, concurrency, onReceived, onDeleted }) {
      const sql = postgres(rig.dbUrl, { max: concurrency, prepare: false, onnotice: () => {} });
      const sqs = sqsClientFor(rig.sqsProxy.endpoint, rig.sqs.region);
      const region = rig.sqs.region;
      const transact = (message: Message) =>
        transaction === 'minimal'
          ? // The minimal transaction reads a record's body and message id, nothing else of it.
            minimalBaseline(sql, consumer, [
              { messageId: message.MessageId, body: message.Body } as unknown as SQSRecord,
            ])
          : rawBaseline(sql, consumer, [
              sqsEventRecord(message, { eventSourceArn: BENCH_QUEUE_ARN, awsRegion: region }),
            ]);
      let stopping = false;
      // A stop aborts the pending long poll on purpose: that failure is not reported.
      const fail = (error: Error) => {
        if (!stopping) rig.log(`${style}: ${error.name}: ${error.message}`);
      };
      const common = {
        queueUrl,
        sqs,
        batchSize: Math.min(10, concurrency),
        waitTimeSeconds: 1,
        visibilityTimeout: 30,
        heartbeatInterval: 15,
        strictReturn: true,
        // The worker's claim stores the receive count: the system attributes are asked for, as the poller does.
        ...(transaction === 'minimal' ? {} : { messageSystemAttributeNames: ['All' as const] }),
      };
      const peer =
        style === 'handleMessage'
          ? Consumer.create({
              ...common,
              async handleMessage(message) {
                await transact(message);
                return message;
              },
            })
          : Consumer.create({
              ...common,
              async handleMessageBatch(messages) {
                const results = await Promise.allSettled(messages.map(transact));
                for (const result of results) if (result.status === 'rejected') fail(result.reason as Error);
                return messages.filter((_, index) => results[index]?.status === 'fulfilled');
              },
            });
      peer.on('error', fail);
      peer.on('processing_error', fail);
      peer.on('message_received', (message) => onReceived([message.MessageId as string]));
      peer.on('message_processed', (message) => onDeleted([message.MessageId as string]));
      peer.start();
      return {
        async stop() {
          stopping = true;
          peer.stop({ abort: true });
          await sql.end({ timeout: 5 });
          sqs.destroy();
        },
      };
    },
  };
}
