import { UsageError } from './errors.ts';

/** Flags every `sqs-worker` command accepts (commander's camel-cased global options). */
export interface OpsFlags {
  readonly databaseUrl?: string;
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  readonly sqsEndpoint?: string;
  readonly region?: string;
  readonly consumer?: string;
  readonly mappingUuid?: string;
  readonly store?: string;
  readonly dynamodbTable?: string;
  readonly dynamodbEndpoint?: string;
  readonly json?: boolean;
}

/** Resolved settings: a flag wins over its environment variable. */
export interface OpsSettings {
  readonly databaseUrl: string | undefined;
  /** Where {@link OpsSettings.databaseUrl} came from, named in its errors: the flag wins over the variable. */
  readonly databaseUrlSetting: '--database-url' | 'DATABASE_URL';
  readonly queueUrl: string | undefined;
  readonly dlqUrl: string | undefined;
  /** A local SQS endpoint; undefined = AWS (and CloudWatch) with the default credential chain. */
  readonly sqsEndpoint: string | undefined;
  /** Where {@link OpsSettings.sqsEndpoint} came from, named in its errors. */
  readonly sqsEndpointSetting: SqsEndpointSetting;
  readonly region: string | undefined;
  /** Inbox namespace of the worker (`worker_inbox.consumer`). @default 'case-worker' */
  readonly consumer: string;
  /** UUID of the worker's event source mapping (`breaker` commands). */
  readonly mappingUuid: string | undefined;
  /** The worker's store: `postgres` (default) or `dynamodb`; the commands run against it (open-ops-store.ts). */
  readonly store: 'postgres' | 'dynamodb';
  /** The DynamoDB store's table. */
  readonly dynamodbTable: string | undefined;
  /** A local DynamoDB endpoint (DynamoDB Local); undefined = AWS. */
  readonly dynamodbEndpoint: string | undefined;
  readonly json: boolean;
}

/** A setting that a command may require, with its flag and environment variable. */
export const SETTINGS = {
  databaseUrl: { flag: '--database-url', env: 'DATABASE_URL', what: 'the PostgreSQL connection URL' },
  queueUrl: { flag: '--queue-url', env: 'WORKER_QUEUE_URL', what: 'the URL of the source (worker) queue' },
  dlqUrl: { flag: '--dlq-url', env: 'WORKER_DLQ_URL', what: 'the URL of the dead-letter queue' },
  sqsEndpoint: { flag: '--sqs-endpoint', env: 'SQS_ENDPOINT', what: 'a local SQS endpoint' },
  region: { flag: '--region', env: 'AWS_REGION', what: 'the AWS region' },
  consumer: { flag: '--consumer', env: 'WORKER_CONSUMER', what: 'the inbox consumer name' },
  dynamodbTable: {
    flag: '--dynamodb-table',
    env: 'DYNAMODB_TABLE',
    what: 'the DynamoDB table of the worker',
  },
  mappingUuid: {
    flag: '--mapping-uuid',
    env: 'WORKER_MAPPING_UUID',
    what: 'the UUID of the worker event source mapping (stack output EventSourceMappingUuid)',
  },
} as const;

/**
 * Where an SQS endpoint may come from, in order: the flag, the project's variable, then the AWS SDK's own
 * service-specific and global endpoint variables (what LocalStack and the AWS CLI use).
 */
export const SQS_ENDPOINT_SOURCES = [
  '--sqs-endpoint',
  'SQS_ENDPOINT',
  'AWS_ENDPOINT_URL_SQS',
  'AWS_ENDPOINT_URL',
] as const;

/** One of {@link SQS_ENDPOINT_SOURCES}. */
export type SqsEndpointSetting = (typeof SQS_ENDPOINT_SOURCES)[number];

/**
 * The SQS endpoint of the flag or the environment ({@link SQS_ENDPOINT_SOURCES}, first set wins) and where it
 * came from; `undefined` when none is set (AWS).
 *
 * @throws UsageError naming the setting when its value is not an http(s) URL.
 */
export function resolveSqsEndpoint(
  flag: string | undefined,
  env: Record<string, string | undefined> = process.env,
): { readonly endpoint: string; readonly setting: SqsEndpointSetting } | undefined {
  for (const setting of SQS_ENDPOINT_SOURCES) {
    const endpoint = blank(setting === '--sqs-endpoint' ? flag : env[setting]);
    if (endpoint === undefined) continue;
    if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
      throw new UsageError(
        `${setting} must be an http(s) URL such as http://127.0.0.1:4566 (given "${endpoint}"); fix it or unset it to use AWS`,
      );
    }
    return { endpoint, setting };
  }
  return undefined;
}

/** Name of a required setting. */
export type RequiredSetting = 'databaseUrl' | 'queueUrl' | 'dlqUrl' | 'mappingUuid' | 'dynamodbTable';

const blank = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value);

/**
 * Merges flags over the environment (`DATABASE_URL`, `WORKER_QUEUE_URL`, …; the SQS endpoint also from the SDK's
 * `AWS_ENDPOINT_URL_SQS` and `AWS_ENDPOINT_URL`).
 *
 * @throws UsageError when the SQS endpoint is not an http(s) URL.
 */
export function resolveOpsSettings(
  flags: OpsFlags,
  env: Record<string, string | undefined> = process.env,
): OpsSettings {
  const sqs = resolveSqsEndpoint(flags.sqsEndpoint, env);
  const store = blank(flags.store) ?? blank(env.WORKER_STORE) ?? 'postgres';
  if (store !== 'postgres' && store !== 'dynamodb') {
    throw new UsageError(`--store / WORKER_STORE must be postgres or dynamodb (given "${store}")`);
  }
  const dynamodbEndpoint =
    blank(flags.dynamodbEndpoint) ?? blank(env.DYNAMODB_ENDPOINT) ?? blank(env.AWS_ENDPOINT_URL_DYNAMODB);
  if (
    dynamodbEndpoint !== undefined &&
    (!URL.canParse(dynamodbEndpoint) || !/^https?:$/.test(new URL(dynamodbEndpoint).protocol))
  ) {
    throw new UsageError(
      `--dynamodb-endpoint / DYNAMODB_ENDPOINT must be an http(s) URL such as http://127.0.0.1:8000 (given "${dynamodbEndpoint}"); fix it or unset it to use AWS`,
    );
  }
  return {
    databaseUrl: blank(flags.databaseUrl) ?? blank(env.DATABASE_URL),
    databaseUrlSetting: blank(flags.databaseUrl) ? '--database-url' : 'DATABASE_URL',
    queueUrl: blank(flags.queueUrl) ?? blank(env.WORKER_QUEUE_URL),
    dlqUrl: blank(flags.dlqUrl) ?? blank(env.WORKER_DLQ_URL),
    sqsEndpoint: sqs?.endpoint,
    sqsEndpointSetting: sqs?.setting ?? 'SQS_ENDPOINT',
    region: blank(flags.region) ?? blank(env.AWS_REGION),
    consumer: blank(flags.consumer) ?? blank(env.WORKER_CONSUMER) ?? 'case-worker',
    mappingUuid: blank(flags.mappingUuid) ?? blank(env.WORKER_MAPPING_UUID),
    store,
    dynamodbTable: blank(flags.dynamodbTable) ?? blank(env.DYNAMODB_TABLE),
    dynamodbEndpoint,
    json: flags.json === true,
  };
}

/**
 * Returns a required setting or throws a {@link UsageError} (exit 2) that names the flag and the variable.
 *
 * @example
 * ```ts
 * const dlqUrl = requireSetting(settings, 'dlqUrl', 'dlq peek');
 * ```
 */
export function requireSetting(settings: OpsSettings, name: RequiredSetting, command: string): string {
  const value = settings[name];
  if (value !== undefined) return value;
  const { flag, env, what } = SETTINGS[name];
  throw new UsageError(`Missing setting for "${command}": ${what}. Pass ${flag} <value> or set ${env}.`);
}
