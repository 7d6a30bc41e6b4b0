import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { ListSubscriptionsByTopicCommand } from '@aws-sdk/client-sns';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { CANARY_MESSAGE_TYPE } from '../../lambda/canary/canary-message.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { RetryableError } from '../../lambda/errors.ts';
import { provisionRoles } from '../../lambda/postgres/provision-roles.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { defineHandler, type MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { checkAlarmTopic } from '../../tools/ops/check-alarm-topic.ts';
import { checkBreakerClosed } from '../../tools/ops/check-breaker-closed.ts';
import { checkProxyPinning } from '../../tools/ops/check-proxy-pinning.ts';
import { checkWorkerPrivileges } from '../../tools/ops/check-worker-privileges.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { FailedChecksError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { runOpsCommand } from '../../tools/ops/run-ops-command.ts';
import { sampleWorkerSessions } from '../../tools/ops/sample-worker-sessions.ts';
import { type SmokeDeps, type SmokeResult, smoke } from '../../tools/ops/smoke.ts';
import { smokeCommand } from '../../tools/ops/smoke-command.ts';
import { postgresCanaryStore } from '../../tools/ops/stores/postgres/postgres-canary-store.ts';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, startOpsSqs, type TestQueues } from './ops-fixture.ts';

// The smoke command against a real PostgreSQL (the worker and the ops CLI as their provisioned roles), fauxqs and
// the local event source mapping running the real worker; only SNS, Lambda and CloudWatch (control plane) are fakes.
const db = await createTestDatabase();
const { sqs, endpoint } = await startOpsSqs();
const suffix = randomBytes(4).toString('hex');
const roles = { worker: `t_smoke_worker_${suffix}`, ops: `t_smoke_ops_${suffix}` };
const PASSWORD = 'test-only-role-password';
const TOPIC = 'arn:aws:sns:us-east-1:000000000000:alarms';

let workerSql: postgres.Sql;
let opsSql: postgres.Sql;
beforeAll(async () => {
  await provisionRoles(db.sql, roles);
  for (const role of Object.values(roles)) await db.sql.unsafe(`alter role "${role}" password '${PASSWORD}'`);
  // The worker's sessions' state is hidden from another role without pg_read_all_stats (locally the ops CLI
  // connects as the superuser of DATABASE_URL, which sees them).
  await db.sql.unsafe(`grant pg_read_all_stats to "${roles.ops}"`);
  // As createSql names a deployed worker's sessions: its consumer is their application_name.
  workerSql = db.client({
    max: 2,
    username: roles.worker,
    password: PASSWORD,
    connection: { application_name: 'case-worker' },
  });
  opsSql = db.client({ max: 2, username: roles.ops, password: PASSWORD, prepare: false });
});
afterAll(async () => {
  await Promise.all([workerSql?.end({ timeout: 1 }), opsSql?.end({ timeout: 1 })]);
  for (const role of Object.values(roles)) {
    await db.sql.unsafe(`drop owned by "${role}"`).catch(() => {});
    await db.sql.unsafe(`drop role if exists "${role}"`);
  }
});

/** The worker, as deployed, with a backoff of at most 1 s so the never-recovering canary reaches the DLQ quickly. */
async function startWorker(queues: TestQueues, handlers: readonly MessageHandler[] = exampleHandlers) {
  const handler = createWorker({
    consumer: 'case-worker',
    handlers,
    sql: workerSql,
    sqs,
    backoff: { baseSeconds: 1, maxSeconds: 1 },
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  });
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl: queues.queueUrl,
    handler,
    batchSize: 10,
    maxConcurrency: 2,
    waitTimeSeconds: 1,
    functionTimeoutMs: 10_000,
  });
  return esm;
}

/** SNS's ListSubscriptionsByTopic, answering with these subscription ARNs (the one control-plane fake here). */
const snsWith = (...arns: string[]) => ({
  send: async (_command: ListSubscriptionsByTopicCommand) => ({
    Subscriptions: arns.map((arn) => ({ SubscriptionArn: arn, Protocol: 'email', TopicArn: TOPIC })),
  }),
});
const CONFIRMED = `${TOPIC}:5d7c3a1e-0000-4000-8000-000000000001`;

function deps(
  esm: EventSourceMapping | undefined,
  json = false,
): SmokeDeps & { out: ReturnType<typeof createMemoryOutput> } {
  return {
    sqs,
    out: createMemoryOutput({ json }),
    clock: systemClock,
    store: postgresCanaryStore(opsSql, 'case-worker'),
    sql: opsSql,
    alarmTopic: { kind: 'aws', topicArn: TOPIC, sns: snsWith(CONFIRMED) as never },
    breaker: esm
      ? {
          kind: 'mapping',
          mappingUuid: localLambdaControl(esm).uuid,
          lambda: localLambdaControl(esm).client,
        }
      : { kind: 'skip', reason: 'no mapping in this test' },
  };
}

const options = (queues: TestQueues, overrides: Partial<Parameters<typeof smoke>[1]> = {}) => ({
  stage: 'dev',
  consumer: 'case-worker',
  queueUrl: queues.queueUrl,
  dlqUrl: queues.dlqUrl,
  local: true,
  timeoutMs: 60_000,
  skipDlq: false,
  workerDbUser: roles.worker,
  pollMs: 100,
  ...overrides,
});

const verdicts = (result: Pick<SmokeResult, 'checks'>) =>
  Object.fromEntries(result.checks.map((check) => [check.check, check.result]));

describe('Function: smoke() — PostgreSQL', () => {
  it('passes every check against a worker consuming the queue, and removes its canary state', async () => {
    // Prepare
    const queues = await createQueues(sqs, { maxReceiveCount: 3 });
    const esm = await startWorker(queues);
    const before = await db.sql`select count(*)::int as n from ledger_entries`;
    const d = deps(esm);

    // Act
    const result = await smoke(d, options(queues)).finally(() => esm.stop());

    // Assess: every row PASS, and the table says so.
    expect(result.checks.filter((check) => check.result !== 'PASS')).toEqual([]);
    expect(result.passed).toBe(true);
    expect(d.out.stdout()).toMatch(/CHECK +│ RESULT +│ DETAIL/);
    expect(d.out.stdout()).toContain(
      `Smoke run ${result.runId} on stage dev (postgres): 9 PASS, 0 FAIL, 0 SKIP`,
    );
    // What the checks read: the canaries' rows are gone, the poison's quarantine entry released, the DLQ empty.
    const inbox =
      await db.sql`select idempotency_key from worker_inbox where idempotency_key like ${`canary:${result.runId}:%`}`;
    expect(inbox).toEqual([]);
    const quarantine = await db.sql`
      select reason_code, released_at is not null as released from worker_quarantine
       where idempotency_key = ${`canary:${result.runId}:poison`}
    `;
    expect(quarantine).toEqual([{ reason_code: 'CANARY_POISON', released: true }]);
    const { depth } = await import('./ops-fixture.ts');
    expect(await depth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await db.sql`select count(*)::int as n from ledger_entries`).toEqual(before);
  });

  it('with skipDlq sends no never-recovering canary and says so', async () => {
    // Prepare
    const queues = await createQueues(sqs, { maxReceiveCount: 3 });
    const esm = await startWorker(queues);

    // Act
    const result = await smoke(deps(esm), options(queues, { skipDlq: true })).finally(() => esm.stop());

    // Assess
    expect(result.checks.find((check) => check.check === 'never-recovering canary reaches the DLQ')).toEqual({
      check: 'never-recovering canary reaches the DLQ',
      result: 'SKIP',
      detail: 'not sent (--skip-dlq)',
    });
    expect(result.passed).toBe(true);
    const rows =
      await db.sql`select 1 from worker_inbox where idempotency_key = ${`canary:${result.runId}:retry`}`;
    expect(rows).toEqual([]);
  });

  it('fails, naming the reason, when the worker answers the canary type with a handler of its own that never applies it', async () => {
    // Prepare: the user's own SqsInboxWorkerCanary handler replaces the toolkit's, and always fails.
    const queues = await createQueues(sqs, { maxReceiveCount: 3 });
    const own = defineHandler({
      messageType: CANARY_MESSAGE_TYPE,
      schemaVersion: 1,
      payload: z.object({}),
      async handle() {
        throw new RetryableError('NOT_TODAY', 'my own canary handler');
      },
    });
    const esm = await startWorker(queues, [...exampleHandlers, own as MessageHandler]);
    const d = deps(esm);

    // Act
    const outcome = await smoke(d, options(queues, { timeoutMs: 4000, skipDlq: true })).then(
      () => undefined,
      (error: unknown) => error,
    );
    await esm.stop();

    // Assess
    expect(outcome).toBeInstanceOf(FailedChecksError);
    const applied = d.out.stdout();
    expect(applied).toMatch(/canary applied once +│ FAIL +│ not applied within/);
    expect(applied).toContain('FAILED_RETRYABLE (NOT_TODAY)');
  });
});

describe('sqs-worker smoke (runOpsCommand, the CLI wiring) — PostgreSQL, local', () => {
  it('exits 1 with one JSON document whose failed checks name the reason when no worker consumes the queue', async () => {
    // Prepare: the settings as `npm start -- --keep` prints them; nobody consumes this queue.
    const queues = await createQueues(sqs, { maxReceiveCount: 3 });
    const opsUrl = new URL(db.url);
    opsUrl.username = roles.ops;
    opsUrl.password = PASSWORD;
    const env = {
      DATABASE_URL: opsUrl.toString(),
      SQS_ENDPOINT: endpoint,
      AWS_REGION: 'us-east-1',
      WORKER_QUEUE_URL: queues.queueUrl,
      WORKER_DLQ_URL: queues.dlqUrl,
    };
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let printed = '';
    let noted = '';
    stdout.on('data', (chunk) => {
      printed += String(chunk);
    });
    stderr.on('data', (chunk) => {
      noted += String(chunk);
    });

    // Act
    const code = await runOpsCommand(
      'smoke',
      { json: true },
      (session) =>
        smokeCommand(session, {
          stage: 'dev',
          timeoutSeconds: 3,
          skipDlq: true,
          workerDbUser: roles.worker,
          flags: { json: true },
          env,
        }),
      { env, stdout, stderr },
    );

    // Assess
    expect(code).toBe(1);
    const result = JSON.parse(printed) as SmokeResult;
    expect(verdicts(result)).toMatchObject({
      'canary applied once': 'FAIL',
      'its duplicate is a no-op': 'SKIP',
      'poison canary quarantined': 'FAIL',
      'never-recovering canary reaches the DLQ': 'SKIP',
      'alarm topic has a confirmed subscription': 'SKIP',
      'breaker is closed': 'SKIP',
      'worker role has no more than it needs': 'PASS',
    });
    expect(result.checks[0]?.detail).toMatch(
      /no inbox state for canary:s[0-9a-f]{8}:apply \(queue: 1 visible, 0 in flight\): is a worker consuming the queue\?/,
    );
    expect(result.checks.at(-1)?.detail).toContain('its message may still be in the source queue');
    expect(noted).toContain(
      'sqs-worker smoke: 2 check(s) failed: canary applied once, poison canary quarantined',
    );
  });
});

describe('The control-plane and database checks of smoke', () => {
  it('fails on an alarm topic whose only subscription is pending, and passes on a confirmed one', async () => {
    // Act
    const pending = await checkAlarmTopic({
      kind: 'aws',
      topicArn: TOPIC,
      sns: snsWith('PendingConfirmation') as never,
    });
    const confirmed = await checkAlarmTopic({
      kind: 'aws',
      topicArn: TOPIC,
      sns: snsWith(CONFIRMED, 'PendingConfirmation') as never,
    });

    // Assess
    expect(pending).toMatchObject({
      result: 'FAIL',
      detail: expect.stringContaining('1 pending confirmation'),
    });
    expect(confirmed).toEqual({
      check: 'alarm topic has a confirmed subscription',
      result: 'PASS',
      detail: '1 confirmed (email ×1), 1 pending',
    });
  });

  it('fails while the event source mapping is disabled, as sqs-worker breaker status reads it', async () => {
    // Prepare
    const queues = await createQueues(sqs);
    const esm = await startWorker(queues);
    const lambda = localLambdaControl(esm);
    const target = { kind: 'mapping' as const, mappingUuid: lambda.uuid, lambda: lambda.client };

    // Act
    const closed = await checkBreakerClosed(target);
    esm.setEnabled(false);
    const open = await checkBreakerClosed(target);
    await esm.stop();

    // Assess
    expect(closed.result).toBe('PASS');
    expect(open).toMatchObject({ result: 'FAIL', detail: expect.stringContaining('is Disabled') });
  });

  it("reads RDS Proxy's pinned sessions from CloudWatch over the run's window", async () => {
    // Prepare: CloudWatch's GetMetricStatistics (control plane), answering with these per-minute maxima.
    const calls: unknown[] = [];
    const cloudWatch = (...maxima: number[]) => ({
      send: async (command: { input: unknown }) => {
        calls.push(command.input);
        return {
          Datapoints: maxima.map((Maximum, i) => ({ Timestamp: new Date(Date.now() - i * 60_000), Maximum })),
        };
      },
    });
    const target = (reader: ReturnType<typeof cloudWatch>) => ({
      kind: 'aws' as const,
      proxyName: 'worker-proxy',
      cloudWatch: reader as never,
      since: new Date(),
      deadlineMs: Date.now(),
      clock: systemClock,
      pollMs: 10,
    });

    // Act
    const none = await checkProxyPinning(target(cloudWatch(0, 0)));
    const pinned = await checkProxyPinning(target(cloudWatch(0, 2)));
    const empty = await checkProxyPinning(target(cloudWatch()));

    // Assess
    expect(none.result).toBe('PASS');
    expect(pinned).toMatchObject({
      result: 'FAIL',
      detail: expect.stringContaining('up to 2 session(s) pinned'),
    });
    expect(empty).toMatchObject({
      result: 'SKIP',
      detail: expect.stringContaining('no DatabaseConnectionsCurrentlySessionPinned datapoint'),
    });
    expect(calls[0]).toMatchObject({
      Namespace: 'AWS/RDS',
      MetricName: 'DatabaseConnectionsCurrentlySessionPinned',
      Dimensions: [{ Name: 'ProxyName', Value: 'worker-proxy' }],
      Statistics: ['Maximum'],
    });
  });

  it('fails locally when a worker session holds a session-level advisory lock, which pins a proxy connection', async () => {
    // Prepare: a session named like the worker's takes a session-level advisory lock and stays idle with it.
    const pinning = db.client({ max: 1, connection: { application_name: 'case-worker' } });
    await pinning`select pg_advisory_lock(4242)`;

    // Act: one sample at least (the sampler takes its first at once).
    const seen = await sampleWorkerSessions(opsSql, 'case-worker', { pollMs: 20 }).stop();
    const verdict = await checkProxyPinning({ kind: 'local', sessions: seen });
    await pinning`select pg_advisory_unlock(4242)`;
    await pinning.end();

    // Assess
    expect(seen).toMatchObject({ hidden: 0, pinning: ['session-level advisory lock'] });
    expect(seen.sessions).toBeGreaterThanOrEqual(1);
    expect(verdict).toMatchObject({
      result: 'FAIL',
      detail: expect.stringContaining('session-level advisory lock'),
    });
  });

  it('fails when the worker role holds a privilege provisionRoles does not grant, naming it', async () => {
    // Prepare
    const target = { sql: opsSql, role: roles.worker, seenUsers: [], local: false };
    const exact = await checkWorkerPrivileges(target);

    // Act
    await db.sql`grant truncate on worker_inbox to ${db.sql(roles.worker)}`;
    await db.sql`grant update on outbox_events to ${db.sql(roles.worker)}`;
    const extra = await checkWorkerPrivileges(target).finally(() => provisionRoles(db.sql, roles));
    const missingRole = await checkWorkerPrivileges({ ...target, role: 'no_such_worker_role' });

    // Assess
    expect(exact).toMatchObject({ result: 'PASS' });
    expect(extra.result).toBe('FAIL');
    expect(extra.detail).toContain('TRUNCATE on worker_inbox');
    expect(extra.detail).toContain('UPDATE on outbox_events');
    expect(missingRole).toMatchObject({
      result: 'FAIL',
      detail: expect.stringContaining('role no_such_worker_role does not exist'),
    });
    expect(
      await checkWorkerPrivileges({ ...target, role: 'no_such_worker_role', local: true }),
    ).toMatchObject({ result: 'SKIP' });
  });
});
