import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createBreaker, runBreaker } from '../../lambda/breaker/run-breaker.ts';
import { balanceItemKey, exampleDynamoHandlers, ledgerItemKey } from '../../lambda/domain/dynamodb/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { probeDynamoStore } from '../../lambda/stores/dynamodb/probe-dynamo-store.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { serveLambdaControlPlane } from '../support/lambda-control-plane.ts';
import { paymentBody } from '../support/payment-body.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// The DynamoDB store's breaker (lambda/handlers/breaker-dynamodb.ts: the breaker over probeDynamoStore): DynamoDB
// Local cut by a TCP proxy in front of it, which the worker and the probe both go through; Lambda's control plane
// is the one fake (localLambdaControl over the local event source mapping).
const fixture = await localQueueFixture({ iam: false });
const dynamo = useTestDynamoDb();

describe('Circuit breaker of the DynamoDB store over the local event source mapping (DynamoDB cut by a TCP proxy)', () => {
  it('disables the mapping while DynamoDB does not answer, restores it half-open then fully, one effect per key', async () => {
    // Prepare
    const table = await dynamo.createTable('breaker');
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(dynamo.endpoint).port) });
    const client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${proxy.port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const store = createDynamoStore({ client, tableName: table });
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 2 });
    const worker = createWorker({
      consumer: 'case-worker',
      handlers: exampleDynamoHandlers,
      store,
      sqs: fixture.sqs,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      backoff: { baseSeconds: 2, maxSeconds: 2 },
    });
    const esm = await startEventSourceMapping({
      sqs: fixture.sqs,
      queueUrl,
      handler: worker,
      batchSize: 5,
      maxConcurrency: 4,
      waitTimeSeconds: 1,
      functionTimeoutMs: 10_000,
    });
    const lambda = localLambdaControl(esm);
    const probeTimeoutMs = 1000;
    const breaker = createBreaker({
      client: lambda.client,
      mappingUuid: lambda.uuid,
      probe: () => probeDynamoStore(store, 'case-worker', probeTimeoutMs),
      probeTimeoutMs,
      scaling: { mode: 'maximum-concurrency', maxConcurrency: 4 },
      halfOpenConcurrency: 2,
      settings: {
        failureThreshold: 2,
        minOpenMs: 1000,
        probeBackoffBaseMs: 500,
        probeBackoffMaxMs: 1000,
        halfOpenMs: 1000,
      },
      logger: new Logger({ serviceName: 'breaker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'breaker' }),
    });
    const stop = new AbortController();
    const running = runBreaker(breaker, {
      until: Date.now() + 120_000,
      intervalMs: 100,
      signal: stop.signal,
    });
    const ids = Array.from({ length: 20 }, (_, i) => `dyn-breaker-${i}`);

    try {
      // Act: DynamoDB cut, a backlog sent, then DynamoDB back.
      proxy.refuse(); // connections cut and closed at once, as an endpoint with nothing behind it
      await fixture.send(
        queueUrl,
        ids.map((id) => paymentBody(id, 'acct-dyn-breaker')),
      );
      await waitFor('the mapping to be disabled', () => !esm.enabled, 15_000, 20);
      const openWhileDown = breaker.state?.status;
      proxy.up();
      await waitFor('the mapping to be restored', () => breaker.state?.status === 'closed', 20_000, 20);
      await esm.drain({ timeoutMs: 30_000 });

      // Assess: disabled, half-open at 2, then 4; every payment applied once; nothing in the DLQ.
      const updates = lambda.calls
        .filter((c) => c.command === 'UpdateEventSourceMappingCommand')
        .map((c) => ({ ...c.input, UUID: undefined }));
      expect(openWhileDown).toBe('open');
      expect(updates).toEqual([
        { UUID: undefined, Enabled: false },
        { UUID: undefined, Enabled: true, ScalingConfig: { MaximumConcurrency: 2 } },
        { UUID: undefined, Enabled: true, ScalingConfig: { MaximumConcurrency: 4 } },
      ]);
      for (const id of ids) {
        const ledger = await dynamo.doc.send(
          new GetCommand({ TableName: table, Key: ledgerItemKey(id), ConsistentRead: true }),
        );
        expect(ledger.Item, id).toBeDefined();
      }
      const balance = await dynamo.doc.send(
        new GetCommand({
          TableName: table,
          Key: balanceItemKey('acct-dyn-breaker', 'EUR'),
          ConsistentRead: true,
        }),
      );
      expect(balance.Item).toMatchObject({ entries: ids.length });
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      stop.abort();
      await running.catch(() => undefined);
      await esm.stop();
      client.destroy();
      await proxy.close();
    }
  }, 120_000);

  it("runs as the deployed entry (breaker-dynamodb.ts): its own clients from BREAKER_* and DYNAMODB_*, the mapping's state kept between runs", async () => {
    // Prepare: the entry's LambdaClient is sent to the control plane's HTTP front (AWS_ENDPOINT_URL_LAMBDA), its
    // DynamoDB client through the proxy.
    const table = await dynamo.createTable('breaker-entry');
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(dynamo.endpoint).port) });
    const { queueUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 2 });
    const esm = await startEventSourceMapping({
      sqs: fixture.sqs,
      queueUrl,
      handler: async () => ({ batchItemFailures: [] }),
      batchSize: 5,
      maxConcurrency: 4,
      waitTimeSeconds: 1,
      functionTimeoutMs: 10_000,
    });
    const lambda = localLambdaControl(esm);
    const controlPlane = await serveLambdaControlPlane(lambda);
    Object.assign(process.env, {
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: table,
      DYNAMODB_ENDPOINT: `http://127.0.0.1:${proxy.port}`,
      AWS_ENDPOINT_URL_LAMBDA: controlPlane.endpoint,
      BREAKER_MAPPING_UUID: lambda.uuid,
      BREAKER_MAX_CONCURRENCY: '4',
      BREAKER_HALF_OPEN_CONCURRENCY: '2',
      BREAKER_FAILURE_THRESHOLD: '2',
      BREAKER_CHECK_INTERVAL_MS: '200',
      BREAKER_PROBE_TIMEOUT_MS: '1000',
      BREAKER_MIN_OPEN_MS: '500',
      BREAKER_PROBE_BACKOFF_BASE_MS: '500',
      BREAKER_PROBE_BACKOFF_MAX_MS: '500',
      BREAKER_HALF_OPEN_MS: '500',
      BREAKER_RUN_GUARD_MS: '1000',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    });
    const { handler } = await import('../../lambda/handlers/breaker-dynamodb.ts');
    /** One scheduled run with `ms` of the function's time left past its run guard. */
    const invoke = (ms: number) => {
      const deadline = Date.now() + 1000 + ms;
      return handler({}, { getRemainingTimeInMillis: () => deadline - Date.now() } as Context);
    };

    try {
      // Act: a run while DynamoDB is cut, then runs once it is back, until the breaker closes (each run lasts 3 s).
      proxy.refuse();
      const down = await invoke(3000);
      const disabled = !esm.enabled;
      proxy.up();
      const runs = [];
      for (let run = 0; run < 5; run += 1) {
        runs.push(await invoke(3000));
        if (runs.at(-1)?.status === 'closed') break;
      }

      // Assess: open and disabled while cut; half-open at 2, then closed at 4 — the state carried across runs.
      expect(down).toEqual({ status: 'open', held: false });
      expect(disabled).toBe(true);
      expect(runs.at(-1)).toEqual({ status: 'closed', held: false });
      const updates = lambda.calls
        .filter((c) => c.command === 'UpdateEventSourceMappingCommand')
        .map((c) => ({ ...c.input, UUID: c.input.UUID === lambda.uuid ? 'the mapping' : c.input.UUID }));
      expect(updates).toEqual([
        { UUID: 'the mapping', Enabled: false },
        { UUID: 'the mapping', Enabled: true, ScalingConfig: { MaximumConcurrency: 2 } },
        { UUID: 'the mapping', Enabled: true, ScalingConfig: { MaximumConcurrency: 4 } },
      ]);
      expect([esm.enabled, esm.maxConcurrency]).toEqual([true, 4]);
    } finally {
      await esm.stop();
      await controlPlane.close();
      await proxy.close();
    }
  }, 120_000);
});
