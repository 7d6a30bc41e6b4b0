import type postgres from 'postgres';
import * as z from 'zod/mini';
import {
  effectKey,
  type NotificationProvider,
  type NotificationRequest,
  performExternalEffect,
} from '../effects/index.ts';
import { defineHandler, RetryableError } from '../index.ts';

/** The payload of `CaseEscalationRequested` v1, the message's contract on either store. */
export const caseEscalationRequestedPayload = z.object({
  caseId: z.string().check(z.minLength(1), z.maxLength(200)),
  recipient: z.string().check(z.minLength(3), z.maxLength(320)),
});

/** Operation name in the effect log and in the effect key (`<consumer>/escalation-notification:<key>`), on either store. */
export const ESCALATION_OPERATION = 'escalation-notification';

/**
 * The escalation's effect, the same on either store: the notification sent to the provider, and the request whose
 * hash the effect log keeps (`{ caseId, recipient }`). Built from the payload only, so that every retry sends the
 * provider the same request under the same key.
 */
export function escalationNotification(payload: { caseId: string; recipient: string }): {
  notification: NotificationRequest;
  request: { caseId: string; recipient: string };
} {
  return {
    notification: {
      recipient: payload.recipient,
      subject: `Case ${payload.caseId} escalated`,
      body: `Case ${payload.caseId} was escalated and needs attention.`,
    },
    request: { caseId: payload.caseId, recipient: payload.recipient },
  };
}

/**
 * What `CaseStageChanged` has not created yet when an escalation arrives, the same on either store: retryable
 * `CASE_NOT_FOUND` (nothing is sent; the attempt policy bounds the wait).
 */
export const escalationCaseNotFound = () =>
  new RetryableError(
    'CASE_NOT_FOUND',
    "the payload's case does not exist yet; retried with backoff until its CaseStageChanged arrives or the attempt policy gives up",
  );

/** Collaborators of {@link caseEscalationRequested}. */
export interface CaseEscalationRequestedDependencies {
  /**
   * Client for the external-effect log, separate from the inbox transaction's connection: a dedicated
   * client (`max: 1` is enough) or a pool with at least `recordConcurrency + 1` connections. With the
   * worker's own single-connection pool the effect log would wait for the connection its caller holds.
   */
  readonly effectsSql: postgres.Sql;
  /** Notification service that honours idempotency keys. */
  readonly provider: NotificationProvider;
}

/**
 * `CaseEscalationRequested` v1 `{ caseId, recipient }`: sends one escalation notification for the case
 * through an external provider and records it in `case_notifications` — an external effect applied once
 * under at-least-once delivery.
 *
 * Order (the provider call cannot join the inbox transaction):
 * 1. In the inbox transaction: the case must exist (else retryable `CASE_NOT_FOUND`, nothing is sent: the
 *    case may not have arrived yet; the attempt policy bounds the wait).
 * 2. `performExternalEffect` on its own connection: the effect log row is committed PENDING, the provider is
 *    called with the effect key (`<consumer>/escalation-notification:<idempotencyKey>`) as its idempotency key, and
 *    the reference is committed as COMPLETED.
 * 3. In the inbox transaction: `case_notifications` row with the reference; the worker then marks the inbox
 *    row COMPLETED and commits.
 *
 * Why exactly once: if anything fails after step 2 (the domain write, the commit, the Lambda), the inbox row
 * is not COMPLETED, the message is redelivered and step 2 finds COMPLETED in the log and returns the stored
 * reference without calling the provider. If the crash falls between the call and recording COMPLETED, the
 * log row is still PENDING and the retry calls again with the same key, which the provider deduplicates. Once
 * the inbox row is COMPLETED, duplicates never reach the handler at all.
 *
 * @example
 * ```ts
 * const handlers = [...exampleHandlers, caseEscalationRequested({ effectsSql, provider })];
 * ```
 */
export function caseEscalationRequested(dependencies: CaseEscalationRequestedDependencies) {
  const { effectsSql, provider } = dependencies;
  return defineHandler({
    messageType: 'CaseEscalationRequested',
    schemaVersion: 1,
    payload: caseEscalationRequestedPayload,
    async handle({ sql, consumer, payload, envelope }) {
      const [found] = await sql`select 1 from cases where case_id = ${payload.caseId}`;
      if (!found) throw escalationCaseNotFound();
      const { notification, request } = escalationNotification(payload);
      const key = effectKey(consumer, ESCALATION_OPERATION, envelope.idempotencyKey);
      const { reference } = await performExternalEffect({
        sql: effectsSql,
        effectKey: key,
        provider: provider.name,
        operation: ESCALATION_OPERATION,
        request,
        call: (idempotencyKey) => provider.send(notification, idempotencyKey),
      });
      await sql`
        insert into case_notifications (source_event_id, case_id, recipient, effect_key, provider_reference)
        values (${envelope.idempotencyKey}, ${payload.caseId}, ${payload.recipient}, ${key}, ${reference})
        on conflict (source_event_id) do nothing
      `;
      return { resultRef: `case_notifications/${reference}`.slice(0, 300) };
    },
  });
}
