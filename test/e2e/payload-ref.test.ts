import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { pipeline, type Readable, Transform } from 'node:stream';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  DeleteObjectCommand,
  type GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import * as zod from 'zod/mini';
import { TerminalError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { s3ClientFor } from '../../tools/local/local-s3.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { jsonWithNestedArrays, NESTED } from '../support/nested-json.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase();
const local = await localQueueFixture();
/** The producers' uploads (outside the stack: the operator's key). */
const uploads = local.s3;
/** The worker function's S3 client (its role's key). */
const s3 = local.as('worker').s3;
const BUCKET = await local.bucket('payloads-test');

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Uploads `bytes` to fauxqs S3 and returns the reference a producer would send. */
async function upload(bytes: Buffer, key = `payloads/${randomUUID()}`): Promise<PayloadRef> {
  await uploads.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bytes }));
  return { bucket: BUCKET, key, sha256: sha256(bytes), size: bytes.length };
}

/** A PaymentCaptured envelope whose payload is in S3 at `ref`. */
function paymentByRef(ref: PayloadRef, key = `payment:${randomUUID()}:captured`) {
  const { payload: _inline, ...envelope } = envelopeFactory({ idempotencyKey: key });
  return { ...envelope, idempotencyKey: key, payloadRef: ref };
}

const paymentBytes = (paymentId: string) =>
  Buffer.from(JSON.stringify({ paymentId, accountId: 'ACC-REF', amount: '12.00', currency: 'EUR' }));

const inboxRow = async (key: string) =>
  (await db.sql`select status, failure_code from worker_inbox where idempotency_key = ${key}`)[0];
const quarantineCodes = async (key: string) =>
  (await db.sql`select reason_code from worker_quarantine where idempotency_key = ${key}`).map(
    (row) => row.reason_code as string,
  );
const ledgerCount = async (paymentId: string) =>
  Number((await db.sql`select count(*) from ledger_entries where source_event_id = ${paymentId}`)[0]?.count);

const MIB = 1024 * 1024;

/**
 * An S3 client over the fauxqs one that counts the GetObject requests it sends and the body bytes it hands the
 * worker (each body passes through a counting stream; when the worker destroys that, the real response is destroyed
 * with it, which closes its connection). `withoutContentLength`: the answer carries no ContentLength, as a response
 * sent without a Content-Length header would.
 */
function countingS3(options: { withoutContentLength?: boolean } = {}) {
  const seen = { requests: 0, delivered: 0, bodies: [] as Readable[] };
  const client = {
    async send(command: GetObjectCommand, sendOptions?: { abortSignal?: AbortSignal }) {
      seen.requests += 1;
      const response = await s3.send(command, sendOptions);
      const source = response.Body as Readable;
      seen.bodies.push(source);
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          seen.delivered += chunk.length;
          done(null, chunk);
        },
      });
      pipeline(source, counted, () => {});
      return {
        ...response,
        Body: counted,
        ...(options.withoutContentLength ? { ContentLength: undefined } : {}),
      };
    },
  } as unknown as Pick<S3Client, 'send'>;
  return { client, seen };
}

describe.each(['per-message', 'per-batch'] as const)(
  'Function: createWorker() with payloadRef, commitMode %s',
  (commitMode) => {
    const worker = exampleWorker(db.sql, { commitMode, s3 });

    it('reads, verifies and applies a referenced payload once despite duplicates', async () => {
      // Prepare
      const paymentId = `PAY-${randomUUID()}`;
      const envelope = paymentByRef(await upload(paymentBytes(paymentId)));
      const first = sqsRecordFactory(envelope);

      // Act
      const r1 = await worker(sqsEvent([first]), lambdaContext());
      const r2 = await worker(
        sqsEvent([sqsRecordFactory(envelope), sqsRecordFactory(envelope, { receiveCount: 2 })]),
        lambdaContext(),
      );

      // Assess
      expect(r1.batchItemFailures).toEqual([]);
      expect(r2.batchItemFailures).toEqual([]);
      expect(await ledgerCount(paymentId)).toBe(1);
      expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
    });

    it("keeps the values of a referenced payload out of a handler's failure message, as for an inline one", async () => {
      // Prepare: a handler whose error quotes the payload it was given (read from S3), and a worker with it.
      const marker = `MARKER-${randomUUID()}`;
      const consumer = `ref-redact-${randomUUID().slice(0, 8)}`;
      const quoting = defineHandler({
        messageType: 'NoteQuoted',
        schemaVersion: 1,
        payload: zod.object({ note: zod.string() }),
        async handle({ payload }) {
          throw new TerminalError('NOTE_REJECTED', `note ${payload.note} was rejected`);
        },
      });
      const quotingWorker = exampleWorker(db.sql, {
        commitMode,
        s3,
        consumer,
        handlers: [quoting],
        logger: new Logger({ serviceName: consumer, logLevel: 'DEBUG' }),
      });
      const key = `note:${randomUUID()}`;
      const envelope = {
        ...paymentByRef(await upload(Buffer.from(JSON.stringify({ note: marker }))), key),
        messageType: 'NoteQuoted',
      };

      // Act
      const logs = await captureOutput(() =>
        quotingWorker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
      );

      // Assess: terminal and quarantined, its message stored and logged with the value taken out.
      const [row] = await db.sql`
        select status, failure_code, failure_message from worker_inbox
        where consumer = ${consumer} and idempotency_key = ${key}`;
      expect(row).toEqual({
        status: 'FAILED_TERMINAL',
        failure_code: 'NOTE_REJECTED',
        failure_message: 'note <value> was rejected',
      });
      const [quarantined] = await db.sql`
        select reason_message from worker_quarantine where consumer = ${consumer} and idempotency_key = ${key}`;
      expect(quarantined?.reason_message).toBe('note <value> was rejected');
      expect(logs.raw).toContain('note <value> was rejected');
      expect(logs.raw).not.toContain(marker);
    });

    it('acknowledges a duplicate of a completed message without reading S3 again, even once the object is gone', async () => {
      // Prepare
      const paymentId = `PAY-${randomUUID()}`;
      const envelope = paymentByRef(await upload(paymentBytes(paymentId)));
      await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());
      await uploads.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: envelope.payloadRef.key }));

      // Act
      const response = await worker(
        sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
        lambdaContext(),
      );

      // Assess: a DUPLICATE no-op, not a PAYLOAD_NOT_FOUND quarantine.
      expect(response.batchItemFailures).toEqual([]);
      expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
        status: 'COMPLETED',
        failure_code: null,
      });
      expect(await quarantineCodes(envelope.idempotencyKey)).toEqual([]);
      expect(await ledgerCount(paymentId)).toBe(1);
    });

    it('rejects the same idempotency key with another object as IDEMPOTENCY_HASH_MISMATCH', async () => {
      // Prepare
      const paymentId = `PAY-${randomUUID()}`;
      const key = `payment:${paymentId}:captured`;
      await worker(
        sqsEvent([sqsRecordFactory(paymentByRef(await upload(paymentBytes(paymentId)), key))]),
        lambdaContext(),
      );
      const other = paymentByRef(await upload(paymentBytes(`${paymentId}-other`)), key);

      // Act
      const response = await worker(sqsEvent([sqsRecordFactory(other)]), lambdaContext());

      // Assess: acknowledged and quarantined; the first effect stands alone.
      expect(response.batchItemFailures).toEqual([]);
      expect(await quarantineCodes(key)).toEqual(['IDEMPOTENCY_HASH_MISMATCH']);
      expect(await ledgerCount(`${paymentId}-other`)).toBe(0);
    });

    it.each([
      [
        'a missing object',
        'PAYLOAD_NOT_FOUND',
        async () => ({ ...(await upload(Buffer.from('{}'))), key: `missing/${randomUUID()}` }),
      ],
      [
        'a wrong checksum',
        'PAYLOAD_CHECKSUM_MISMATCH',
        async () => ({ ...(await upload(paymentBytes('PAY-X'))), sha256: '0'.repeat(64) }),
      ],
      [
        'a wrong size',
        'PAYLOAD_CHECKSUM_MISMATCH',
        async () => {
          const ref = await upload(paymentBytes('PAY-Y'));
          return { ...ref, size: ref.size - 1 };
        },
      ],
      ['an object above the limit', 'PAYLOAD_TOO_LARGE', () => upload(Buffer.alloc(4096, 'x'))],
      ['an object that is not JSON', 'INVALID_PAYLOAD', () => upload(Buffer.from('not json'))],
      [
        'a JSON object that fails the schema',
        'INVALID_PAYLOAD',
        () => upload(Buffer.from('{"paymentId":1}')),
      ],
      [
        // A valid payment besides its extra field (the schema strips it): refused for its depth alone.
        'a JSON object nested 400 levels (the bound is 64)',
        'PAYLOAD_TOO_DEEP',
        () =>
          upload(
            Buffer.from(
              jsonWithNestedArrays(
                {
                  paymentId: 'PAY-DEEP',
                  accountId: 'ACC-REF',
                  amount: '1.00',
                  currency: 'EUR',
                  extra: NESTED,
                },
                400,
              ),
            ),
          ),
      ],
    ])('quarantines %s as terminal %s', async (_name, code, makeRef) => {
      // Prepare
      const small = exampleWorker(db.sql, { commitMode, s3, maxPayloadBytes: 1024 });
      const envelope = paymentByRef(await makeRef());

      // Act
      const response = await small(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
        status: 'FAILED_TERMINAL',
        failure_code: code,
      });
      expect(await quarantineCodes(envelope.idempotencyKey)).toEqual([code]);
    });

    it.each([
      ['payloadRef.size above the limit', { withoutContentLength: false }, 4 * MIB],
      [
        'a payloadRef.size that lies, S3 ContentLength above the limit',
        { withoutContentLength: false },
        512 * 1024,
      ],
      [
        'a payloadRef.size that lies and no ContentLength (the stream cut at the limit)',
        { withoutContentLength: true },
        512 * 1024,
      ],
    ] as const)(
      'quarantines an object above the limit as terminal PAYLOAD_TOO_LARGE without reading it whole: %s',
      async (_name, answer, declaredSize) => {
        // Prepare: a 4 MiB object, a 1 MiB limit, and a reference that gives the object's size or a smaller one.
        const { client, seen } = countingS3(answer);
        const limited = exampleWorker(db.sql, { commitMode, s3: client, maxPayloadBytes: MIB });
        const ref = { ...(await upload(Buffer.alloc(4 * MIB, 'x'))), size: declaredSize };
        const envelope = paymentByRef(ref);

        // Act
        const response = await limited(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

        // Assess: terminal, quarantined and acknowledged; at most the limit (and what the streams buffer ahead)
        // reached the worker, and the response was destroyed: the rest of the object was never read.
        expect(response.batchItemFailures).toEqual([]);
        expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
          status: 'FAILED_TERMINAL',
          failure_code: 'PAYLOAD_TOO_LARGE',
        });
        expect(await quarantineCodes(envelope.idempotencyKey)).toEqual(['PAYLOAD_TOO_LARGE']);
        if (declaredSize > MIB) {
          expect(seen.requests).toBe(0); // refused on payloadRef.size, before any request
          return;
        }
        expect(seen.requests).toBe(1);
        expect(seen.delivered).toBeLessThanOrEqual(MIB + 256 * 1024);
        await waitFor('the S3 response to be destroyed', () => seen.bodies[0]?.destroyed === true, 5000);
        // Refused on S3's ContentLength before the body is read; without it, read up to the limit and cut there.
        if (answer.withoutContentLength) expect(seen.delivered).toBeGreaterThan(MIB - 256 * 1024);
        else expect(seen.delivered).toBeLessThan(256 * 1024);
      },
    );
  },
);

describe('Function: createWorker() reading payloadRef through a failing network', () => {
  it('retries a read whose connection is cut (PAYLOAD_READ_FAILED), then applies it once the network is back', async () => {
    // Prepare: the worker's S3 client goes through a proxy that cuts every connection.
    const target = new URL(local.endpoint);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const viaProxy = s3ClientFor(`http://127.0.0.1:${proxy.port}`, 'us-east-1', 'worker');
    const worker = exampleWorker(db.sql, { s3: viaProxy, failInvocationOnFullBatchFailure: false });
    const paymentId = `PAY-${randomUUID()}`;
    const envelope = paymentByRef(await upload(paymentBytes(paymentId)));
    proxy.down();

    try {
      // Act
      const cut = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());
      const row = await inboxRow(envelope.idempotencyKey);
      proxy.up();
      const again = await worker(
        sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
        lambdaContext(),
      );

      // Assess
      expect(cut.batchItemFailures).toHaveLength(1);
      expect(row).toMatchObject({ status: 'FAILED_RETRYABLE', failure_code: 'PAYLOAD_READ_FAILED' });
      expect(again.batchItemFailures).toEqual([]);
      expect(await ledgerCount(paymentId)).toBe(1);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  });

  it.each(['per-message', 'per-batch'] as const)(
    'holds no database connection while a read stalls, and gives up at the deadline (PAYLOAD_READ_TIMEOUT), commitMode %s',
    async (commitMode) => {
      // Prepare: a pool of its own, named so pg_stat_activity can find it; S3 stops answering.
      const target = new URL(local.endpoint);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
      const viaProxy = s3ClientFor(`http://127.0.0.1:${proxy.port}`, 'us-east-1', 'worker');
      const application = `stall-${randomUUID().slice(0, 8)}`;
      const sql = db.client({ max: 2, connection: { application_name: application } });
      const worker = exampleWorker(sql, {
        commitMode,
        s3: viaProxy,
        failInvocationOnFullBatchFailure: false,
        deadlineGuardMs: 0,
      });
      const envelope = paymentByRef(await upload(paymentBytes(`PAY-${randomUUID()}`)));
      proxy.stall();

      try {
        // Act: while the read hangs, look at the worker's sessions.
        const running = worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext(5000));
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const sessions = await db.sql`
        select state, xact_start from pg_stat_activity where application_name = ${application}
      `;
        const response = await running;

        // Assess: while S3 stalls, no session of the worker is in a transaction or running a statement (the
        // duplicate lookup before the read left at most an idle pooled connection); the record is retried.
        expect(sessions.length).toBeGreaterThan(0); // the query does see the worker's pool
        expect(sessions.filter((s) => s.state !== 'idle' || s.xact_start !== null)).toEqual([]);
        expect(response.batchItemFailures).toHaveLength(1);
        expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
          status: 'FAILED_RETRYABLE',
          failure_code: 'PAYLOAD_READ_TIMEOUT',
        });
      } finally {
        viaProxy.destroy();
        await proxy.close();
      }
    },
  );

  it.each([
    [403, 'AccessDenied', 'PAYLOAD_ACCESS_DENIED'],
    [503, 'SlowDown', 'PAYLOAD_S3_THROTTLED'],
    [500, 'InternalError', 'PAYLOAD_READ_FAILED'],
  ])('classifies HTTP %i %s from S3 as retryable %s', async (status, s3Code, failureCode) => {
    // Prepare: an HTTP endpoint answering every request as S3 does when it refuses.
    const server: Server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${s3Code}</Code><Message>refused</Message></Error>`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const refusing: S3Client = s3ClientFor(`http://127.0.0.1:${port}`);
    const worker = exampleWorker(db.sql, { s3: refusing, failInvocationOnFullBatchFailure: false });
    const envelope = paymentByRef(await upload(paymentBytes(`PAY-${randomUUID()}`)));

    try {
      // Act
      const response = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

      // Assess
      expect(response.batchItemFailures).toHaveLength(1);
      expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
        status: 'FAILED_RETRYABLE',
        failure_code: failureCode,
      });
    } finally {
      refusing.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('Function: createWorker() payload options', () => {
  it('refuses a maxPayloadBytes that is not a positive whole number, naming the value and the default', () => {
    expect(() => exampleWorker(db.sql, { maxPayloadBytes: 0 })).toThrow(
      'maxPayloadBytes must be a whole number of bytes above 0 (given 0); the default is 67108864 (64 MiB)',
    );
  });

  it('retries a reference that reaches a worker without an S3 client (PAYLOAD_READER_MISSING)', async () => {
    // Prepare
    const worker = exampleWorker(db.sql, { failInvocationOnFullBatchFailure: false });
    const envelope = paymentByRef(await upload(paymentBytes(`PAY-${randomUUID()}`)));

    // Act
    const response = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toHaveLength(1);
    expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failure_code: 'PAYLOAD_READER_MISSING',
    });
  });
});

describe('Observability of payloadRef reads', () => {
  it('counts PayloadAccessDenied, names the object in the log, and never logs payload bytes', async () => {
    // Prepare: one readable payload holding a secret, and one read S3 refuses (403).
    const SECRET = `secret-${randomUUID().slice(0, 12)}`;
    const readable = paymentByRef(
      await upload(
        Buffer.from(
          JSON.stringify({
            paymentId: `PAY-${randomUUID()}`,
            accountId: SECRET,
            amount: '1.00',
            currency: 'EUR',
          }),
        ),
      ),
    );
    const server: Server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>denied</Message></Error>',
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const refusing = s3ClientFor(
      `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    );
    const denied = paymentByRef(await upload(paymentBytes(`PAY-${randomUUID()}`)));
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' });
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    const logger = new Logger({ serviceName: 'case-worker', logLevel: 'DEBUG' });
    const allowed = exampleWorker(db.sql, { s3, logger, metrics });
    const refused = exampleWorker(db.sql, {
      s3: refusing,
      logger,
      metrics,
      failInvocationOnFullBatchFailure: false,
    });

    try {
      // Act
      const { lines, raw } = await captureOutput(async () => {
        await allowed(sqsEvent([sqsRecordFactory(readable)]), lambdaContext());
        await refused(sqsEvent([sqsRecordFactory(denied)]), lambdaContext());
      });

      // Assess
      expect(raw).not.toContain(SECRET);
      expect(emfSum(lines, 'Completed')).toBe(1);
      expect(emfSum(lines, 'PayloadAccessDenied')).toBe(1);
      const line = lines.find((l) => l.message === 'worker_message_retryable_failure');
      expect(line).toMatchObject({ failureCode: 'PAYLOAD_ACCESS_DENIED' });
      expect(String(line?.failureMessage)).toContain(`s3://${BUCKET}/${denied.payloadRef.key}`);
      expect(String(line?.failureMessage)).toContain('grant the worker');
    } finally {
      refusing.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
