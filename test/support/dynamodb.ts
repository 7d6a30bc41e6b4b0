import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { createDynamoDbTable } from '../../tools/local/create-dynamodb-table.ts';
import { type LocalDynamoDb, startLocalDynamoDb } from '../../tools/local/local-dynamodb.ts';

/** DynamoDB Local for one test file: started in `beforeAll`, stopped (with its `java`) in `afterAll`. */
export interface TestDynamoDb {
  /** The server's endpoint (set once `beforeAll` ran). */
  readonly endpoint: string;
  /** A low-level client on the server. */
  readonly client: DynamoDBClient;
  /** A document client on the server (native values). */
  readonly doc: DynamoDBDocumentClient;
  /** Creates a fresh table laid out like the deployed one and returns its name. */
  createTable(prefix?: string): Promise<string>;
  /** Another low-level client on the same server (destroyed after the file). */
  newClient(): DynamoDBClient;
}

/**
 * Starts DynamoDB Local for the calling test file (~2–8 s) and stops it after the file. Only the files that use
 * DynamoDB pay for a server; each table is fresh, so tests of one file do not share items. Call at module scope.
 */
export function useTestDynamoDb(): TestDynamoDb {
  let server: LocalDynamoDb | undefined;
  const clients: DynamoDBClient[] = [];
  const newClient = () => {
    if (!server)
      throw new Error('useTestDynamoDb: the server is not started yet; use it inside a test or hook');
    const client = new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    clients.push(client);
    return client;
  };
  let client: DynamoDBClient | undefined;
  let doc: DynamoDBDocumentClient | undefined;
  beforeAll(async () => {
    server = await startLocalDynamoDb();
    client = newClient();
    doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }, 120_000);
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useTestDynamoDb: the server is not started yet');
    return value;
  };
  return {
    get endpoint() {
      return started(server).endpoint;
    },
    get client() {
      return started(client);
    },
    get doc() {
      return started(doc);
    },
    async createTable(prefix = 'worker') {
      const name = `${prefix}-${randomBytes(4).toString('hex')}`;
      await createDynamoDbTable(started(client), name);
      return name;
    },
    newClient,
  };
}
