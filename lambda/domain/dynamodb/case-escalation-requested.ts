import { effectKey } from '../../effects/effect-key.ts';
import type { NotificationProvider } from '../../effects/notification-provider.ts';
import { defineDynamoHandler, performDynamoExternalEffect } from '../../stores/dynamodb/index.ts';
import {
  caseEscalationRequestedPayload,
  ESCALATION_OPERATION,
  escalationCaseNotFound,
  escalationNotification,
} from '../case-escalation-requested.ts';
import { caseItemKey } from './case-stage-changed.ts';

/** Collaborators of {@link caseEscalationRequestedDynamo}. */
export interface CaseEscalationRequestedDynamoDependencies {
  /** Notification service that honours idempotency keys. */
  readonly provider: NotificationProvider;
  /**
   * Seconds an effect log item lives after its last write (`ttl`); at least the inbox items' TTL (source + DLQ
   * retention + a day), so that no redelivery outlives it. Unset: kept until deleted.
   */
  readonly effectLogTtlSeconds?: number;
}

/** The key of the item that records a case's escalation notification, one per message (its idempotency key). */
export const notificationItemKey = (caseId: string, idempotencyKey: string) => ({
  PK: caseItemKey(caseId).PK,
  SK: `NOTIFICATION#${idempotencyKey}`,
});

/**
 * `CaseEscalationRequested` v1 `{ caseId, recipient }` on DynamoDB, the PostgreSQL `caseEscalationRequested` on the
 * worker's table: sends one escalation notification for the case through an external provider and records it in the
 * item `CASE#<caseId>` / `NOTIFICATION#<idempotencyKey>` — an external effect applied once under at-least-once
 * delivery.
 *
 * Order (the provider call cannot join the transaction):
 * 1. A consistent read of the case item: none yet → retryable `CASE_NOT_FOUND`, nothing is sent (its
 *    `CaseStageChanged` may arrive later; the attempt policy bounds the wait).
 * 2. `performDynamoExternalEffect`: the log item `EFFECT#<effectKey>` is written PENDING, the provider is called with
 *    the effect key (`<consumer>/escalation-notification:<idempotencyKey>`) as its idempotency key, and the reference
 *    is written COMPLETED. A rejection is terminal (`EFFECT_REJECTED` from the HTTP provider; `EFFECT_FAILED_TERMINAL`
 *    once the log holds it), an unknown outcome retryable (`EFFECT_OUTCOME_UNKNOWN`), as on PostgreSQL.
 * 3. The returned write: the notification item with the reference (create-only: an existing one is `'applied'`),
 *    committed with the inbox item's completion in one TransactWriteItems.
 *
 * Why exactly once: if the transaction fails after step 2, the inbox item is not COMPLETED, the message comes back and
 * step 2 finds COMPLETED in the log and returns the stored reference without calling the provider. A crash between
 * the call and the COMPLETED write leaves the log item PENDING: the retry calls again with the same key, which the
 * provider deduplicates. Once the inbox item is COMPLETED, duplicates never reach the handler.
 *
 * The case read and the log's writes load `@aws-sdk/lib-dynamodb` on the first escalation (`import()`), as the
 * store's commit code does on the first batch: a worker's cold start loads none of it.
 *
 * @example
 * ```ts
 * const handlers = [...exampleDynamoHandlers, caseEscalationRequestedDynamo({ provider })];
 * ```
 */
export function caseEscalationRequestedDynamo(dependencies: CaseEscalationRequestedDynamoDependencies) {
  const { provider, effectLogTtlSeconds } = dependencies;
  return defineDynamoHandler({
    messageType: 'CaseEscalationRequested',
    schemaVersion: 1,
    payload: caseEscalationRequestedPayload,
    async handle({ client, table, consumer, payload, envelope }) {
      const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
      const { Item: found } = await client.send(
        new GetCommand({
          TableName: table,
          Key: caseItemKey(payload.caseId),
          ConsistentRead: true,
          ProjectionExpression: 'PK',
        }),
      );
      if (!found) throw escalationCaseNotFound();
      const { notification, request } = escalationNotification(payload);
      const key = effectKey(consumer, ESCALATION_OPERATION, envelope.idempotencyKey);
      const { reference } = await performDynamoExternalEffect({
        client,
        tableName: table,
        effectKey: key,
        provider: provider.name,
        operation: ESCALATION_OPERATION,
        request,
        call: (idempotencyKey) => provider.send(notification, idempotencyKey),
        ...(effectLogTtlSeconds === undefined ? {} : { ttlSeconds: effectLogTtlSeconds }),
      });
      return {
        writes: [
          {
            Put: {
              TableName: table,
              Item: {
                ...notificationItemKey(payload.caseId, envelope.idempotencyKey),
                recipient: payload.recipient,
                effectKey: key,
                providerReference: reference,
                sourceEventId: envelope.idempotencyKey,
              },
              ConditionExpression: 'attribute_not_exists(PK)',
            },
            onConditionFailed: () => 'applied',
          },
        ],
        resultRef: `case_notifications/${reference}`.slice(0, 300),
      };
    },
  });
}
