/** The DynamoDB store of the ops commands (`tools/ops/ops-store.ts`). */
export { dynamoOpsStore } from './dynamo-ops-store.ts';
export { type DynamoOpsTable, type DynamoOpsTarget, openDynamoOpsTable } from './dynamo-ops-table.ts';
