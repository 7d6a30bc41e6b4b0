import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  /**
   * Creates a fresh table laid out like the deployed one and returns its name; `stream: false` leaves out its stream
   * (see `createDynamoDbTable`).
   */
  createTable(prefix?: string, options?: { readonly stream?: boolean }): Promise<string>;
  /** The stream ARN of a table {@link TestDynamoDb.createTable} made. */
  streamArn(table: string): Promise<string>;
  /** Another low-level client on the same server (destroyed after the file). */
  newClient(): DynamoDBClient;
  /**
   * Stops the server and starts it again on the same port and folder; resolves once it answers, with how long it was
   * down (ms). Only with `useTestDynamoDb({ restartable: true })`. SIGTERM (the default) keeps every write it
   * acknowledged; after a SIGKILL DynamoDB Local has lost a write acknowledged just before it (it writes its SQLite
   * after answering), which the service never does, so a test of the worker's invariants restarts it with SIGTERM.
   */
  restart(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number>;
}

/** Options of {@link useTestDynamoDb}. */
export interface TestDynamoDbOptions {
  /**
   * Keep the items in files (a temporary folder, removed after the file) so that `restart()` brings the server back
   * with them: on a RAM-backed file system (`/dev/shm`) when there is one with room, else in the temporary folder.
   * @default false (in memory, faster)
   */
  readonly restartable?: boolean;
}

/**
 * Starts DynamoDB Local for the calling test file (~2–8 s) and stops it after the file. Only the files that use
 * DynamoDB pay for a server; each table is fresh, so tests of one file do not share items. Call at module scope.
 */
export function useTestDynamoDb(options: TestDynamoDbOptions = {}): TestDynamoDb {
  let server: LocalDynamoDb | undefined;
  const dbPath = options.restartable ? mkdtempSync(join(restartableRoot(), 'dynamodb-local-')) : undefined;
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
    server = await startLocalDynamoDb({ dbPath });
    client = newClient();
    doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }, 120_000);
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await server?.stop();
    if (dbPath) rmSync(dbPath, { recursive: true, force: true });
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
    async createTable(prefix = 'worker', tableOptions = {}) {
      const name = `${prefix}-${randomBytes(4).toString('hex')}`;
      await createDynamoDbTable(started(client), name, tableOptions);
      return name;
    },
    async streamArn(table) {
      const { streamArn } = await createDynamoDbTable(started(client), table);
      if (!streamArn) throw new Error(`useTestDynamoDb: table ${table} has no stream`);
      return streamArn;
    },
    newClient,
    async restart(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') {
      if (!dbPath) throw new Error('useTestDynamoDb: restart() needs useTestDynamoDb({ restartable: true })');
      const running = started(server);
      const port = Number(new URL(running.endpoint).port);
      const down = Date.now();
      await running.stop(signal);
      // A busy machine may not have freed the port (or the JVM may start slowly): try again, twice.
      for (let attempt = 1; ; attempt += 1) {
        try {
          server = await startLocalDynamoDb({ dbPath, port });
          return Date.now() - down;
        } catch (error) {
          if (attempt >= 3) throw error;
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
    },
  };
}

/** Room a restartable server's folder may need (a soak's two tables take ~20 MB). */
const RAM_FOLDER_MIN_FREE_BYTES = 256 * 1024 * 1024;

/**
 * Where a restartable server keeps its files. DynamoDB Local on disk syncs its SQLite file on every write: beside the
 * whole suite (PostgreSQL syncing too, on 2 cores) a GetItem was measured at 1.1 s and a soak's pollers settled
 * 180 records in 120 s. On tmpfs the sync costs nothing (measured: 1,000 conditional puts, 8 at a time, in 2.1–3.6 s,
 * against 10–22 s on disk and 1.4–3.0 s in memory) and a restart of the server still finds every write.
 */
function restartableRoot(): string {
  try {
    const fs = statfsSync('/dev/shm');
    if (fs.bavail * fs.bsize >= RAM_FOLDER_MIN_FREE_BYTES) return '/dev/shm';
  } catch {
    // no /dev/shm here (macOS): the temporary folder
  }
  return tmpdir();
}
