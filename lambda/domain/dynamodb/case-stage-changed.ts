import { defineDynamoHandler } from '../../stores/dynamodb/index.ts';
import { caseStageChangedPayload } from '../case-stage-changed.ts';

/** The key of a case's item in the DynamoDB example domain. */
export const caseItemKey = (caseId: string) => ({ PK: `CASE#${caseId}`, SK: 'META' });

/**
 * `CaseStageChanged` v1 `{ caseId, stage, version }` on DynamoDB: creates the case item or moves it forward only when
 * `version` is newer (pattern document §21: `attribute_not_exists(version) OR version < :v`). An older or equal
 * version fails the condition and is acknowledged as `STALE_VERSION_SKIPPED`: out-of-order events never roll state
 * back.
 */
export const caseStageChangedDynamo = defineDynamoHandler({
  messageType: 'CaseStageChanged',
  schemaVersion: 1,
  payload: caseStageChangedPayload,
  async handle({ table, payload }) {
    return {
      writes: [
        {
          Update: {
            TableName: table,
            Key: caseItemKey(payload.caseId),
            UpdateExpression: 'SET stage = :stage, version = :version',
            ConditionExpression: 'attribute_not_exists(version) OR version < :version',
            ExpressionAttributeValues: { ':stage': payload.stage, ':version': payload.version },
          },
          onConditionFailed: () => 'stale',
        },
      ],
      resultRef: `cases/${payload.caseId}@${payload.version}`,
    };
  },
});
