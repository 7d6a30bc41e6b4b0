import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { FailedChecksError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { type SmokeResult, smoke } from '../../tools/ops/smoke.ts';
import { dynamoCanaryStore } from '../../tools/ops/stores/dynamodb/dynamo-canary-store.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { createQueues, depth, startOpsSqs } from './ops-fixture.ts';

// The smoke command on the DynamoDB store: DynamoDB Local, fauxqs and the real worker behind the local event source
// mapping; no control plane is called (the local stack's SKIPs).
const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();

async function setup() {
  const table = await dynamo.createTable('smoke');
  const queues = await createQueues(sqs, { maxReceiveCount: 3 });
  const handler = createWorker({
    consumer: 'case-worker',
    handlers: exampleDynamoHandlers,
    store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
    sqs,
    backoff: { baseSeconds: 1, maxSeconds: 1 },
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  });
  const start = () =>
    startEventSourceMapping({
      sqs,
      queueUrl: queues.queueUrl,
      handler,
      batchSize: 10,
      maxConcurrency: 2,
      waitTimeSeconds: 1,
      functionTimeoutMs: 10_000,
    });
  const deps = {
    sqs,
    out: createMemoryOutput(),
    clock: systemClock,
    store: dynamoCanaryStore({ doc: dynamo.doc, tableName: table }, 'case-worker'),
    alarmTopic: { kind: 'local' as const },
    breaker: { kind: 'skip' as const, reason: 'local stack' },
  };
  const options = {
    stage: 'dev-dynamodb',
    consumer: 'case-worker',
    queueUrl: queues.queueUrl,
    dlqUrl: queues.dlqUrl,
    local: true,
    timeoutMs: 60_000,
    skipDlq: false,
    workerDbUser: 'sqs_worker',
    pollMs: 100,
  };
  const items = async () => {
    const { Items = [] } = await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    return Items;
  };
  return { table, queues, start, deps, options, items };
}

describe('Function: smoke() — DynamoDB', () => {
  it('passes against a worker consuming the queue and deletes its inbox and quarantine items', async () => {
    // Prepare
    const { queues, start, deps, options, items } = await setup();
    const esm = await start();

    // Act
    const result: SmokeResult = await smoke(deps, options).finally(() => esm.stop());

    // Assess: the canary checks PASS; the PostgreSQL and control-plane ones SKIP with their reasons.
    expect(result.passed).toBe(true);
    expect(Object.fromEntries(result.checks.map((check) => [check.check, check.result]))).toEqual({
      'canary applied once': 'PASS',
      'its duplicate is a no-op': 'PASS',
      'poison canary quarantined': 'PASS',
      'never-recovering canary reaches the DLQ': 'PASS',
      'alarm topic has a confirmed subscription': 'SKIP',
      'breaker is closed': 'SKIP',
      'proxy sessions not pinned': 'SKIP',
      'worker role has no more than it needs': 'SKIP',
      'canary state removed': 'PASS',
    });
    expect(result.checks.find((check) => check.check === 'its duplicate is a no-op')?.detail).toContain(
      'the queue emptied after it',
    );
    expect(await items()).toEqual([]);
    expect(await depth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('fails with the reason when no worker consumes the queue, and leaves the canaries it could not settle', async () => {
    // Prepare
    const { deps, options, items } = await setup();

    // Act
    const outcome = await smoke(deps, { ...options, timeoutMs: 2000, skipDlq: true }).then(
      () => undefined,
      (error: unknown) => error,
    );

    // Assess
    expect(outcome).toBeInstanceOf(FailedChecksError);
    expect(deps.out.stdout()).toMatch(/canary applied once +│ FAIL +│ not applied within/);
    expect(deps.out.stdout()).toContain('is a worker consuming the queue?');
    expect(await items()).toEqual([]);
  });
});
