import { randomUUID } from 'node:crypto';
import {
  ReceiveMessageCommand,
  type SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { type OutboxSqsSender, relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { createTestDatabase } from '../support/database.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase({ roles: true });
const local = await localQueueFixture();
const relaySqs = local.as('relay').sqs;

/** The relay's real SQS client, keeping every SendMessageBatch entry it sent (as the SDK got it). */
function keepingSender(): OutboxSqsSender & { entries: { group?: string; key: string }[] } {
  const entries: { group?: string; key: string }[] = [];
  return {
    entries,
    async send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
      const output = await relaySqs.send(command);
      for (const entry of command.input.Entries ?? []) {
        const key = JSON.parse(entry.MessageBody ?? '{}').idempotencyKey as string;
        entries.push({ key, ...(entry.MessageGroupId ? { group: entry.MessageGroupId } : {}) });
      }
      return output;
    },
  };
}

/** Receives the messages of a standard queue with their system attributes, by idempotency key. */
async function receiveGroups(queueUrl: string): Promise<Map<string, string | undefined>> {
  const groups = new Map<string, string | undefined>();
  const { Messages = [] } = await local.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  for (const message of Messages) {
    groups.set(JSON.parse(message.Body ?? '{}').idempotencyKey, message.Attributes?.MessageGroupId);
  }
  return groups;
}

describe('Function: relayOutbox() with fairQueueGroups (SQS fair queues)', () => {
  afterEach(() => db.sql`delete from outbox_events`);

  const enqueueTwo = async () => {
    const envelopes = [
      caseStageEnvelope(`CASE-${randomUUID()}`, 1),
      caseStageEnvelope(`CASE-${randomUUID()}`, 1),
    ];
    await db.sql.begin(async (sql) => {
      for (const envelope of envelopes) await enqueueOutbox(sql, envelope);
    });
    return envelopes;
  };

  for (const fairQueueGroups of [true, false]) {
    it(`sends ${fairQueueGroups ? 'MessageGroupId = aggregateId' : 'no MessageGroupId'} on a standard queue ${fairQueueGroups ? 'when opted in' : 'by default'}`, async () => {
      // Prepare
      const { queueUrl } = await local.queues();
      const envelopes = await enqueueTwo();
      const sender = keepingSender();

      // Act
      const result = await relayOutbox({
        sql: db.as('relay'),
        sqs: sender,
        queueUrl,
        ...(fairQueueGroups ? { fairQueueGroups } : {}),
        deadline: Date.now() + 30_000,
      });

      // Assess: the calls carried the groups (or none) and the queue accepted them. fauxqs 1.9.2 takes MessageGroupId
      // on a standard queue and drops it (its standard-queue branch stores no group), so its receive cannot show it:
      // the group is asserted on the SendMessageBatch the real client sent, and the messages on the queue.
      expect(result.published).toBe(2);
      const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
      expect(sender.entries.sort(byKey)).toEqual(
        envelopes
          .map((e) => ({ key: e.idempotencyKey, ...(fairQueueGroups ? { group: e.aggregateId } : {}) }))
          .sort(byKey),
      );
      const groups = await receiveGroups(queueUrl);
      expect([...groups.keys()].sort()).toEqual(envelopes.map((e) => e.idempotencyKey).sort());
    });
  }
});
