import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SQSEvent } from 'aws-lambda';
import { build } from 'esbuild';
import type postgres from 'postgres';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { bundleOptions, PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { DEFAULT_WORKER_BUNDLE_PROFILE } from '../../lib/worker-bundle-profile.ts';
import { lambdaNodeFlags } from '../local/lambda-node-flags.ts';
import { s3ClientFor } from '../local/local-s3.ts';
import { startLocalSqs } from '../local/local-sqs.ts';
import { putLargeObject } from '../local/put-large-object.ts';
import { BENCH_MESSAGE_TYPES, type BenchPayloadShape, benchPayloadJson } from './bench-payload-shapes.ts';

const MIB = 1024 * 1024;
const BUCKET = 'bench-payload-memory';
const CONSUMER = 'bench-payload-memory';

/** One measured configuration: `atOnce` records of `sizeMiB` each, in one invocation. */
export interface PayloadMemoryRow {
  readonly shape: BenchPayloadShape;
  readonly sizeMiB: number;
  /** Records read and handled at once (`recordConcurrency`, each with its own object). */
  readonly atOnce: number;
  /** The function memory whose Lambda V8 flags the worker ran with, MB. */
  readonly memorySizeMb: number;
  /** Peak RSS of the worker process over the measured invocation, MiB. */
  readonly peakMiB: number;
  /** RSS after the warm-up invocation (the baseline of this process), MiB. */
  readonly baselineMiB: number;
  /** RSS after the cold start (module load and configuration), MiB. */
  readonly coldMiB: number;
  /** (peak − baseline) ÷ (atOnce × size): what one byte of JSON payload costs at the peak. */
  readonly factor: number;
  /** Records the worker completed (all of them, or the row is not valid). */
  readonly completed: number;
  /** Where the payload travelled: in the message (`inline`) or in S3 (`payloadRef`). */
  readonly carrier: PayloadCarrier;
  readonly commitMode: 'per-message' | 'per-batch';
  /** (peak − baseline) ÷ `atOnce`: what one record in flight costs at the peak, MiB. */
  readonly perRecordMiB: number;
}

/** How a case's payloads travel: in the message body, or as S3 objects the worker reads. */
export type PayloadCarrier = 'inline' | 'payloadRef';

/**
 * One configuration to run: `atOnce` payloads of `bytes` of `shape`, under the V8 flags of `memorySizeMb`. Per
 * message (the default) they run at once (`recordConcurrency` = `atOnce`); per batch, as one batch of `atOnce`
 * records (one transaction, its payloads read before it opens and kept until it commits).
 */
export interface PayloadMemoryCase {
  readonly shape: BenchPayloadShape;
  readonly bytes: number;
  readonly atOnce: number;
  readonly memorySizeMb: number;
  /** @default 'payloadRef' */
  readonly carrier?: PayloadCarrier;
  /** @default 'per-message' */
  readonly commitMode?: 'per-message' | 'per-batch';
}

/** Options of {@link startPayloadMemoryRig}. */
export interface PayloadMemoryRigOptions {
  /** A migrated database the worker writes its inbox rows to. */
  readonly admin: postgres.Sql;
  readonly url: string;
  /** Where each run is reported, one line. @default nowhere */
  readonly log?: (line: string) => void;
}

/** The rig: runs a case in a fresh worker process and returns its figures. */
export interface PayloadMemoryRig {
  run(c: PayloadMemoryCase): Promise<PayloadMemoryRow>;
  close(): Promise<void>;
}

/**
 * Starts what measures a real worker's peak memory per `payloadRef`: the worker (`payload-memory-child.ts`, bundled
 * as the stack bundles a worker, started with the V8 flags Lambda's Node.js runtime gives a function of the case's
 * memory) reads JSON objects from fauxqs S3 (served by this process, so the objects held there do not count),
 * validates them with a schema that keeps every value and handles them in its transaction; one fresh process per
 * case. Used by the bench (`payload-memory.ts`) and by the memory test.
 */
export async function startPayloadMemoryRig(options: PayloadMemoryRigOptions): Promise<PayloadMemoryRig> {
  const workdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-payload-memory-'));
  const local = await startLocalSqs();
  const s3 = s3ClientFor(local.endpoint);
  const close = async () => {
    s3.destroy();
    await local.stop();
    await rm(workdir, { recursive: true, force: true });
  };
  try {
    await build({
      ...bundleOptions(
        join(PROJECT_ROOT, 'tools/bench/payload-memory-child.ts'),
        workdir,
        DEFAULT_WORKER_BUNDLE_PROFILE,
      ),
      absWorkingDir: workdir,
      logLevel: 'silent',
    });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const warmup = await upload(s3, benchPayloadJson('records', 1024), 'warmup');
    const context = { ...options, workdir, s3, warmup, endpoint: local.endpoint };
    return { run: (c) => measure(c, context), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Uploads the case's objects, runs the worker on them in a fresh process, and deletes them. */
async function measure(
  c: PayloadMemoryCase,
  context: PayloadMemoryRigOptions & { workdir: string; s3: S3Client; warmup: PayloadRef; endpoint: string },
): Promise<PayloadMemoryRow> {
  const carrier = c.carrier ?? 'payloadRef';
  const commitMode = c.commitMode ?? 'per-message';
  const refs: PayloadRef[] = [];
  const carried: Carried[] = [];
  for (let n = 0; n < c.atOnce; n += 1) {
    const json = benchPayloadJson(c.shape, c.bytes, n);
    if (carrier === 'inline') carried.push({ payload: JSON.parse(json.toString('utf8')) as unknown });
    else {
      const payloadRef = await upload(context.s3, json, `${c.shape}-${n}`);
      refs.push(payloadRef);
      carried.push({ payloadRef });
    }
  }
  const keys = carried.map(() => `bench-payload:${randomUUID()}`);
  const concurrency = commitMode === 'per-batch' ? 1 : c.atOnce;
  try {
    const figures = await runChild(context.workdir, {
      warmup: eventOf('records', [[`bench-payload:${randomUUID()}`, { payloadRef: context.warmup }]]),
      measured: eventOf(
        c.shape,
        keys.map((key, n) => [key, carried[n] as Carried]),
      ),
      env: {
        DATABASE_URL: context.url,
        DB_POOL_SIZE: String(concurrency),
        WORKER_RECORD_CONCURRENCY: String(concurrency),
        WORKER_COMMIT_MODE: commitMode,
        WORKER_CONSUMER: CONSUMER,
        S3_ENDPOINT: context.endpoint,
        PAYLOAD_MAX_BYTES: String(Math.max(c.bytes, 1024)),
      },
      flags: lambdaNodeFlags(c.memorySizeMb),
    });
    const { admin } = context;
    const [{ completed } = { completed: 0 }] = await admin<{ completed: number }[]>`
      select count(*)::int as completed from worker_inbox
      where consumer = ${CONSUMER} and idempotency_key in ${admin(keys)} and status = 'COMPLETED'
    `;
    const sizeMiB = c.bytes / MIB;
    const row: PayloadMemoryRow = {
      shape: c.shape,
      sizeMiB,
      atOnce: c.atOnce,
      memorySizeMb: c.memorySizeMb,
      peakMiB: figures.peakMiB,
      baselineMiB: figures.baselineMiB,
      coldMiB: figures.coldMiB,
      factor: (figures.peakMiB - figures.baselineMiB) / (c.atOnce * sizeMiB),
      completed,
      carrier,
      commitMode,
      perRecordMiB: (figures.peakMiB - figures.baselineMiB) / c.atOnce,
    };
    context.log?.(
      `payload memory: ${c.atOnce} × ${sizeMiB.toFixed(1)} MiB ${c.shape} ${carrier} ${commitMode} (${c.memorySizeMb} MB flags): peak ${row.peakMiB.toFixed(0)} MiB, baseline ${row.baselineMiB.toFixed(0)} MiB, ${completed}/${c.atOnce} completed`,
    );
    return row;
  } finally {
    for (const ref of refs) await context.s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: ref.key }));
  }
}

/** Uploads `body` and returns its reference. */
async function upload(s3: S3Client, body: Buffer, name: string): Promise<PayloadRef> {
  const key = `payloads/${name}-${randomUUID()}`;
  await putLargeObject(s3, BUCKET, key, body);
  const sha256 = createHash('sha256').update(body).digest('hex');
  return { bucket: BUCKET, key, sha256, size: body.length };
}

/** A message's payload: in its body, or a reference to the S3 object. */
type Carried = { readonly payload: unknown } | { readonly payloadRef: PayloadRef };

/** An SQS event of messages of `shape`'s type, one per idempotency key and payload. */
function eventOf(shape: BenchPayloadShape, records: readonly (readonly [string, Carried])[]): SQSEvent {
  const sentAt = String(Date.now());
  return {
    Records: records.map(([idempotencyKey, carried]) => {
      const id = randomUUID();
      const body = JSON.stringify({
        messageId: `msg_${id}`,
        schemaVersion: 1,
        messageType: BENCH_MESSAGE_TYPES[shape],
        producer: 'bench',
        occurredAt: new Date().toISOString(),
        idempotencyKey,
        aggregateType: 'import',
        aggregateId: `import-${id}`,
        ...carried,
      });
      return sqsEventRecord(
        {
          MessageId: id,
          ReceiptHandle: `receipt-${id}`,
          Body: body,
          Attributes: { ApproximateReceiveCount: '1', SentTimestamp: sentAt },
        },
        { eventSourceArn: 'arn:aws:sqs:us-east-1:000000000000:bench-payload-memory', awsRegion: 'us-east-1' },
      );
    }),
  };
}

interface ChildFigures {
  readonly coldMiB: number;
  readonly baselineMiB: number;
  readonly peakMiB: number;
}

/** Runs the bundled child once on `spec`'s events and returns its figures; rejects when it fails. */
async function runChild(
  workdir: string,
  spec: { warmup: SQSEvent; measured: SQSEvent; env: Record<string, string>; flags: readonly string[] },
): Promise<ChildFigures> {
  const specFile = join(workdir, `spec-${randomUUID()}.json`);
  const resultFile = join(workdir, `result-${randomUUID()}.json`);
  await writeFile(specFile, JSON.stringify({ warmup: spec.warmup, measured: spec.measured }));
  const stderr = await new Promise<string>((resolve, reject) => {
    let output = '';
    const child = spawn(process.execPath, [...spec.flags, join(workdir, 'index.mjs'), specFile, resultFile], {
      env: {
        PATH: process.env.PATH ?? '',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_SERVICE_NAME: CONSUMER,
        ...spec.env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      code === 0
        ? resolve(output)
        : reject(
            new Error(`the payload-memory worker exited with ${signal ?? code}: ${output.slice(-2000)}`),
          ),
    );
  });
  try {
    return JSON.parse(await readFile(resultFile, 'utf8')) as ChildFigures;
  } catch (error) {
    throw new Error(`the payload-memory worker wrote no figures (${String(error)}): ${stderr.slice(-2000)}`);
  }
}
