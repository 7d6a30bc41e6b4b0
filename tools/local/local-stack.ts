import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/connect-options.ts';
import { parseDatabaseUrl } from '../../lambda/database-url.ts';
import { describeDatabaseError } from '../../lambda/describe-database-error.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/provision-roles.ts';
import { runMigrations } from '../../lambda/run-migrations.ts';
import { createDynamoDbTable } from './create-dynamodb-table.ts';
import { LocalStackError } from './errors.ts';
import { startLocalDynamoDb } from './local-dynamodb.ts';
import { startLocalPostgres } from './local-postgres.ts';
import { createLocalQueues, type LocalQueues } from './local-queues.ts';
import { s3ClientFor } from './local-s3.ts';
import { sqsClientFor, startLocalSqs } from './local-sqs.ts';

/** Options of {@link startLocalStack}. */
export interface LocalStackOptions {
  /** Use this PostgreSQL instead of starting an embedded one (it is migrated); `DATABASE_URL` in its errors. */
  readonly databaseUrl?: string;
  /** Use this SQS endpoint instead of starting `fauxqs` in this process; `SQS_ENDPOINT` in its errors. */
  readonly sqsEndpoint?: string;
  /** The variable `sqsEndpoint` came from, named in its errors. @default 'SQS_ENDPOINT' */
  readonly sqsEndpointSetting?: 'SQS_ENDPOINT' | 'AWS_ENDPOINT_URL_SQS' | 'AWS_ENDPOINT_URL';
  /** @default 'us-east-1' */
  readonly region?: string;
  /** Source queue name (the DLQ is `<name>-dlq`). @default 'case-worker' */
  readonly queueName?: string;
  /** RedrivePolicy maxReceiveCount. @default 5 */
  readonly maxReceiveCount?: number;
  /** Visibility timeout of the source queue. @default 30 */
  readonly visibilityTimeoutSeconds?: number;
  /** Migrations folder. @default the project's `migrations/` */
  readonly migrationsDirectory?: string;
  /**
   * `dynamodb`: DynamoDB Local (with the machine's java) and the worker's table instead of PostgreSQL.
   * @default 'postgres'
   */
  readonly store?: 'postgres' | 'dynamodb';
}

/** The DynamoDB side of a local stack started with `store: 'dynamodb'`. */
export interface LocalStackDynamoDb {
  readonly endpoint: string;
  readonly tableName: string;
  readonly client: DynamoDBClient;
}

/** A running local stack: PostgreSQL (migrated), SQS, and a queue with its DLQ. */
export interface LocalStack {
  /** The migrated database; empty with `store: 'dynamodb'`. */
  readonly databaseUrl: string;
  /** DynamoDB Local and the worker's table, with `store: 'dynamodb'`. */
  readonly dynamodb?: LocalStackDynamoDb;
  readonly sqsEndpoint: string;
  readonly region: string;
  /** True when PostgreSQL / SQS were started by this stack (not given). */
  readonly embedded: { readonly postgres: boolean; readonly sqs: boolean };
  readonly queues: LocalQueues;
  /** SQS client for the endpoint. */
  readonly sqs: SQSClient;
  /** S3 client of the built-in fauxqs (it serves S3 on the SQS port); undefined with `sqsEndpoint`. */
  readonly s3: S3Client | undefined;
  /** Migrations applied by this start. */
  readonly migrationsApplied: number;
  /** Stops what this stack started (never a database or endpoint it was given). */
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * Starts what the worker needs on a laptop with nothing installed by hand: embedded PostgreSQL (or
 * `databaseUrl`), the `fauxqs` SQS emulator in this process (or `sqsEndpoint`), the migrations, and the queue
 * with its DLQ and RedrivePolicy.
 *
 * A given database or endpoint that cannot be used (invalid, refused, no answer within 10 s, a rejected login)
 * fails with a {@link LocalStackError} whose one-line message names `DATABASE_URL` or `SQS_ENDPOINT`.
 *
 * @example
 * ```ts
 * const stack = await startLocalStack({ maxReceiveCount: 5 });
 * // … stack.databaseUrl, stack.queues.queueUrl …
 * await stack.stop();
 * ```
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const region = options.region ?? 'us-east-1';
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
    let dynamodb: LocalStackDynamoDb | undefined;
    if (options.store === 'dynamodb') {
      const server = await startLocalDynamoDb();
      stops.push(() => server.stop());
      const client = new DynamoDBClient({
        endpoint: server.endpoint,
        region,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      });
      stops.push(async () => client.destroy());
      const tableName = options.queueName ?? 'case-worker';
      await createDynamoDbTable(client, tableName);
      dynamodb = { endpoint: server.endpoint, tableName, client };
    }
    const pg = options.databaseUrl || dynamodb ? undefined : await startLocalPostgres();
    if (pg) {
      stops.push(() =>
        // Never leave an orphaned server behind: kill by PID only when a clean stop failed (after one, the PID
        // may already belong to another process).
        pg.stop().catch(() => {
          try {
            process.kill(pg.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }),
      );
    }
    const databaseUrl = dynamodb ? '' : (options.databaseUrl ?? (pg as { url: string }).url);
    const { applied } = dynamodb ? { applied: [] } : await migrate(databaseUrl);

    const local = options.sqsEndpoint ? undefined : await startLocalSqs({ region });
    if (local) stops.push(() => local.stop());
    const sqs = local ? local.client() : sqsClientFor(options.sqsEndpoint as string, region);
    if (!local) stops.push(async () => sqs.destroy());
    const s3 = local ? s3ClientFor(local.endpoint, region) : undefined;
    if (s3) stops.push(async () => s3.destroy());
    const queues = await createLocalQueues(sqs, {
      name: options.queueName ?? 'case-worker',
      maxReceiveCount: options.maxReceiveCount ?? 5,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
    }).catch((error: unknown) => {
      if (local) throw error;
      const setting = options.sqsEndpointSetting ?? 'SQS_ENDPOINT';
      const e = error as { name?: string; code?: string; message?: string };
      const reason = (e.message ?? e.code ?? e.name ?? String(error)).split('\n')[0]?.slice(0, 200);
      throw new LocalStackError(
        setting,
        `Cannot use SQS at ${options.sqsEndpoint} (${setting}): ${reason}. Check that ${setting} is the URL of a running SQS emulator, or unset it to use the built-in fauxqs.`,
        { cause: error },
      );
    });
    return {
      databaseUrl,
      ...(dynamodb ? { dynamodb } : {}),
      sqsEndpoint: local?.endpoint ?? (options.sqsEndpoint as string),
      region,
      embedded: { postgres: !!pg, sqs: !!local },
      queues,
      sqs,
      s3,
      migrationsApplied: applied.length,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }

  /** Migrates the database (a given one that cannot be used is a LocalStackError naming DATABASE_URL). */
  async function migrate(databaseUrl: string): Promise<{ applied: readonly unknown[] }> {
    const checked = parseDatabaseUrl(databaseUrl, 'DATABASE_URL');
    if (options.databaseUrl && 'problem' in checked)
      throw new LocalStackError('DATABASE_URL', checked.problem);
    const admin = postgres(databaseUrl, {
      ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
      max: 1,
      onnotice: () => {},
    });
    return runMigrations(admin, {
      directory: options.migrationsDirectory ?? MIGRATIONS,
    })
      .catch((error: unknown) => {
        if (!options.databaseUrl || 'problem' in checked) throw error;
        const { message } = describeDatabaseError(error, {
          setting: 'DATABASE_URL',
          address: checked.address,
        });
        throw new LocalStackError('DATABASE_URL', message, { cause: error });
      })
      .then(async (result) => {
        // As the migration function does for the deployed worker role: the engine sets no timeout itself.
        const [{ role, database } = { role: '', database: '' }] = await admin<
          { role: string; database: string }[]
        >`select current_user as role, current_database() as database`;
        await setRoleTimeouts(admin, role, database, DEFAULT_ROLE_TIMEOUTS);
        return { applied: result.applied };
      })
      .finally(() => admin.end({ timeout: 5 }));
  }
}
