import { createHash, randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { bundleOptions } from '../../lib/bundled-function.ts';
import { shippedWorkerEntry } from '../../lib/shipped-worker-entry.ts';
import { SqsDatabaseWorker } from '../../lib/sqs-database-worker.ts';
import { DEFAULT_WORKER_BUNDLE_PROFILE } from '../../lib/worker-bundle-profile.ts';
import { s3ClientFor } from '../../tools/local/local-s3.ts';
import { startLocalSqs } from '../../tools/local/local-sqs.ts';
import { bundledSources, LOCAL_ONLY_SOURCES } from '../support/bundle-sources.ts';
import { createTestDatabase } from '../support/database.ts';
import { PATCHED_NEXT_WRITE, UNPATCHED_NEXT_WRITE } from '../support/postgres-patch.ts';
import { envelopeFactory } from '../support/sqs-event.ts';
import { invokeBundle } from './invoke-bundle.ts';

const db = await createTestDatabase();
const sqs = await startLocalSqs();
afterAll(() => sqs.stop());

// Bundles the three functions for real with the local esbuild (no Docker), once for the file.
describe('Class: SqsDatabaseWorker (real esbuild bundling)', () => {
  let assembly: string;
  let worker: SqsDatabaseWorker;
  let tracedWorker: SqsDatabaseWorker;
  let dynamoWorker: SqsDatabaseWorker;
  beforeAll(() => {
    assembly = mkdtempSync(join(tmpdir(), 'cdk-bundle-'));
    const app = new App({ outdir: assembly });
    // A production worker synthesizes only with its queues' identity recorded (the same ids in each stack).
    const queueIdentity = {
      fifo: false,
      queueLogicalId: 'WorkerQueue9380F652',
      deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
    };
    const stack = new Stack(app, 'Bundled');
    worker = new SqsDatabaseWorker(stack, 'Worker', {
      vpc: new ec2.Vpc(stack, 'Vpc', { natGateways: 0 }),
      alarms: 'none',
      queueIdentity,
    });
    // The two settings that change what the worker's bundle holds (lib/worker-bundle-profile.ts): tracing, and the
    // store, whose entry is its own (lambda/handlers/worker-dynamodb.ts).
    const traced = new Stack(app, 'BundledTraced');
    tracedWorker = new SqsDatabaseWorker(traced, 'Worker', {
      vpc: new ec2.Vpc(traced, 'Vpc', { natGateways: 0 }),
      alarms: 'none',
      queueIdentity,
      tracing: true,
    });
    const dynamo = new Stack(app, 'BundledDynamo');
    dynamoWorker = new SqsDatabaseWorker(dynamo, 'Worker', {
      store: { kind: 'dynamodb' },
      alarms: 'none',
      queueIdentity,
    });
    app.synth();
  });

  const assetOf = (fn: { node: { findChild(id: string): unknown } } | undefined): string => {
    if (!fn) throw new Error('the worker has no function (runtime "fargate"?)');
    const code = fn.node.findChild('Code') as { assetPath: string };
    return join(assembly, code.assetPath);
  };

  it('bundles the worker into a minified ESM entry with source maps, the SDK code split into chunks', () => {
    // Act
    const dir = assetOf(worker.workerFunction);
    const chunks = readdirSync(join(dir, 'chunks'));
    const entry = readFileSync(join(dir, 'index.mjs'), 'utf8');
    const sizeOf = (files: string[], folder: string) =>
      files.filter((f) => f.endsWith('.mjs')).reduce((sum, f) => sum + statSync(join(folder, f)).size, 0);
    const entryBytes = statSync(join(dir, 'index.mjs')).size;
    const totalBytes = entryBytes + sizeOf(chunks, join(dir, 'chunks'));
    console.log(
      `worker bundle: index.mjs ${(entryBytes / 1024).toFixed(1)} KiB, with chunks ${(totalBytes / 1024).toFixed(1)} KiB`,
    );

    // Assess: the entry and its map at the root, the rest in chunks/, each with its map. The SQS client's
    // operations are not in the entry (loaded on the first backoff); postgres.js is.
    expect(readdirSync(dir).sort()).toEqual(['chunks', 'index.mjs', 'index.mjs.map']);
    expect(chunks.filter((f) => f.endsWith('.mjs')).length).toBeGreaterThan(3);
    expect(chunks.filter((f) => f.endsWith('.mjs.map')).length).toBe(chunks.length / 2);
    expect(entry).not.toContain('ChangeMessageVisibilityBatch');
    expect(entry).toContain('application_name');
    expect(
      chunks.some((f) =>
        readFileSync(join(dir, 'chunks', f), 'utf8').includes('ChangeMessageVisibilityBatch'),
      ),
    ).toBe(true);
    // The S3 client (GetObject for payloadRef) is a chunk of its own too: loaded on the first reference only.
    const s3Chunks = chunks.filter(
      (f) =>
        f.endsWith('.mjs') && readFileSync(join(dir, 'chunks', f), 'utf8').includes('x-amz-checksum-mode'),
    );
    expect(s3Chunks.length).toBeGreaterThan(0);
    expect(entry).not.toContain('x-amz-checksum-mode');
    expect(entry).not.toContain('bowser');
    // Neither the DynamoDB store nor Powertools Tracer and the X-Ray SDK are deployed with a PostgreSQL worker
    // without tracing: its entry imports no DynamoDB code, and its bundle has no tracing (lib/worker-bundle-profile.ts).
    const everyFile = [entry, ...chunks.map((f) => readFileSync(join(dir, 'chunks', f), 'utf8'))];
    expect(everyFile.some((text) => text.includes('DynamoDB_20120810'))).toBe(false);
    expect(everyFile.some((text) => text.includes('AWS_XRAY_DAEMON_ADDRESS'))).toBe(false);
    expect(totalBytes).toBeLessThan(10 * 1024 * 1024);
  });

  it('bundles postgres.js with the reviewed patch (patches/): its deferred write checks the socket first', () => {
    // Act: the deployed worker's entry, where postgres.js is
    const entry = readFileSync(join(assetOf(worker.workerFunction), 'index.mjs'), 'utf8');

    // Assess: esbuild read the patched driver from node_modules, not the released 3.4.9 source
    // (booleans: a failed match would print the whole minified bundle)
    expect(PATCHED_NEXT_WRITE.test(entry), 'nextWrite as patched').toBe(true);
    expect(UNPATCHED_NEXT_WRITE.test(entry), 'nextWrite as released').toBe(false);
  });

  it('bundles the worker of tracing: true with the tracer in chunks of its own, and no DynamoDB code', () => {
    // Act
    const dir = assetOf(tracedWorker.workerFunction);
    const entry = readFileSync(join(dir, 'index.mjs'), 'utf8');
    const chunks = readdirSync(join(dir, 'chunks'))
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(dir, 'chunks', f), 'utf8'));

    // Assess: a chunk holds the X-Ray SDK, the entry does not (loaded during init, with tracing on).
    expect(dir).not.toBe(assetOf(worker.workerFunction));
    expect(entry).not.toContain('AWS_XRAY_DAEMON_ADDRESS');
    expect(chunks.some((text) => text.includes('AWS_XRAY_DAEMON_ADDRESS'))).toBe(true);
    expect([entry, ...chunks].some((text) => text.includes('DynamoDB_20120810'))).toBe(false);
  });

  it('bundles the worker of store: "dynamodb" from its own entry: the DynamoDB client, no postgres.js, no tracer', () => {
    // Act
    const dir = assetOf(dynamoWorker.workerFunction);
    const sources = bundledSources(dir);
    const texts = [
      readFileSync(join(dir, 'index.mjs'), 'utf8'),
      ...readdirSync(join(dir, 'chunks'))
        .filter((f) => f.endsWith('.mjs'))
        .map((f) => readFileSync(join(dir, 'chunks', f), 'utf8')),
    ];

    // Assess: the DynamoDB entry's sources, none of the PostgreSQL store's or postgres.js's, no X-Ray SDK.
    expect(dir).not.toBe(assetOf(worker.workerFunction));
    expect(sources.some((source) => source.endsWith('lambda/handlers/worker-dynamodb.ts'))).toBe(true);
    expect(sources.some((source) => source.endsWith('lambda/handlers/worker.ts'))).toBe(false);
    // (The configuration parses DATABASE_URL for every worker: lambda/postgres/database-url.ts is the one exception.)
    expect(
      sources.filter((source) =>
        /lambda\/stores\/postgres\/|lambda\/postgres\/(?!database-url\.ts)|node_modules\/postgres\//.test(
          source,
        ),
      ),
    ).toEqual([]);
    expect(texts.some((text) => text.includes('DynamoDB_20120810'))).toBe(true);
    expect(texts.some((text) => text.includes('AWS_XRAY_DAEMON_ADDRESS'))).toBe(false);
  });

  it("bundles only the worker per setting: the relay of a traced stack is the same asset as an untraced stack's", () => {
    expect(assetOf(tracedWorker.outboxRelayFunction)).toBe(assetOf(worker.outboxRelayFunction));
    expect(assetOf(tracedWorker.workerFunction)).not.toBe(assetOf(worker.workerFunction));
  });

  // Per profile: the store's client, which every invocation uses, is loaded by the cold start (postgres.js; the
  // DynamoDB client and the SDK core it is built on); of the optional parts, exactly the profile's are deployed.
  it.each([
    { profile: DEFAULT_WORKER_BUNDLE_PROFILE, cold: ['postgres'], deployed: ['@aws-sdk/rds-signer'] },
    {
      profile: { ...DEFAULT_WORKER_BUNDLE_PROFILE, tracing: true },
      cold: ['postgres'],
      deployed: ['@aws-sdk/rds-signer', 'aws-xray-sdk-core', '@aws-lambda-powertools/tracer'],
    },
    {
      profile: { store: 'dynamodb', tracing: false } as const,
      cold: ['@aws-sdk/client-dynamodb', '@smithy/core'],
      deployed: ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'],
    },
  ])(
    'keeps what only some records need out of the static graph of the entry, bundled for $profile.store, tracing $profile.tracing',
    async ({ profile, cold: coldParts, deployed }) => {
      // Prepare: the store's worker entry bundled with the stack's options, its metafile kept (what each output holds
      // and imports).
      const outdir = mkdtempSync(join(tmpdir(), 'bundle-graph-'));
      const { metafile } = await build({
        ...bundleOptions(shippedWorkerEntry(profile.store), outdir, profile),
        metafile: true,
        write: false,
        absWorkingDir: outdir,
        logLevel: 'silent',
      });

      // Act: the outputs a cold start loads (the entry and what it imports statically, transitively), and the npm
      // packages of every input they hold.
      const closure = (from: string, outputs: Metafile['outputs']) => {
        const seen = new Set([from]);
        for (const path of seen) {
          for (const imported of outputs[path]?.imports ?? []) {
            if (imported.kind === 'import-statement' && !imported.external) seen.add(imported.path);
          }
        }
        return seen;
      };
      const packagesIn = (paths: Iterable<string>) =>
        new Set(
          [...paths].flatMap((path) =>
            Object.keys(metafile.outputs[path]?.inputs ?? {}).map((input) => {
              const parts = input
                .slice(input.lastIndexOf('node_modules/') + 'node_modules/'.length)
                .split('/');
              return input.includes('node_modules/')
                ? parts.slice(0, parts[0]?.startsWith('@') ? 2 : 1).join('/')
                : '(project)';
            }),
          ),
        );
      const cold = closure('index.mjs', metafile.outputs);
      const coldPackages = packagesIn(cold);
      const deployedPackages = packagesIn(
        Object.keys(metafile.outputs).filter((path) => path.endsWith('.mjs')),
      );

      // Assess: the store's client is in the cold graph, nothing else of these is loaded by a cold start; the SDK
      // clients every worker may need are deployed as chunks of their own (loaded by import()), and of the stores',
      // the signer's and the tracer's, exactly those of the profile.
      const optional = [
        '@aws-sdk/rds-signer',
        'aws-xray-sdk-core',
        '@aws-lambda-powertools/tracer',
        '@aws-sdk/client-dynamodb',
        '@aws-sdk/lib-dynamodb',
      ];
      for (const name of [
        'postgres',
        '@aws-sdk/client-s3',
        '@aws-sdk/client-sqs',
        '@smithy/core',
        ...optional,
      ]) {
        expect(coldPackages.has(name), name).toBe(coldParts.includes(name));
      }
      for (const name of ['@aws-sdk/client-s3', '@aws-sdk/client-sqs']) {
        expect(deployedPackages, name).toContain(name);
      }
      expect(deployedPackages.has('postgres')).toBe(profile.store === 'postgres');
      expect(optional.filter((name) => deployedPackages.has(name))).toEqual(deployed);
      // Nor are the credential providers a Lambda function never reaches deployed (lib/lambda-credential-stub.ts).
      expect(deployedPackages).not.toContain('@aws-sdk/nested-clients');
      expect(deployedPackages).not.toContain('@aws-sdk/credential-provider-ini');
      // The S3 chunk holds the commands the package sends, not the whole client: a dynamic import of
      // `@aws-sdk/client-s3` itself would bring every command (lambda/payloads/s3-sdk.ts).
      const inputs = Object.values(metafile.outputs).flatMap((output) => Object.keys(output.inputs));
      expect(inputs.some((input) => input.endsWith('client-s3/dist-es/commands/GetObjectCommand.js'))).toBe(
        true,
      );
      expect(inputs.some((input) => input.endsWith('client-s3/dist-es/commands/ListBucketsCommand.js'))).toBe(
        false,
      );
      expect(
        inputs.some((input) => input.endsWith('client-sqs/dist-es/commands/SendMessageCommand.js')),
      ).toBe(false);
    },
  );

  it("keeps postgres.js's PostgresError name through minification, which the SQLSTATE classification reads", () => {
    // Act: esbuild's keepNames wraps a renamed class as __name(Oe, "PostgresError"); without it the class calls
    // itself Oe and `error.name === 'PostgresError'` never holds in the deployed bundle.
    const entry = readFileSync(join(assetOf(worker.workerFunction), 'index.mjs'), 'utf8');

    // Assess
    expect(entry).toMatch(/[\w$]+\([\w$]+,\s*"PostgresError"\)/);
  });

  /**
   * A local queue holding two received messages — one due, one not due for an hour — and the Lambda event
   * that delivers them (received for 30 s).
   */
  async function dueAndLater() {
    const client = sqs.client();
    const name = `bundle-${randomUUID().slice(0, 8)}`;
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name }));
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const due = envelopeFactory();
    const later = envelopeFactory({
      attemptPolicy: { maxBusinessAttempts: 5, notBefore: new Date(Date.now() + 3_600_000).toISOString() },
    });
    for (const body of [due, later]) {
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(body) }));
    }
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 30 }),
    );
    expect(Messages).toHaveLength(2);
    const event: SQSEvent = {
      Records: Messages.map((message) => ({
        messageId: message.MessageId as string,
        receiptHandle: message.ReceiptHandle as string,
        body: message.Body as string,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(Date.now()),
          SenderId: 'test',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: message.MD5OfBody as string,
        eventSource: 'aws:sqs',
        eventSourceARN: Attributes?.QueueArn as string,
        awsRegion: 'us-east-1',
      })),
    };
    const laterId = Messages.find((m) => m.Body === JSON.stringify(later))?.MessageId as string;
    /** Milliseconds until the not-due message becomes visible again. */
    const laterVisibleInMs = () =>
      (sqs.inspectQueue(name)?.messages.inflight.find((entry) => entry.message.messageId === laterId)
        ?.visibilityDeadline ?? 0) - Date.now();
    return { event, due, laterId, laterVisibleInMs };
  }

  const workerEnv = (consumer: string) => ({
    DATABASE_URL: db.url,
    SQS_ENDPOINT: sqs.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    WORKER_CONSUMER: consumer,
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });

  it('runs bundled: completes a record in PostgreSQL and backs another off through the lazily loaded SQS chunk', async () => {
    // Prepare
    const { event, due, laterId, laterVisibleInMs } = await dueAndLater();

    // Act
    const { response } = await invokeBundle<SQSBatchResponse>(
      assetOf(worker.workerFunction),
      event,
      workerEnv('bundle-test'),
    );

    // Assess: the due record applied and acknowledged; the other reported, its visibility moved to about an
    // hour (it was received for 30 s), which only the SQS chunk can have done.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: laterId }] });
    const inbox = await db.sql`
      select idempotency_key, status from worker_inbox where consumer = 'bundle-test' order by idempotency_key`;
    expect(inbox).toEqual([{ idempotency_key: due.idempotencyKey, status: 'COMPLETED' }]);
    expect(laterVisibleInMs()).toBeGreaterThan(3_000_000);
  });

  /** A Lambda event of one first-delivery record whose body is `body`, from the queue named `queue`. */
  function oneRecordEvent(body: unknown, queue: string) {
    return {
      Records: [
        {
          messageId: randomUUID(),
          receiptHandle: 'rh',
          body: JSON.stringify(body),
          attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()) },
          messageAttributes: {},
          eventSource: 'aws:sqs',
          eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
          awsRegion: 'us-east-1',
        },
      ],
    };
  }

  /** A payload in fauxqs S3 (same endpoint as its SQS) and a one-record event whose message refers to it. */
  async function payloadRefEvent() {
    const s3 = s3ClientFor(sqs.endpoint);
    const bucket = `bundle-${randomUUID().slice(0, 8)}`;
    const { payload, ...rest } = envelopeFactory();
    const bytes = Buffer.from(JSON.stringify(payload));
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'payload.json', Body: bytes }));
    s3.destroy();
    const envelope = {
      ...rest,
      payloadRef: {
        bucket,
        key: 'payload.json',
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
      },
    };
    const consumer = `bundle-ref-${randomUUID().slice(0, 8)}`;
    const event = oneRecordEvent(envelope, 'bundle-ref');
    return { event, consumer, env: { ...workerEnv(consumer), S3_ENDPOINT: sqs.endpoint } };
  }

  it('runs bundled: reads a payloadRef through the lazily loaded S3 chunk and applies it', async () => {
    // Prepare
    const { event, consumer, env } = await payloadRefEvent();

    // Act
    const { response } = await invokeBundle<SQSBatchResponse>(assetOf(worker.workerFunction), event, env);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    const inbox = await db.sql`select status from worker_inbox where consumer = ${consumer}`;
    expect(inbox).toEqual([{ status: 'COMPLETED' }]);
  });

  /** A one-record event carrying an inline example message, and that message. */
  function inlineEvent() {
    const envelope = envelopeFactory();
    return { event: oneRecordEvent(envelope, 'bundle-inline'), envelope };
  }

  it('refuses WORKER_STORE=dynamodb at cold start in the PostgreSQL worker, naming the DynamoDB entry', async () => {
    // Prepare: the DynamoDB worker's environment (no database), given to the PostgreSQL worker's bundle.
    const { DATABASE_URL: _url, ...env } = workerEnv('bundle-wrong-store');
    const { event } = inlineEvent();

    // Act
    const run = invokeBundle(assetOf(worker.workerFunction), event, {
      ...env,
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: 'inbox',
    });

    // Assess: the module fails to load (Lambda reports an init error), with the ConfigError's fix.
    await expect(run).rejects.toThrow(
      /ConfigError: WORKER_STORE is "dynamodb", but createWorkerFromConfig builds a PostgreSQL worker.*createDynamoWorkerFromConfig from sqs-inbox-worker\/dynamodb.*store: "dynamodb"/,
    );
  });

  it('refuses a PostgreSQL environment at cold start in the DynamoDB worker, naming WORKER_STORE', async () => {
    // Prepare: the PostgreSQL worker's environment (WORKER_STORE unset), given to the DynamoDB worker's bundle.
    const { event } = inlineEvent();

    // Act
    const run = invokeBundle(assetOf(dynamoWorker.workerFunction), event, workerEnv('bundle-wrong-store'));

    // Assess: the module fails to load, with the ConfigError's fix.
    await expect(run).rejects.toThrow(
      /ConfigError: WORKER_STORE is not "dynamodb".*Set WORKER_STORE=dynamodb and DYNAMODB_TABLE/,
    );
  });

  it('processes records untraced, saying why, when tracing is switched on in a worker bundled without it', async () => {
    // Prepare
    const consumer = `bundle-untraced-${randomUUID().slice(0, 8)}`;
    const { event, envelope } = inlineEvent();

    // Act
    const { response, logs } = await invokeBundle<SQSBatchResponse>(assetOf(worker.workerFunction), event, {
      ...workerEnv(consumer),
      POWERTOOLS_TRACE_ENABLED: 'true',
    });

    // Assess: the record applied; one warning naming the setting that would bring the tracer.
    expect(response).toEqual({ batchItemFailures: [] });
    const inbox = await db.sql`select idempotency_key, status from worker_inbox where consumer = ${consumer}`;
    expect(inbox).toEqual([{ idempotency_key: envelope.idempotencyKey, status: 'COMPLETED' }]);
    const unavailable = logs.filter((line) => String(line.message).endsWith('_unavailable'));
    expect(unavailable.map((line) => [line.message, line.level])).toEqual([
      ['worker_tracer_unavailable', 'WARN'],
    ]);
    expect(JSON.stringify(unavailable[0]?.error)).toContain(
      'bundled without tracing, without Powertools Tracer and the X-Ray SDK. Deploy it with tracing: true',
    );
  });

  it('runs the worker bundled for tracing with tracing on: the tracer loads and the record is applied', async () => {
    // Prepare
    const consumer = `bundle-traced-${randomUUID().slice(0, 8)}`;
    const { event, envelope } = inlineEvent();

    // Act
    const { response, logs } = await invokeBundle<SQSBatchResponse>(
      assetOf(tracedWorker.workerFunction),
      event,
      {
        ...workerEnv(consumer),
        POWERTOOLS_TRACE_ENABLED: 'true',
      },
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    const inbox = await db.sql`select idempotency_key, status from worker_inbox where consumer = ${consumer}`;
    expect(inbox).toEqual([{ idempotency_key: envelope.idempotencyKey, status: 'COMPLETED' }]);
    expect(logs.filter((line) => String(line.message).endsWith('_unavailable'))).toEqual([]);
  });

  it('retries a payloadRef when the S3 chunk cannot load: PAYLOAD_READER_MISSING, the failure logged', async () => {
    // Prepare: a copy of the bundle without the S3 client's chunks.
    const dir = mkdtempSync(join(tmpdir(), 'bundle-no-s3-'));
    cpSync(assetOf(worker.workerFunction), dir, { recursive: true });
    const removed = readdirSync(join(dir, 'chunks')).filter(
      (file) =>
        file.endsWith('.mjs') &&
        readFileSync(join(dir, 'chunks', file), 'utf8').includes('x-amz-checksum-mode'),
    );
    expect(removed.length).toBeGreaterThan(0);
    for (const file of removed) rmSync(join(dir, 'chunks', file));
    const { event, consumer, env } = await payloadRefEvent();
    // An inline record beside it: a batch whose every record fails fails the invocation instead.
    const [byRef] = event.Records;
    if (!byRef) throw new Error('payloadRefEvent makes one record');
    const inline = envelopeFactory();
    event.Records.push({ ...byRef, messageId: randomUUID(), body: JSON.stringify(inline) });

    // Act
    const { response, logs } = await invokeBundle<SQSBatchResponse>(dir, event, env);

    // Assess: the record reported and recorded retryable, the chunk's failure logged once as a warning, the
    // inline record applied.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: byRef.messageId }] });
    const inbox = await db.sql`
      select idempotency_key, status, failure_code from worker_inbox where consumer = ${consumer}`;
    expect(inbox).toHaveLength(2);
    expect(inbox).toContainEqual({
      idempotency_key: JSON.parse(byRef.body).idempotencyKey,
      status: 'FAILED_RETRYABLE',
      failure_code: 'PAYLOAD_READER_MISSING',
    });
    expect(inbox).toContainEqual({
      idempotency_key: inline.idempotencyKey,
      status: 'COMPLETED',
      failure_code: null,
    });
    const unavailable = logs.filter((line) => String(line.message).endsWith('_unavailable'));
    expect(unavailable.map((line) => [line.message, line.level])).toEqual([
      ['worker_s3_client_unavailable', 'WARN'],
    ]);
    expect(String(unavailable[0]?.error)).toContain('Cannot find module');
  });

  // A deployment whose lazily loaded code is missing (a partial upload, a broken chunk): the batch must still
  // settle — nothing lost, the record that needed a backoff reported, the queue's own visibility timeout left to
  // bring it back — and the log must say what could not load.
  it.each([
    {
      missing: 'the backoff module',
      remove: (file: string) => file.startsWith('apply-backoff-'),
      logged: ['worker_backoff_unavailable'],
    },
    {
      missing: 'the SQS client code',
      remove: (_file: string, text: string) => text.includes('ChangeMessageVisibilityBatch'),
      logged: ['worker_backoff_unavailable', 'worker_sqs_client_unavailable'],
    },
  ])(
    'settles the batch without $missing: the record is reported, its visibility untouched, the failure logged',
    async ({ remove, logged }) => {
      // Prepare: a copy of the bundle without the chunks.
      const dir = mkdtempSync(join(tmpdir(), 'bundle-partial-'));
      cpSync(assetOf(worker.workerFunction), dir, { recursive: true });
      const removed = readdirSync(join(dir, 'chunks')).filter(
        (file) => file.endsWith('.mjs') && remove(file, readFileSync(join(dir, 'chunks', file), 'utf8')),
      );
      expect(removed.length).toBeGreaterThan(0);
      for (const file of removed) rmSync(join(dir, 'chunks', file));
      const { event, due, laterId, laterVisibleInMs } = await dueAndLater();
      const consumer = `bundle-partial-${randomUUID().slice(0, 8)}`;

      // Act
      const { response, logs } = await invokeBundle<SQSBatchResponse>(dir, event, workerEnv(consumer));

      // Assess
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: laterId }] });
      const inbox =
        await db.sql`select idempotency_key, status from worker_inbox where consumer = ${consumer}`;
      expect(inbox).toEqual([{ idempotency_key: due.idempotencyKey, status: 'COMPLETED' }]);
      const visibleInMs = laterVisibleInMs();
      expect(visibleInMs).toBeGreaterThan(0);
      expect(visibleInMs).toBeLessThanOrEqual(30_000);
      const unavailable = logs.filter((line) => String(line.message).endsWith('_unavailable'));
      expect(unavailable.map((line) => line.message).sort()).toEqual(logged);
      for (const line of unavailable) {
        expect(line.level).toBe('WARN');
        expect(String(line.error)).toContain('Cannot find module');
      }
    },
  );

  it('runs the bundled outbox relay: a pending outbox row reaches the queue', async () => {
    // Prepare
    const client = sqs.client();
    const { QueueUrl } = await client.send(
      new CreateQueueCommand({ QueueName: `relay-${randomUUID().slice(0, 8)}` }),
    );
    const envelope = envelopeFactory();
    await db.sql.begin((tx) => enqueueOutbox(tx, envelope as unknown as Envelope));

    // Act
    const { response: result } = await invokeBundle<{ published: number; failed: number }>(
      assetOf(worker.outboxRelayFunction as lambda.Function),
      {},
      {
        DATABASE_URL: db.url,
        OUTBOX_QUEUE_URL: QueueUrl as string,
        OUTBOX_RUN_GUARD_MS: '1000',
        SQS_ENDPOINT: sqs.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
      },
    );

    // Assess
    expect(result).toMatchObject({ published: 1, failed: 0 });
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages.map((message) => JSON.parse(message.Body as string).idempotencyKey)).toEqual([
      envelope.idempotencyKey,
    ]);
  });

  it('deploys no local-only code: neither the local IAM layer nor its AGPL-3.0 evaluator is in any function bundle', () => {
    // Prepare: every function of the three stacks (worker, relay, migration, health, retention, breaker, …)
    const functions = [worker, tracedWorker, dynamoWorker].flatMap((construct) =>
      construct.node
        .findAll()
        .filter((child) => child.node.id === 'Code' && 'assetPath' in child)
        .map((code) => join(assembly, (code as unknown as { assetPath: string }).assetPath)),
    );

    // Act
    const sources = functions.flatMap((dir) => bundledSources(dir));

    // Assess
    expect(functions.length).toBeGreaterThanOrEqual(8);
    expect(sources.some((source) => source.includes('lambda/worker/'))).toBe(true);
    expect(sources.filter((source) => LOCAL_ONLY_SOURCES.test(source))).toEqual([]);
  });

  it('copies the migrations next to the migration function code', () => {
    const migrationFunction = worker.migrationFunction;
    if (!migrationFunction) throw new Error('the PostgreSQL worker has a migration function');
    const dir = assetOf(migrationFunction);
    const migrations = readdirSync(join(dir, 'migrations')).sort();
    const source = readdirSync(join(import.meta.dirname, '../../migrations'))
      .filter((file) => file.endsWith('.sql'))
      .sort();

    expect(existsSync(join(dir, 'index.mjs'))).toBe(true);
    expect(migrations).toEqual(source);
    expect(migrations[0]).toBe('00001_worker-inbox.sql');
  });
});
