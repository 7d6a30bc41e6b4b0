import { RetryableError } from '../../index.ts';
import { defineDynamoHandler } from '../../stores/dynamodb/index.ts';
import {
  caseDeadlineCalculationRequestedPayload,
  stageDeadline,
} from '../case-deadline-calculation-requested.ts';
import { caseItemKey } from './case-stage-changed.ts';

/**
 * `CaseDeadlineCalculationRequested` v1 `{ caseId, stage, effectiveAt }` on DynamoDB: in one transaction, sets the
 * case item's `deadlineAt` / `deadlineEffectiveAt` and adds 1 to its `deadlineVersion`, and puts the deadline item
 * `CASE#<caseId>` / `DEADLINE#<STAGE>_SLA`.
 *
 * - The case item's condition `attribute_exists(PK) AND (attribute_not_exists(deadlineEffectiveAt) OR
 *   deadlineEffectiveAt <= :effectiveAt)` decides both rules from the item returned with the failure: no case yet →
 *   retryable `CASE_NOT_FOUND` (its `CaseStageChanged` may arrive later); a newer deadline → `STALE_VERSION_SKIPPED`.
 * - A stage without an SLA is terminal `INVALID_STAGE`.
 */
export const caseDeadlineCalculationRequestedDynamo = defineDynamoHandler({
  messageType: 'CaseDeadlineCalculationRequested',
  schemaVersion: 1,
  payload: caseDeadlineCalculationRequestedPayload,
  async handle({ table, payload, envelope }) {
    const deadline = stageDeadline(payload);
    const { deadlineType, effectiveAt } = deadline;
    // ISO strings in UTC with milliseconds compare in time order: the condition can use <=.
    const deadlineAt = deadline.deadlineAt.toISOString();
    return {
      writes: [
        {
          Update: {
            TableName: table,
            Key: caseItemKey(payload.caseId),
            UpdateExpression:
              'SET deadlineAt = :deadlineAt, deadlineEffectiveAt = :effectiveAt ADD deadlineVersion :one',
            ConditionExpression:
              'attribute_exists(PK) AND (attribute_not_exists(deadlineEffectiveAt) OR deadlineEffectiveAt <= :effectiveAt)',
            ExpressionAttributeValues: {
              ':deadlineAt': deadlineAt,
              ':effectiveAt': effectiveAt.toISOString(),
              ':one': 1,
            },
          },
          onConditionFailed: (current) =>
            current
              ? 'stale'
              : new RetryableError(
                  'CASE_NOT_FOUND',
                  "the payload's case does not exist yet; retried with backoff until its CaseStageChanged arrives or the attempt policy gives up",
                ),
        },
        {
          Put: {
            TableName: table,
            Item: {
              PK: caseItemKey(payload.caseId).PK,
              SK: `DEADLINE#${deadlineType}`,
              deadlineType,
              deadlineAt,
              sourceEventId: envelope.messageId,
            },
          },
        },
      ],
      resultRef: `case_deadlines/${payload.caseId}/${deadlineType}`,
    };
  },
});
