import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { expect, it } from 'vitest';
import { useTestDynamoDb } from '../support/dynamodb.ts';

// The premise of the DynamoDB soak's restarts (test/e2e/worker-soak-dynamodb.test.ts): DynamoDB Local stopped and
// started again on its folder has every write it acknowledged, as DynamoDB would.
const dynamo = useTestDynamoDb({ restartable: true });

it('keeps a transaction acknowledged just before DynamoDB Local is restarted', async () => {
  // Prepare
  const table = await dynamo.createTable('restart');
  await dynamo.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: table, Item: { PK: 'K#1', SK: 'A' } } },
        { Put: { TableName: table, Item: { PK: 'K#1', SK: 'B' } } },
      ],
    }),
  );

  // Act
  const downMs = await dynamo.restart();

  // Assess
  const read = (SK: string) =>
    dynamo.doc.send(new GetCommand({ TableName: table, Key: { PK: 'K#1', SK }, ConsistentRead: true }));
  expect((await read('A')).Item).toEqual({ PK: 'K#1', SK: 'A' });
  expect((await read('B')).Item).toEqual({ PK: 'K#1', SK: 'B' });
  expect(downMs).toBeGreaterThan(0);
}, 120_000);
