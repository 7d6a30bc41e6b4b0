import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { CfnElement } from 'aws-cdk-lib';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, type WorkerConfig } from '../../lambda/config.ts';
import { exampleDynamoHandlersFor } from '../../lambda/domain/dynamodb/index.ts';
import { exampleHandlersFor } from '../../lambda/domain/index.ts';
import { createDynamoWorkerFromConfig } from '../../lambda/runtimes/lambda/create-dynamo-worker-from-config.ts';
import { createWorkerFromConfig } from '../../lambda/runtimes/lambda/create-worker-from-config.ts';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';
import { startPollerFromConfig } from '../../lambda/runtimes/poller/start-poller-from-config.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import {
  DERIVED_WORKER_VARIABLES,
  OVERRIDABLE_WORKER_VARIABLES,
} from '../../lib/check-worker-environment.ts';
import { buildPoller } from '../../tools/build/build-poller.ts';
import { createDynamoDbTable } from '../../tools/local/create-dynamodb-table.ts';
import {
  type EventSourceMappingHandler,
  startEventSourceMapping,
} from '../../tools/local/event-source-mapping.ts';
import { describeRefusals, startLocalIam } from '../../tools/local/iam/local-iam.ts';
import { LOCAL_ACCESS_KEY_IDS } from '../../tools/local/iam/local-identities.ts';
import { startLocalDynamoDb } from '../../tools/local/local-dynamodb.ts';
import { createLocalQueues, queueCounts } from '../../tools/local/local-queues.ts';
import { s3ClientFor } from '../../tools/local/local-s3.ts';
import { startLocalSqs } from '../../tools/local/local-sqs.ts';
import { sqsClientFor } from '../../tools/local/sqs-client-for.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory } from '../support/sqs-event.ts';
import { waitFor } from '../support/wait-for.ts';
import { invokeBundle } from './invoke-bundle.ts';
import {
  type Axes,
  engineEnvironment,
  policySourceOf,
  removeSynthesized,
  type SynthesizedCombination,
  synthesizeCombination,
  withDeployTimeValues,
} from './synthesized-combination.ts';

// The table of the construct's axes — store × runtime × commitMode × tracing × scalingMode — and some edges
// where they meet other settings. Each row is synthesized as `bin/app.ts` would a cdk.json stage (bundling skipped,
// except for the rows whose bundle runs) and EITHER the synth refuses it, every problem naming the values and the
// fix, OR what runs the engine starts locally with its synthesized environment: the configuration as deployed
// (loadConfig / loadPollerConfig on the template's values), then the deployed entry's start path on the local
// PostgreSQL, DynamoDB Local and fauxqs (SQS, S3) behind the local IAM layer, which evaluates every call against
// the row's own synthesized roles, and one real message (its payload by reference, so the worker reads S3)
// processed through it. Never "synth OK, fails at cold start". The table is printed at the end.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REGION = 'us-east-1';
const db = await createTestDatabase();
// DynamoDB Local boots (seconds) while the PostgreSQL rows are synthesized and run: awaited by the first DynamoDB row.
const dynamoServer = startLocalDynamoDb();
dynamoServer.catch(() => {}); // reported where it is awaited
afterAll(async () => (await dynamoServer.catch(() => undefined))?.stop());
/** DynamoDB Local and an administrator's clients on it, made once (on the first DynamoDB row). */
let dynamoAdmin:
  | Promise<{ endpoint: string; client: DynamoDBClient; doc: DynamoDBDocumentClient }>
  | undefined;
const dynamo = () => {
  dynamoAdmin ??= dynamoServer.then(({ endpoint }) => {
    const client = new DynamoDBClient({
      endpoint,
      region: REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    return { endpoint, client, doc: DynamoDBDocumentClient.from(client) };
  });
  return dynamoAdmin;
};
afterAll(async () => (await dynamoAdmin)?.client.destroy());
const fauxqs = await startLocalSqs({ region: REGION });
afterAll(() => fauxqs.stop());
afterAll(removeSynthesized);

/** One row: a value on each axis, settings beyond them (an edge), and whether its bundled entry runs too. */
interface Row {
  readonly label: string;
  readonly axes: Axes;
  /** Stage settings beyond the axes, as cdk.json gives them. */
  readonly extra: Readonly<Record<string, unknown>>;
  /** The problems synth owes an edge row besides those of its axes (`AXIS_REFUSALS`). */
  readonly owed: readonly string[];
  /** Also process a message through the bundled entry in a process of its own (one row per store × runtime). */
  readonly representative: boolean;
}

/**
 * The settings of every row besides its axes: a dev stage whose alarms nobody reads. The DynamoDB rows get a
 * budget of 8000 write units a second: the default 4000 carry a safe worker concurrency of 12, below the 20 that
 * provisioned pollers need (that refusal is an edge row of its own).
 */
const BASE = { production: false, alarms: 'none' } as const;
const DYNAMODB_BASE = { maxWriteUnitsPerSecond: 8000 } as const;

const label = (axes: Axes, extra: Readonly<Record<string, unknown>>) =>
  [
    axes.store,
    axes.runtime,
    axes.commitMode,
    `tracing ${axes.tracing ? 'on' : 'off'}`,
    axes.scalingMode ?? 'scaling n/a',
    ...Object.entries(extra).map(([key, value]) => `${key} ${JSON.stringify(value)}`),
  ].join(' · ');

const row = (
  axes: Axes,
  options: { extra?: Record<string, unknown>; owed?: readonly string[]; representative?: boolean } = {},
): Row => ({
  label: label(axes, options.extra ?? {}),
  axes,
  extra: options.extra ?? {},
  owed: options.owed ?? [],
  representative: options.representative ?? false,
});

/** The representative of each store × runtime whose bundled entry processes a message (the others refuse). */
const REPRESENTATIVES: readonly Axes[] = [
  {
    store: 'postgres',
    runtime: 'lambda',
    commitMode: 'per-batch',
    tracing: true,
    scalingMode: 'provisioned',
  },
  {
    store: 'dynamodb',
    runtime: 'lambda',
    commitMode: 'per-message',
    tracing: true,
    scalingMode: 'maximum-concurrency',
  },
  { store: 'postgres', runtime: 'fargate', commitMode: 'per-batch', tracing: false, scalingMode: undefined },
  {
    store: 'dynamodb',
    runtime: 'fargate',
    commitMode: 'per-message',
    tracing: true,
    scalingMode: undefined,
  },
];
const isRepresentative = (axes: Axes) =>
  REPRESENTATIVES.some((other) => JSON.stringify(other) === JSON.stringify(axes));

/**
 * The full cross product, 2 × 2 × 2 × 2 × 2 = 32 combinations, in 24 rows: `scalingMode` is the event source
 * mapping's, so it does not apply to runtime fargate (the tasks scale on queue depth; synth refuses the prop there),
 * and each fargate row stands for both of its scaling modes.
 */
const CROSS_PRODUCT: readonly Row[] = (['postgres', 'dynamodb'] as const).flatMap((store) =>
  (['lambda', 'fargate'] as const).flatMap((runtime) =>
    (['per-message', 'per-batch'] as const).flatMap((commitMode) =>
      [false, true].flatMap((tracing) =>
        (runtime === 'fargate' ? [undefined] : (['maximum-concurrency', 'provisioned'] as const)).map(
          (scalingMode) => {
            const axes = { store, runtime, commitMode, tracing, scalingMode };
            return row(axes, { representative: isRepresentative(axes) });
          },
        ),
      ),
    ),
  ),
);

/** The problems synth owes a combination of the axes: when each applies, and what it says (values and fix). */
const AXIS_REFUSALS: readonly { readonly applies: (axes: Axes) => boolean; readonly problem: string }[] = [
  {
    applies: (axes) => axes.store === 'dynamodb' && axes.commitMode === 'per-batch',
    problem:
      'commitMode ("per-batch") is a PostgreSQL mode (one transaction per batch, a savepoint per record); with store "dynamodb" every record commits in its own TransactWriteItems: remove commitMode or set it "per-message"',
  },
];

const lambdaAxes = (store: Axes['store'], overrides: Partial<Axes> = {}): Axes => ({
  store,
  runtime: 'lambda',
  commitMode: 'per-message',
  tracing: false,
  scalingMode: 'maximum-concurrency',
  ...overrides,
});
const fargateAxes: Axes = {
  store: 'postgres',
  runtime: 'fargate',
  commitMode: 'per-message',
  tracing: false,
  scalingMode: undefined,
};
/** The refusal of a `workerEnvironment` variable the construct sets from `prop`. */
const derived = (name: string, value: string, prop: string) =>
  `workerEnvironment sets ${name} (${JSON.stringify(value)}), which the construct sets from ${prop} and checks at synth against the other settings; remove ${name} from workerEnvironment and set ${prop} instead`;

/**
 * Where the axes meet other settings: the record concurrency (one connection per record; the DynamoDB store's
 * limit of 10, on either runtime), the capacity provisioned pollers need, a scaling mode given to runtime fargate, and
 * `workerEnvironment` setting an axis's variable itself (or one it may set).
 */
const EDGES: readonly Row[] = [
  row(lambdaAxes('postgres', { commitMode: 'per-batch' }), {
    extra: { recordConcurrency: 2 },
    owed: [
      "recordConcurrency (2) must be 1 with commitMode per-batch: an invocation's batch runs one record after another in its one transaction; remove recordConcurrency",
    ],
  }),
  row(lambdaAxes('dynamodb'), { extra: { recordConcurrency: 10 } }),
  row(lambdaAxes('dynamodb'), {
    extra: { recordConcurrency: 20, maxWriteUnitsPerSecond: 40_000 },
    owed: [
      'recordConcurrency (20) must be a whole number from 1 to 10 with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most 10 records of a batch at once); lower recordConcurrency to 10 or less',
    ],
  }),
  row(lambdaAxes('dynamodb', { scalingMode: 'provisioned' }), {
    extra: { maxWriteUnitsPerSecond: 4000 },
    owed: [
      'scalingMode "provisioned" needs a safe worker concurrency of at least 20 (2 pollers, the minimum, × 10 concurrent invokes each), but the safe worker concurrency is 12 (safe worker concurrency 12, bound by write_units (max_write_units_per_second 4000 / (write_units_per_message 5 × messages_per_second_per_worker 66.67))); use scalingMode "maximum-concurrency" or raise maxWriteUnitsPerSecond (the table serves more once scaled or with a raised quota), or lower transactItemsPerMessage or recordConcurrency',
    ],
  }),
  // The scaling mode pruned from the fargate rows: given anyway, refused rather than ignored.
  row(fargateAxes, {
    extra: { scalingMode: 'provisioned' },
    owed: [
      'scalingMode ("provisioned") applies only to runtime "lambda" (given runtime "fargate"); remove scalingMode',
    ],
  }),
  row(lambdaAxes('postgres'), { extra: { workerEnvironment: { WORKER_BACKOFF_MAX_SECONDS: '600' } } }),
  row(lambdaAxes('dynamodb'), {
    extra: { workerEnvironment: { WORKER_COMMIT_MODE: 'per-batch' } },
    owed: [derived('WORKER_COMMIT_MODE', 'per-batch', 'commitMode')],
  }),
  row(lambdaAxes('postgres'), {
    extra: { workerEnvironment: { POWERTOOLS_TRACE_ENABLED: 'true' } },
    owed: [derived('POWERTOOLS_TRACE_ENABLED', 'true', 'tracing')],
  }),
  row(fargateAxes, {
    extra: { workerEnvironment: { WORKER_STORE: 'dynamodb' } },
    owed: [derived('WORKER_STORE', 'dynamodb', 'store')],
  }),
  // The DynamoDB store's limit of 10 records at once holds for the poller's tasks too (POLLER_CONCURRENCY).
  row({ ...fargateAxes, store: 'dynamodb' }, { extra: { recordConcurrency: 10 } }),
  row(
    { ...fargateAxes, store: 'dynamodb' },
    {
      extra: { recordConcurrency: 11 },
      owed: [
        'recordConcurrency (11) must be a whole number from 1 to 10 with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most 10 records of a batch at once); lower recordConcurrency to 10 or less',
      ],
    },
  ),
];

const ROWS: readonly Row[] = [...CROSS_PRODUCT, ...EDGES];

/** Each row's synthesis, made once for the file (the row's test and its bundled entry's share it). */
const synthesized = new Map<string, SynthesizedCombination>();
function synthesize(row: Row): SynthesizedCombination {
  let result = synthesized.get(row.label);
  if (!result) {
    const { store, runtime, commitMode, tracing, scalingMode } = row.axes;
    result = synthesizeCombination(
      {
        ...BASE,
        ...(store === 'dynamodb' ? DYNAMODB_BASE : {}),
        store,
        runtime,
        commitMode,
        tracing,
        ...(scalingMode ? { scalingMode } : {}),
        ...row.extra,
      },
      { bundled: row.representative && runtime === 'lambda' },
    );
    synthesized.set(row.label, result);
  }
  return result;
}

/** What each row came to, printed as the table after the file. */
const outcomes = new Map<string, string>();
afterAll(() => {
  const width = Math.max(...ROWS.map((r) => r.label.length));
  const lines = ROWS.map((r) => `${r.label.padEnd(width)}  ${outcomes.get(r.label) ?? '(not run)'}`);
  console.log(`Combinations (store · runtime · commitMode · tracing · scalingMode):\n${lines.join('\n')}`);
});

/** The values of the template's deploy-time references once deployed (a proxy endpoint, a table, a queue URL). */
const DEPLOYED_VALUES = {
  DB_HOST: 'sqsinboxworker-matrix-proxy.proxy-abcdefghijkl.eu-west-1.rds.amazonaws.com',
  DYNAMODB_TABLE: 'SqsInboxWorker-matrix-WorkerTableABCDEF-1A2B3C4D5E6F',
  WORKER_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/SqsInboxWorker-matrix-WorkerQueue',
  AWS_REGION: 'eu-west-1',
};
/** What the Lambda runtime adds to a function's environment. */
const LAMBDA_RUNTIME = { AWS_REGION: 'eu-west-1', AWS_LAMBDA_FUNCTION_NAME: 'worker' };

/** The handlers of the deployed entries (`lambda/handlers/worker.ts`, `bin/poller.ts`), from their configuration. */
const workerEntryHandlers = (config: WorkerConfig) =>
  config.store.kind === 'dynamodb' ? exampleDynamoHandlersFor(config) : exampleHandlersFor(config);
/**
 * The deployed worker entry of the configuration's store, as a handler: `lambda/handlers/worker.ts` (PostgreSQL) or
 * `lambda/handlers/worker-dynamodb.ts`, each wiring its example handlers from the configuration.
 */
const deployedWorkerEntry = (config: WorkerConfig) =>
  config.store.kind === 'dynamodb'
    ? createDynamoWorkerFromConfig({ handlers: exampleDynamoHandlersFor, config })
    : createWorkerFromConfig({ handlers: exampleHandlersFor, config });

type Started = Extract<SynthesizedCombination, { stack: unknown }>;

/**
 * A local deployment of one synthesized row: the local IAM layer with the row's roles in front of fauxqs (SQS, S3)
 * and DynamoDB Local, a fresh queue pair, payload bucket and (DynamoDB) table bound to the stack's.
 */
async function localDeployment(synthesizedRow: Started, store: Axes['store']) {
  const tables = store === 'dynamodb' ? await dynamo() : undefined;
  const iam = await startLocalIam({
    store,
    region: REGION,
    sqsUpstream: fauxqs.endpoint,
    ...(tables ? { dynamodbUpstream: tables.endpoint } : {}),
    source: policySourceOf(synthesizedRow),
  });
  const sqsEndpoint = iam.sqsEndpoint as string;
  const admin = sqsClientFor(sqsEndpoint, REGION, 'admin');
  const adminS3 = s3ClientFor(sqsEndpoint, REGION, 'admin');
  const name = `combination-${randomBytes(4).toString('hex')}`;
  const queues = await createLocalQueues(admin, { name });
  const bucket = `${name}-payloads`;
  await adminS3.send(new CreateBucketCommand({ Bucket: bucket }));
  const table = tables ? `${name}-table` : undefined;
  if (tables && table) await createDynamoDbTable(tables.client, table);
  iam.bind({ queueName: name, deadLetterQueueName: `${name}-dlq`, bucketName: bucket, tableName: table });
  return {
    iam,
    admin,
    queueUrl: queues.queueUrl,
    /**
     * The local values of the deploy-time references, and the local endpoints and database. `DB_HOST` keeps its
     * deployed shape: `DATABASE_URL` (which the function declares empty for local runs, and loadConfig prefers)
     * points the worker at the local PostgreSQL instead of the proxy.
     */
    localValues: {
      DB_HOST: DEPLOYED_VALUES.DB_HOST,
      DYNAMODB_TABLE: table ?? '',
      WORKER_QUEUE_URL: queues.queueUrl,
      AWS_REGION: REGION,
    },
    localEndpoints: {
      SQS_ENDPOINT: sqsEndpoint,
      S3_ENDPOINT: sqsEndpoint,
      ...(store === 'dynamodb'
        ? { DYNAMODB_ENDPOINT: iam.dynamodbEndpoint as string }
        : { DATABASE_URL: db.url }),
    },
    /** Sends one `PaymentCaptured` whose payload is an object of the bucket (`payloadRef`). */
    async sendPayment(): Promise<Envelope> {
      const { payload, ...rest } = envelopeFactory();
      const bytes = Buffer.from(JSON.stringify(payload));
      const key = `payments/${randomUUID()}.json`;
      await adminS3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
      const envelope = {
        ...rest,
        payloadRef: {
          bucket,
          key,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          size: bytes.length,
        },
      } as unknown as Envelope;
      await admin.send(
        new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: JSON.stringify(envelope) }),
      );
      return envelope;
    },
    /** Whether the message's inbox entry (row or item) is COMPLETED. */
    async completed(consumer: string, idempotencyKey: string): Promise<boolean> {
      if (!tables || !table) {
        const rows = await db.sql<{ status: string }[]>`
          select status from worker_inbox where consumer = ${consumer} and idempotency_key = ${idempotencyKey}`;
        return rows[0]?.status === 'COMPLETED';
      }
      const { Item } = await tables.doc.send(
        new GetCommand({ TableName: table, Key: inboxKey(consumer, idempotencyKey), ConsistentRead: true }),
      );
      return Item?.status === 'COMPLETED';
    },
    async close() {
      admin.destroy();
      adminS3.destroy();
      await iam.stop();
    },
  };
}
type LocalDeployment = Awaited<ReturnType<typeof localDeployment>>;

/**
 * Runs `body` with the process's AWS credentials those of `component`: the SDK clients the entry makes read them
 * from the environment, as in AWS from the function's or the task's role (`npm start` does the same).
 */
async function signingAs<T>(component: 'worker' | 'poller', body: () => Promise<T>): Promise<T> {
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  process.env.AWS_ACCESS_KEY_ID = LOCAL_ACCESS_KEY_IDS[component];
  process.env.AWS_SECRET_ACCESS_KEY = 'local';
  try {
    return await body();
  } finally {
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
  }
}

/**
 * The local event source mapping configured as the synthesized one (batch size, window, the concurrency cap:
 * `MaximumConcurrency`, or for provisioned pollers what they drive within the reserved concurrency) and the
 * function's timeout, polling as the worker's role.
 */
function mappingOf(synthesizedRow: Started) {
  const resources = Object.values(synthesizedRow.template.Resources);
  const mapping = resources.find((resource) => resource.Type === 'AWS::Lambda::EventSourceMapping')
    ?.Properties as {
    BatchSize: number;
    MaximumBatchingWindowInSeconds?: number;
    ScalingConfig?: { MaximumConcurrency: number };
    ProvisionedPollerConfig?: { MaximumPollers: number };
  };
  const fn = synthesizedRow.stack.worker.workerFunction?.node.defaultChild as CfnElement;
  const properties = synthesizedRow.template.Resources[synthesizedRow.stack.getLogicalId(fn)]?.Properties as {
    Timeout: number;
    ReservedConcurrentExecutions?: number;
  };
  const provisioned = mapping.ProvisionedPollerConfig;
  return {
    batchSize: mapping.BatchSize,
    maxBatchingWindowMs: (mapping.MaximumBatchingWindowInSeconds ?? 0) * 1000,
    maxConcurrency:
      mapping.ScalingConfig?.MaximumConcurrency ??
      Math.min(
        (provisioned?.MaximumPollers ?? 0) * 10,
        properties.ReservedConcurrentExecutions ?? Number.POSITIVE_INFINITY,
      ),
    functionTimeoutMs: properties.Timeout * 1000,
  };
}

/** One message through the local event source mapping into `handler`; resolves with the mapping's stats. */
async function throughMapping(
  local: LocalDeployment,
  synthesizedRow: Started,
  handler: EventSourceMappingHandler,
  consumer: string,
) {
  const sqs = sqsClientFor(local.localEndpoints.SQS_ENDPOINT, REGION, 'worker');
  const mapping = await startEventSourceMapping({
    sqs,
    queueUrl: local.queueUrl,
    handler,
    ...mappingOf(synthesizedRow),
  });
  try {
    const envelope = await local.sendPayment();
    await mapping.drain({ timeoutMs: 30_000 });
    expect(await local.completed(consumer, envelope.idempotencyKey)).toBe(true);
  } finally {
    await mapping.stop();
    sqs.destroy();
  }
  return mapping.stats;
}

/** The assertions every started row shares: nothing left on the queue, no call refused by the row's roles. */
async function assertSettled(local: LocalDeployment) {
  expect(describeRefusals(local.iam.refusals())).toEqual([]);
  expect(await queueCounts(local.admin, local.queueUrl)).toMatchObject({ visible: 0, inFlight: 0 });
}

/** The configuration of what runs the engine, as deployed: loadConfig / loadPollerConfig on the template's values. */
function deployedConfig(component: 'worker' | 'poller', variables: Readonly<Record<string, unknown>>) {
  const env = withDeployTimeValues(variables, DEPLOYED_VALUES);
  return component === 'worker' ? loadConfig({ ...LAMBDA_RUNTIME, ...env }) : loadPollerConfig(env).worker;
}

describe('Table: every combination of store × runtime × commitMode × tracing × scalingMode', () => {
  it.each(ROWS)(
    '$label',
    async (row) => {
      // Prepare
      const expected = [
        ...AXIS_REFUSALS.filter((refusal) => refusal.applies(row.axes)).map((refusal) => refusal.problem),
        ...row.owed,
      ];

      // Act
      const result = synthesize(row);

      // Assess: refused with exactly the problems owed, or it starts and processes a message.
      if (expected.length > 0) {
        expect(result.refused?.problems, 'synth refuses it').toBeDefined();
        expect([...(result.refused?.problems ?? [])].sort()).toEqual([...expected].sort());
        outcomes.set(
          row.label,
          `synth refused:${expected.map((problem) => `\n      - ${problem}`).join('')}`,
        );
        return;
      }
      if (result.refused)
        throw new Error(`synth refused a combination that should start: ${result.refused.message}`);
      const { component, variables } = engineEnvironment(result);
      // Every variable the construct sets is one workerEnvironment may not replace, or one it may (the list is whole).
      const added = Object.keys((row.extra.workerEnvironment ?? {}) as Record<string, string>);
      const unlisted = Object.keys(variables).filter(
        (name) =>
          !(name in DERIVED_WORKER_VARIABLES) &&
          !OVERRIDABLE_WORKER_VARIABLES.includes(name) &&
          !added.includes(name),
      );
      expect(unlisted, 'variables missing from lib/check-worker-environment.ts').toEqual([]);
      const config = deployedConfig(component, variables);
      expect(config.store.kind).toBe(row.axes.store);
      expect(config.commitMode).toBe(row.axes.commitMode);
      expect(config.tracing).toBe(row.axes.tracing);
      const local = await localDeployment(result, row.axes.store);
      try {
        const env = { ...withDeployTimeValues(variables, local.localValues), ...local.localEndpoints };
        if (component === 'worker') {
          // The deployed entry's cold start (lambda/handlers/worker*.ts), then its invocations by the mapping.
          const stats = await signingAs('worker', async () => {
            const workerConfig = loadConfig({ ...env, AWS_REGION: REGION });
            const handler = deployedWorkerEntry(workerConfig);
            return throughMapping(local, result, handler, workerConfig.consumer);
          });
          expect(stats).toMatchObject({ recordsSucceeded: 1, deleted: 1, errors: 0 });
        } else {
          // The poller's start (bin/poller.ts: loadPollerConfig, startPollerFromConfig), receiving itself.
          await signingAs('poller', async () => {
            const pollerConfig = loadPollerConfig(env);
            const running = await startPollerFromConfig({
              handlers: workerEntryHandlers,
              config: pollerConfig,
            });
            try {
              const envelope = await local.sendPayment();
              await waitFor(
                'the poller to complete and delete the message',
                async () =>
                  running.poller.stats.deleted === 1 &&
                  (await local.completed(pollerConfig.worker.consumer, envelope.idempotencyKey)),
                30_000,
              );
            } finally {
              await running.poller.stop({ timeoutMs: 0 });
              await running.close('now');
            }
          });
        }
        await assertSettled(local);
      } finally {
        await local.close();
      }
      outcomes.set(
        row.label,
        `starts: ${component === 'worker' ? 'worker function' : 'poller'}, 1 message completed`,
      );
      // A row takes 3–17 s (measured at load average 15); the first one also loads aws-cdk-lib, esbuild and the
      // engine for the whole file, which took over 60 s on a 2-core machine running three test suites at once.
    },
    180_000,
  );
});

describe('Table: the bundled entry of one representative per store × runtime, end to end', () => {
  const representatives = CROSS_PRODUCT.filter((r) => r.representative);
  const children: ChildProcess[] = [];
  const pollerBundle = mkdtempSync(join(tmpdir(), 'combination-poller-'));
  afterAll(() => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(pollerBundle, { recursive: true, force: true });
  });

  it('has one representative of each store × runtime that starts', () => {
    expect(representatives.map((r) => `${r.axes.store} ${r.axes.runtime}`).sort()).toEqual([
      'dynamodb fargate',
      'dynamodb lambda',
      'postgres fargate',
      'postgres lambda',
    ]);
  });

  it.each(representatives)('$label', async (row) => {
    // Prepare
    const result = synthesize(row);
    if (result.refused) throw new Error(`synth refused a representative: ${result.refused.message}`);
    const { component, variables } = engineEnvironment(result);
    const local = await localDeployment(result, row.axes.store);
    const credentials = {
      AWS_ACCESS_KEY_ID: LOCAL_ACCESS_KEY_IDS[component],
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    const env: Record<string, string> = {
      ...withDeployTimeValues(variables, local.localValues),
      ...local.localEndpoints,
      ...credentials,
    };
    const consumer = env.WORKER_CONSUMER as string;
    try {
      if (component === 'worker') {
        // Act: the function's synthesized asset, invoked by the local mapping, one process per invocation.
        const code = result.stack.worker.workerFunction?.node.findChild('Code') as unknown as {
          assetPath: string;
        };
        const dir = join(result.outdir, code.assetPath);
        const handler: EventSourceMappingHandler = async (event) =>
          (
            await invokeBundle<SQSBatchResponse>(dir, event, {
              ...env,
              ...LAMBDA_RUNTIME,
              AWS_REGION: REGION,
            })
          ).response;
        const stats = await throughMapping(local, result, handler, consumer);

        // Assess
        expect(stats).toMatchObject({ recordsSucceeded: 1, deleted: 1, errors: 0 });
      } else {
        // Act: the container's entry as the image builds it (Dockerfile: tools/build/build-poller.ts bin/poller.ts)
        // with the container's environment, run as the image runs it.
        await buildPoller(join(ROOT, 'bin/poller.ts'), pollerBundle);
        const child = spawn(process.execPath, ['--enable-source-maps', 'poller.mjs'], {
          cwd: pollerBundle,
          env: { PATH: process.env.PATH ?? '', ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        children.push(child);
        let stderr = '';
        child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
        });
        const envelope = await local.sendPayment();
        await waitFor(
          'the poller process to complete and delete the message',
          async () => {
            if (child.exitCode !== null) throw new Error(`the poller exited ${child.exitCode}: ${stderr}`);
            const counts = await queueCounts(local.admin, local.queueUrl);
            return (
              counts.visible + counts.inFlight === 0 &&
              (await local.completed(consumer, envelope.idempotencyKey))
            );
          },
          30_000,
        );

        // Assess: it still runs (its drain on SIGTERM waits out the template's 20 s long poll: poller-stop tests).
        expect(child.exitCode).toBeNull();
        child.kill('SIGKILL');
      }
      await assertSettled(local);
    } finally {
      await local.close();
    }
    outcomes.set(row.label, `${outcomes.get(row.label) ?? ''}; bundled entry: 1 message completed`);
  });
});
