import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import postgres from 'postgres';
import { MigrationError } from '../../lambda/errors.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { parseDatabaseUrl } from '../../lambda/postgres/database-url.ts';
import { describeDatabaseError } from '../../lambda/postgres/describe-database-error.ts';
import { migrateDatabase } from '../../lambda/postgres/migrate-database.ts';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import { listMigrations } from '../../lambda/postgres/run-migrations.ts';
import { createDynamoDbTable } from './create-dynamodb-table.ts';
import { LocalStackError } from './errors.ts';
import type { IamRefusal, RevokedAction } from './iam/iam-authorizer.ts';
import { type LocalIam, startLocalIam } from './iam/local-iam.ts';
import { type LocalComponent, localCredentials } from './iam/local-identities.ts';
import {
  type LocalRoleNames,
  roleDatabaseUrl,
  setLocalRolePasswords,
  stackMigrationSettings,
} from './local-database-roles.ts';
import { startLocalDynamoDb } from './local-dynamodb.ts';
import { startLocalPostgres } from './local-postgres.ts';
import { createLocalQueues, type LocalQueues } from './local-queues.ts';
import { s3ClientFor } from './local-s3.ts';
import { startLocalSqs } from './local-sqs.ts';
import { sqsClientFor } from './sqs-client-for.ts';

/** Options of {@link startLocalStack}. */
export interface LocalStackOptions {
  /**
   * Use this PostgreSQL instead of starting an embedded one (it is migrated, and the stack's database roles are
   * provisioned on its server with a local-only password); `DATABASE_URL` in its errors.
   */
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
  /**
   * The local IAM layer (tools/local/iam/): each component's calls to SQS, S3 and DynamoDB are evaluated against
   * its role in the synthesized stack, and refused as AWS would refuse them. `false` turns it off (every call is
   * allowed, as the emulators allow them); `revoke` takes permissions away (tests); `onRefusal` sees each refusal.
   * @default true
   */
  readonly iam?:
    | boolean
    | {
        readonly revoke?: readonly RevokedAction[];
        readonly onRefusal?: (refusal: IamRefusal) => void;
      };
}

/** The SDK clients of one component: signed with its local key, so they run with its role's permissions. */
export interface ComponentClients {
  readonly sqs: SQSClient;
  /** Undefined when the stack has no S3 (an SQS endpoint was given). */
  readonly s3: S3Client | undefined;
  /** With `store: 'dynamodb'` only. */
  readonly dynamodb: DynamoDBClient | undefined;
}

/** The DynamoDB side of a local stack started with `store: 'dynamodb'`. */
export interface LocalStackDynamoDb {
  /** The endpoint clients use (the IAM layer's, in front of DynamoDB Local, unless it is off). */
  readonly endpoint: string;
  readonly tableName: string;
  /** The operator's client (`admin`: allowed everything). */
  readonly client: DynamoDBClient;
  /** The table's stream (the outbox relay's trigger). */
  readonly streamArn: string;
  /** DynamoDB Local's own endpoint, for its stream (DynamoDB Streams calls do not pass the IAM layer). */
  readonly streamsEndpoint: string;
}

/**
 * The database roles of a local stack: the ones the deployed migration function provisions, made by its code
 * (`migrateDatabase`), with a local-only password each.
 */
export interface LocalDatabaseRoles {
  /** The role of each function (`sqs_worker`, `sqs_outbox_relay`, …, as the synthesized stack names them). */
  readonly names: LocalRoleNames;
  /**
   * The database URL signed in as `fn`'s role. The poller and the breaker's probe use the worker's, as deployed.
   */
  url(fn: RoleFunction): string;
}

/** A running local stack: PostgreSQL (migrated), SQS, and a queue with its DLQ. */
export interface LocalStack {
  /**
   * The migrated database, signed in as its owner (the operator's and the demo's own setup); empty with
   * `store: 'dynamodb'`. The components connect as their roles ({@link LocalStack.databaseRoles}).
   */
  readonly databaseUrl: string;
  /** The components' database roles; undefined with `store: 'dynamodb'`. */
  readonly databaseRoles: LocalDatabaseRoles | undefined;
  /** DynamoDB Local and the worker's table, with `store: 'dynamodb'`. */
  readonly dynamodb?: LocalStackDynamoDb;
  readonly sqsEndpoint: string;
  readonly region: string;
  /** True when PostgreSQL / SQS were started by this stack (not given). */
  readonly embedded: { readonly postgres: boolean; readonly sqs: boolean };
  readonly queues: LocalQueues;
  /** The operator's SQS client (`admin`: allowed everything, as an administrator's own credentials are). */
  readonly sqs: SQSClient;
  /** The operator's S3 client of the built-in fauxqs (it serves S3 on the SQS port); undefined with `sqsEndpoint`. */
  readonly s3: S3Client | undefined;
  /** The payload bucket (the stack's `PayloadBucket`), created with the built-in fauxqs; undefined without S3. */
  readonly payloadBucket: string | undefined;
  /** The local IAM layer; undefined when turned off (`iam: false`). */
  readonly iam: LocalIam | undefined;
  /** The clients a component runs with (created once per component, destroyed by `stop`). */
  clients(component: LocalComponent): ComponentClients;
  /** Migrations applied by this start. */
  readonly migrationsApplied: number;
  /** Stops what this stack started (never a database or endpoint it was given). */
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * Starts what the worker needs on a laptop with nothing installed by hand: embedded PostgreSQL (or
 * `databaseUrl`), the `fauxqs` SQS emulator in this process (or `sqsEndpoint`), the migrations and the components'
 * database roles (the deployed migration function's code, see {@link LocalDatabaseRoles}), and the queue with its
 * DLQ and RedrivePolicy.
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
  const stops: Stops = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
    const store = options.store ?? 'postgres';
    const dynamoServer = store === 'dynamodb' ? await startLocalDynamoDb() : undefined;
    if (dynamoServer) stops.push(() => dynamoServer.stop());
    const database = await startDatabase(options, !!dynamoServer, stops);
    const local = options.sqsEndpoint ? undefined : await startLocalSqs({ region });
    if (local) stops.push(() => local.stop());
    const sqsUpstream = local?.endpoint ?? (options.sqsEndpoint as string);
    const iam = await startIam(options, {
      store,
      region,
      sqsUpstream,
      dynamodbUpstream: dynamoServer?.endpoint,
    });
    if (iam) stops.push(() => iam.stop());
    const sqsEndpoint = iam?.sqsEndpoint ?? sqsUpstream;
    const dynamodbEndpoint = iam?.dynamodbEndpoint ?? dynamoServer?.endpoint;
    const name = options.queueName ?? 'case-worker';
    const payloadBucket = local ? 'sqs-inbox-worker-payloads' : undefined;
    const clients = componentClients({ sqsEndpoint, dynamodbEndpoint, region, withS3: !!local }, stops);
    const admin = clients('admin');
    const { sqs, s3 } = admin;
    const dynamodb = await createTable(admin.dynamodb, dynamodbEndpoint, dynamoServer?.endpoint, name);
    if (s3 && payloadBucket) await s3.send(new CreateBucketCommand({ Bucket: payloadBucket }));
    const queues = await createQueues(sqs, options, name, !!local);
    iam?.bind({
      queueName: name,
      deadLetterQueueName: `${name}-dlq`,
      ...(payloadBucket ? { bucketName: payloadBucket } : {}),
      ...(dynamodb ? { tableName: dynamodb.tableName } : {}),
    });
    return {
      databaseUrl: database.url,
      databaseRoles: database.roles,
      ...(dynamodb ? { dynamodb } : {}),
      sqsEndpoint,
      region,
      embedded: { postgres: database.embedded, sqs: !!local },
      queues,
      sqs,
      s3,
      payloadBucket,
      iam,
      clients,
      migrationsApplied: database.migrationsApplied,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What a stack stops, in the order it started them (stopped in reverse). */
type Stops = (() => Promise<void>)[];

/** The PostgreSQL side of a stack: the database (embedded, or given) migrated, with its roles. */
interface StackDatabase {
  /** Empty with `store: 'dynamodb'`. */
  readonly url: string;
  readonly roles: LocalDatabaseRoles | undefined;
  readonly embedded: boolean;
  readonly migrationsApplied: number;
}

/**
 * Starts embedded PostgreSQL unless a database was given or the store is DynamoDB, then migrates it and provisions
 * its roles ({@link migrate}). Nothing of it with DynamoDB.
 */
async function startDatabase(
  options: LocalStackOptions,
  dynamodb: boolean,
  stops: Stops,
): Promise<StackDatabase> {
  // A misnamed migration file or a gap in the numbering fails before a server is started or connected to.
  if (!dynamodb) await listMigrations(options.migrationsDirectory ?? MIGRATIONS);
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
  const { applied, roles } = dynamodb
    ? { applied: [], roles: undefined }
    : await migrate(databaseUrl, options);
  const databaseRoles: LocalDatabaseRoles | undefined = roles && {
    names: roles,
    url: (fn) => roleDatabaseUrl(databaseUrl, roles[fn]),
  };
  return { url: databaseUrl, roles: databaseRoles, embedded: !!pg, migrationsApplied: applied.length };
}

/** The local IAM layer in front of the emulators, unless `iam: false`. */
async function startIam(
  options: LocalStackOptions,
  upstreams: {
    store: 'postgres' | 'dynamodb';
    region: string;
    sqsUpstream: string;
    dynamodbUpstream: string | undefined;
  },
): Promise<LocalIam | undefined> {
  const iamSettings = options.iam === undefined || options.iam === true ? {} : options.iam;
  return iamSettings ? await startLocalIam({ ...upstreams, ...iamSettings }) : undefined;
}

/**
 * The `clients` of a stack: each component's, made on first use and kept; `stops` destroys them all.
 */
function componentClients(
  endpoints: {
    sqsEndpoint: string;
    dynamodbEndpoint: string | undefined;
    region: string;
    withS3: boolean;
  },
  stops: Stops,
): (component: LocalComponent) => ComponentClients {
  const { sqsEndpoint, dynamodbEndpoint, region } = endpoints;
  const cached = new Map<LocalComponent, ComponentClients>();
  stops.push(async () => {
    for (const made of cached.values()) {
      made.sqs.destroy();
      made.s3?.destroy();
      made.dynamodb?.destroy();
    }
  });
  return (component) => {
    const existing = cached.get(component);
    if (existing) return existing;
    const made: ComponentClients = {
      sqs: sqsClientFor(sqsEndpoint, region, component),
      s3: endpoints.withS3 ? s3ClientFor(sqsEndpoint, region, component) : undefined,
      dynamodb: dynamodbEndpoint
        ? new DynamoDBClient({
            endpoint: dynamodbEndpoint,
            region,
            credentials: localCredentials(component),
          })
        : undefined,
    };
    cached.set(component, made);
    return made;
  };
}

/** Creates the worker's table with the operator's client, when the stack has DynamoDB. */
async function createTable(
  client: DynamoDBClient | undefined,
  endpoint: string | undefined,
  streamsEndpoint: string | undefined,
  tableName: string,
): Promise<LocalStackDynamoDb | undefined> {
  if (!client || !endpoint || !streamsEndpoint) return undefined;
  const { streamArn } = await createDynamoDbTable(client, tableName);
  if (!streamArn) throw new Error(`DynamoDB Local created table ${tableName} without a stream`);
  return { endpoint, tableName, client, streamArn, streamsEndpoint };
}

/**
 * Creates the queue and its DLQ. A given endpoint that cannot be used is a LocalStackError naming its variable;
 * the built-in fauxqs's errors are thrown as they are.
 */
function createQueues(
  sqs: SQSClient,
  options: LocalStackOptions,
  name: string,
  builtIn: boolean,
): Promise<LocalQueues> {
  return createLocalQueues(sqs, {
    name,
    maxReceiveCount: options.maxReceiveCount ?? 5,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
  }).catch((error: unknown) => {
    if (builtIn) throw error;
    const setting = options.sqsEndpointSetting ?? 'SQS_ENDPOINT';
    const e = error as { name?: string; code?: string; message?: string };
    const reason = (e.message ?? e.code ?? e.name ?? String(error)).split('\n')[0]?.slice(0, 200);
    throw new LocalStackError(
      setting,
      `Cannot use SQS at ${options.sqsEndpoint} (${setting}): ${reason}. Check that ${setting} is the URL of a running SQS emulator, or unset it to use the built-in fauxqs.`,
      { cause: error },
    );
  });
}

/**
 * Migrates the database and provisions the functions' roles as the deployed migration function does (its code,
 * `migrateDatabase`, with its settings from the synthesized stack), then gives the roles their local-only
 * password. A given database that cannot be used is a LocalStackError naming DATABASE_URL.
 */
async function migrate(
  databaseUrl: string,
  options: LocalStackOptions,
): Promise<{ applied: readonly unknown[]; roles: LocalRoleNames }> {
  const checked = parseDatabaseUrl(databaseUrl, 'DATABASE_URL');
  if (options.databaseUrl && 'problem' in checked) throw new LocalStackError('DATABASE_URL', checked.problem);
  const settings = await stackMigrationSettings();
  const admin = postgres(databaseUrl, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  return migrateDatabase(admin, {
    ...settings,
    directory: options.migrationsDirectory ?? MIGRATIONS,
  })
    .then(async (result) => {
      await setLocalRolePasswords(admin, settings.roles);
      return { applied: result.applied, roles: settings.roles };
    })
    .catch((error: unknown) => {
      if (error instanceof MigrationError || !options.databaseUrl || 'problem' in checked) throw error;
      throw new LocalStackError(
        'DATABASE_URL',
        rolesRefused(error, checked.address, settings.roles) ??
          describeDatabaseError(error, { setting: 'DATABASE_URL', address: checked.address }).message,
        { cause: error },
      );
    })
    .finally(() => admin.end({ timeout: 5 }));
}

/** PostgreSQL's SQLSTATE for "permission denied". */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * The line for a DATABASE_URL whose user may not create or alter the stack's roles (no CREATEROLE, no ADMIN on
 * `pg_monitor`), or undefined for any other error.
 */
function rolesRefused(error: unknown, address: string, roles: LocalRoleNames): string | undefined {
  const e = error as { name?: string; code?: string; message?: string };
  if (e.name !== 'PostgresError' || e.code !== INSUFFICIENT_PRIVILEGE) return undefined;
  return `PostgreSQL at ${address} (DATABASE_URL) refused to provision the database roles npm start runs its components as (${Object.values(roles).join(', ')}): ${e.message}. Connect as a user that may create roles and grant pg_monitor (CREATEROLE with ADMIN on pg_monitor, or the server's superuser).`;
}
