import { DescribeTimeToLiveCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDynamoDbTable } from '../../tools/local/create-dynamodb-table.ts';
import { LocalDynamoDbError, startLocalDynamoDb } from '../../tools/local/local-dynamodb.ts';

/** True while a process of this PID exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('Function: startLocalDynamoDb()', () => {
  it('serves DynamoDB over HTTP and leaves no java process after stop()', async () => {
    // Prepare
    const server = await startLocalDynamoDb();
    const client = new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'any', secretAccessKey: 'any' },
    });

    // Act
    await createDynamoDbTable(client, 'launcher-check');
    await createDynamoDbTable(client, 'launcher-check'); // an existing table is left as it is
    const tables = await client.send(new ListTablesCommand({}));
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: 'launcher-check' }));
    client.destroy();
    await server.stop();

    // Assess
    expect(tables.TableNames).toEqual(['launcher-check']);
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe('ttl');
    expect(alive(server.pid)).toBe(false);
  });

  it('names the fix when java cannot run', async () => {
    // Act
    const started = startLocalDynamoDb({ java: '/nonexistent/bin/java' });

    // Assess
    await expect(started).rejects.toThrow(LocalDynamoDbError);
    await expect(started).rejects.toThrow(
      /install a JRE .*openjdk-17-jre-headless.* or put java on the PATH/,
    );
  });
});
