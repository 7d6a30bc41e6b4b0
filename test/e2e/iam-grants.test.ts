import { randomBytes } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { enqueueOutbox } from '../../lambda/outbox/enqueue-outbox.ts';
import { relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { type Poller, startPoller } from '../../lambda/runtimes/poller/start-poller.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import type { IamRefusal, RevokedAction } from '../../tools/local/iam/iam-authorizer.ts';
import { createIamAuthorizer } from '../../tools/local/iam/iam-authorizer.ts';
import { describeRefusal, type LocalIam, startLocalIam } from '../../tools/local/iam/local-iam.ts';
import { LOCAL_ACCESS_KEY_IDS, type RoleComponent } from '../../tools/local/iam/local-identities.ts';
import { stackPolicySource } from '../../tools/local/iam/stack-policies.ts';
import { createLocalQueues } from '../../tools/local/local-queues.ts';
import { s3ClientFor } from '../../tools/local/local-s3.ts';
import { startLocalSqs } from '../../tools/local/local-sqs.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import { sqsClientFor } from '../../tools/local/sqs-client-for.ts';
import { createTestDatabase } from '../support/database.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { waitFor } from '../support/wait-for.ts';
import { pollerProcesses } from './poller-process-fixture.ts';

// Proof that the local IAM layer catches a missing grant: for every SQS/S3 action the synthesized roles allow,
// the component's scenario runs once with that one action taken out of its role, and either fails with a
// message naming the role and the action, or (for the actions listed below as granted but never called) runs as
// with every grant. The stack is synthesized once for the file (and cached on disk between runs).
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const REGION = 'us-east-1';
const source = await stackPolicySource('postgres');
const db = await createTestDatabase();
const fauxqs = await startLocalSqs();
afterAll(() => fauxqs.stop());

/**
 * Granted by the stack but never called by the code: `grantSendMessages` grants the relay GetQueueAttributes and
 * GetQueueUrl. GetObjectVersion is called for a payloadRef with a `versionId`, which fauxqs (no object versions)
 * cannot serve: not exercised locally. (The worker's GetQueueUrl, which CDK's SqsEventSource grants, IS called:
 * the backoff resolves the queue URL of the record's eventSourceARN with it.)
 */
const NOT_CALLED: Readonly<Record<string, string>> = {
  'relay sqs:GetQueueAttributes': 'granted by grantSendMessages, never called',
  'relay sqs:GetQueueUrl': 'granted by grantSendMessages, never called',
  'worker s3:GetObjectVersion': 'versioned payloadRefs only: fauxqs has no object versions',
  'poller s3:GetObjectVersion': 'versioned payloadRefs only: fauxqs has no object versions',
};

/** Every (component, action) of the synthesized identity policies on the services the layer fronts. */
function grantedActions(): RevokedAction[] {
  const authorizer = createIamAuthorizer(source, { region: REGION });
  const components: RoleComponent[] = ['worker', 'poller', 'relay'];
  return components.flatMap((component) => {
    const principal = authorizer.principal(component);
    if (!principal) throw new Error(`no stage of the policy source has a ${component} role`);
    const actions = principal.policies.flatMap((policy) =>
      [policy.document.Statement]
        .flat()
        .filter((statement) => statement.Effect === 'Allow')
        .flatMap((statement) => [statement.Action].flat().map(String)),
    );
    return [...new Set(actions)]
      .filter((action) => /^(sqs|s3):/.test(action))
      .sort()
      .map((action) => ({ component, action }));
  });
}
const GRANTED = grantedActions();

/** What a scenario saw: whether it reached its goal, the component's own error output, and the refusals. */
interface ScenarioResult {
  readonly ok: boolean;
  readonly output: string[];
  readonly refusals: readonly IamRefusal[];
}

/** A logger that keeps every warn and error line (message and fields) as text. */
function capturingLogger(output: string[]) {
  const keep = (message: unknown, extra?: unknown) => {
    output.push(`${String(message)} ${extra === undefined ? '' : JSON.stringify(extra)}`);
  };
  return { debug: () => {}, info: () => {}, warn: keep, error: keep } as never;
}

/** The layer in front of fauxqs with `revoke` taken away, a fresh queue pair and bucket bound to it. */
async function deployment(revoke: readonly RevokedAction[]) {
  const iam = await startLocalIam({
    store: 'postgres',
    region: REGION,
    sqsUpstream: fauxqs.endpoint,
    revoke,
    source,
  });
  const endpoint = iam.sqsEndpoint as string;
  const admin = sqsClientFor(endpoint, REGION, 'admin');
  const adminS3 = s3ClientFor(endpoint, REGION, 'admin');
  const name = `g-${randomBytes(4).toString('hex')}`;
  const queues = await createLocalQueues(admin, { name, visibilityTimeoutSeconds: 2 });
  const bucket = `${name}-payloads`;
  await adminS3.send(new CreateBucketCommand({ Bucket: bucket }));
  iam.bind({ queueName: name, deadLetterQueueName: `${name}-dlq`, bucketName: bucket });
  const clients: (SQSClient | S3Client)[] = [admin, adminS3];
  const as = (component: RoleComponent) => {
    const made = {
      sqs: sqsClientFor(endpoint, REGION, component),
      s3: s3ClientFor(endpoint, REGION, component),
    };
    clients.push(made.sqs, made.s3);
    return made;
  };
  const close = async () => {
    for (const client of clients) client.destroy();
    await iam.stop();
  };
  return { iam, endpoint, admin, adminS3, queues, bucket, as, close };
}

/**
 * The messages of a consumer's scenario: one that completes, one that backs off, one read from S3, and one whose
 * object is not there (S3 says so, 404 `NoSuchKey`, only to a reader that may list the bucket: terminal
 * `PAYLOAD_NOT_FOUND`, quarantined; to any other reader 403, retried).
 */
async function consumerMessages(d: Awaited<ReturnType<typeof deployment>>) {
  const id = randomBytes(4).toString('hex');
  const document = Buffer.from('first line\nsecond line\n');
  const { createHash } = await import('node:crypto');
  await d.adminS3.send(new PutObjectCommand({ Bucket: d.bucket, Key: `${id}/notes.txt`, Body: document }));
  const payment = exampleEnvelope({
    messageType: 'PaymentCaptured',
    idempotencyKey: `${id}-payment`,
    aggregateType: 'Payment',
    aggregateId: `${id}-payment`,
    payload: { paymentId: `${id}-payment`, accountId: 'acct-1', amount: 5, currency: 'EUR' },
  });
  const { payload: _none, ...documentEnvelope } = exampleEnvelope({
    messageType: 'DocumentMetadataExtractionRequested',
    idempotencyKey: `${id}-doc:extract:v1`,
    aggregateType: 'document',
    aggregateId: `${id}-doc`,
    payload: {},
  });
  const referenced = {
    ...documentEnvelope,
    payloadRef: {
      bucket: d.bucket,
      key: `${id}/notes.txt`,
      sha256: createHash('sha256').update(document).digest('hex'),
      size: document.length,
    },
  };
  const { payload: _nothing, ...missingEnvelope } = exampleEnvelope({
    messageType: 'DocumentMetadataExtractionRequested',
    idempotencyKey: `${id}-gone:extract:v1`,
    aggregateType: 'document',
    aggregateId: `${id}-gone`,
    payload: {},
  });
  const missing = {
    ...missingEnvelope,
    payloadRef: { bucket: d.bucket, key: `${id}/never-uploaded.txt`, sha256: 'a'.repeat(64), size: 10 },
  };
  const retryable = exampleEnvelope({
    messageType: alwaysRetryable.messageType,
    idempotencyKey: `${id}-retry`,
    aggregateType: 'test',
    aggregateId: id,
    payload: {},
  });
  const keys = {
    payment: `${id}-payment`,
    document: `${id}-doc:extract:v1`,
    retryable: `${id}-retry`,
    missing: `${id}-gone:extract:v1`,
  };
  const { SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
  await d.admin.send(
    new SendMessageBatchCommand({
      QueueUrl: d.queues.queueUrl,
      Entries: [payment, referenced, retryable, missing].map((body, index) => ({
        Id: String(index),
        MessageBody: JSON.stringify(body),
      })),
    }),
  );
  return keys;
}

/**
 * Whether the consumer reached its goal: the payment and the document completed and deleted, the missing object's
 * message quarantined as PAYLOAD_NOT_FOUND (and deleted), a backoff applied.
 */
async function consumerDone(
  keys: { payment: string; document: string; retryable: string; missing: string },
  outcomes: OutcomeRecorder,
  deleted: () => number,
  output: readonly string[],
) {
  const rows = await db.sql<{ status: string }[]>`
    select status from worker_inbox where idempotency_key in (${keys.payment}, ${keys.document}) and status = 'COMPLETED'
  `;
  const [quarantined] = await db.sql<{ reason_code: string }[]>`
    select reason_code from worker_quarantine where idempotency_key = ${keys.missing}
  `;
  return (
    rows.length === 2 &&
    quarantined?.reason_code === 'PAYLOAD_NOT_FOUND' &&
    deleted() >= 3 &&
    outcomes.countOf(keys.retryable, 'RETRYABLE_FAILURE') >= 2 &&
    !output.some((line) => /visibility_change_failed/.test(line))
  );
}

/** Waits until the scenario reached its goal, or one refusal of the revoked action was seen and its effect logged. */
async function settle(
  d: Awaited<ReturnType<typeof deployment>>,
  revoked: RevokedAction | undefined,
  output: string[],
  done: () => Promise<boolean>,
): Promise<boolean> {
  let ok = false;
  await waitFor(
    revoked ? `a refusal of ${revoked.action} and its effect` : 'the scenario to reach its goal',
    async () => {
      if (revoked) {
        const refused = d.iam.refusals().some((r) => r.action === revoked.action);
        return (
          refused && output.some((line) => line.includes('AccessDenied') || line.includes(revoked.action))
        );
      }
      ok = await done();
      return ok || d.iam.refusals().length > 0;
    },
    30_000,
    100,
  ).catch(() => {});
  return ok && d.iam.refusals().length === 0;
}

/** The Lambda worker behind the local event source mapping, with the worker role's clients. */
async function workerScenario(
  revoke: readonly RevokedAction[],
  revoked?: RevokedAction,
): Promise<ScenarioResult> {
  const d = await deployment(revoke);
  const output: string[] = [];
  const worker = d.as('worker');
  const outcomes = new OutcomeRecorder();
  let stop = async () => {};
  let deleted = () => 0;
  try {
    const handler = createWorker({
      consumer: 'case-worker',
      handlers: [...exampleHandlers, alwaysRetryable],
      sql: db.client({ max: 2 }),
      sqs: worker.sqs,
      s3: worker.s3,
      logger: capturingLogger(output),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      recordConcurrency: 1,
      backoff: { baseSeconds: 1, maxSeconds: 1 },
      onOutcome: outcomes.onOutcome,
    });
    const esm = await startEventSourceMapping({
      sqs: worker.sqs,
      queueUrl: d.queues.queueUrl,
      handler,
      functionName: 'case-worker',
      maxConcurrency: 2,
      waitTimeSeconds: 1,
      functionTimeoutMs: 10_000,
      logger: capturingLogger(output),
    });
    stop = async () => {
      await esm.stop();
    };
    deleted = () => esm.stats.deleted;
    const keys = await consumerMessages(d);
    const ok = await settle(d, revoked, output, () => consumerDone(keys, outcomes, deleted, output));
    return { ok, output, refusals: d.iam.refusals() };
  } catch (error) {
    output.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    return { ok: false, output, refusals: d.iam.refusals() };
  } finally {
    await stop();
    await d.close();
  }
}

/** The long-running poller over the engine, with the poller role's clients. */
async function pollerScenario(
  revoke: readonly RevokedAction[],
  revoked?: RevokedAction,
): Promise<ScenarioResult> {
  const d = await deployment(revoke);
  const output: string[] = [];
  const clients = d.as('poller');
  const outcomes = new OutcomeRecorder();
  let poller: Poller | undefined;
  try {
    const sql = db.client({ max: 2 });
    const engine = createBatchEngine({
      consumer: 'case-worker',
      handlers: [...exampleHandlers, alwaysRetryable],
      sql,
      sqs: clients.sqs,
      s3: clients.s3,
      logger: capturingLogger(output),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onOutcome: outcomes.onOutcome,
      onRecordSettled: (outcome) => poller?.recordSettled(outcome),
      recordConcurrency: 2,
      backoff: { baseSeconds: 1, maxSeconds: 1 },
    });
    poller = await startPoller({
      sqs: clients.sqs,
      queueUrl: d.queues.queueUrl,
      processBatch: engine.processBatch,
      concurrency: 2,
      waitSeconds: 1,
      visibilitySeconds: 2,
      probe: () => sql`select 1`,
      logger: capturingLogger(output),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    });
    const running = poller;
    const keys = await consumerMessages(d);
    const ok = await settle(d, revoked, output, () =>
      consumerDone(keys, outcomes, () => running.stats.deleted, output),
    );
    return { ok, output, refusals: d.iam.refusals() };
  } catch (error) {
    output.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    return { ok: false, output, refusals: d.iam.refusals() };
  } finally {
    await poller?.stop({ timeoutMs: 5000 });
    await d.close();
  }
}

/** One relay run over one pending outbox row, with the relay role's client. */
async function relayScenario(revoke: readonly RevokedAction[]): Promise<ScenarioResult> {
  const d = await deployment(revoke);
  const output: string[] = [];
  try {
    const key = `relay-${randomBytes(4).toString('hex')}`;
    const envelope = exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: key,
      aggregateType: 'case',
      aggregateId: key,
      payload: { caseId: key, stage: 'REVIEW', version: 2 },
    }) as Envelope;
    await db.sql.begin((tx) => enqueueOutbox(tx, envelope));
    const result = await relayOutbox({
      sql: db.sql,
      sqs: d.as('relay').sqs,
      queueUrl: d.queues.queueUrl,
      deadline: Date.now() + 10_000,
      logger: capturingLogger(output),
      maxRounds: 1,
    });
    const [row] = await db.sql<{ status: string; last_error: string | null }[]>`
      select status, last_error from outbox_events where idempotency_key = ${key}
    `;
    if (row?.last_error) output.push(row.last_error);
    return { ok: result.published === 1 && row?.status === 'PUBLISHED', output, refusals: d.iam.refusals() };
  } finally {
    await d.close();
  }
}

/**
 * Each component's scenario with `revoke` taken from its role; `revoked` (one of them) is the refusal it waits for
 * (without it, it waits for its goal).
 */
const SCENARIOS: Readonly<
  Record<
    RoleComponent,
    (revoke: readonly RevokedAction[], revoked?: RevokedAction) => Promise<ScenarioResult>
  >
> = {
  worker: workerScenario,
  poller: pollerScenario,
  relay: relayScenario,
};

describe('Local IAM layer: the grants of the synthesized roles', () => {
  it('derives the actions to revoke from the synthesized policies, and lists each one the code never calls', () => {
    // Assess: what the stack grants (a new grant shows up here, and gets a case below)
    const granted = GRANTED.map(({ component, action }) => `${component} ${action}`);
    expect(granted).toEqual(
      expect.arrayContaining([
        'worker sqs:ReceiveMessage',
        'worker sqs:DeleteMessage',
        'worker sqs:ChangeMessageVisibility',
        'worker sqs:GetQueueAttributes',
        'worker s3:GetObject',
        'poller sqs:ReceiveMessage',
        'poller sqs:GetQueueAttributes',
        'relay sqs:SendMessage',
      ]),
    );
    for (const entry of Object.keys(NOT_CALLED)) expect(granted).toContain(entry);
  });

  it.each(['worker', 'poller', 'relay'] as const)(
    'with every grant, the %s scenario reaches its goal and nothing is refused',
    async (component) => {
      // Act
      const result = await SCENARIOS[component]([]);

      // Assess
      expect(result.refusals.map(describeRefusal)).toEqual([]);
      expect(result.ok).toBe(true);
    },
  );

  it.each(GRANTED.map((entry) => [`${entry.component} ${entry.action}`, entry] as const))(
    'without %s',
    async (name, revoked) => {
      // Act: a call the code never makes is not waited for; the scenario must reach its goal without it
      const result = await SCENARIOS[revoked.component]([revoked], NOT_CALLED[name] ? undefined : revoked);

      // Assess
      if (NOT_CALLED[name]) {
        expect(result.refusals.map(describeRefusal)).toEqual([]);
        expect(result.ok).toBe(true);
        return;
      }
      expect(result.ok).toBe(false);
      const refusal = result.refusals.find((r) => r.action === revoked.action);
      expect(refusal, `no refusal of ${revoked.action}`).toBeDefined();
      // The layer's line names the role (its construct path, where lib/ grants it) and the action…
      const line = describeRefusal(refusal as IamRefusal);
      expect(line).toContain(`${revoked.component} (role Worker/`);
      expect(line).toContain(`was refused ${revoked.action} on arn:aws:`);
      // …and the component's own error path ran on AWS's answer.
      expect(result.output.join('\n')).toMatch(
        /AccessDenied|PAYLOAD_ACCESS_DENIED|not authorized to perform/,
      );
      expect((refusal as IamRefusal).message).toContain((refusal as IamRefusal).roleName);
    },
  );
});

describe('Local IAM layer: the poller process (bin/poller.ts) with its role', () => {
  let iam: LocalIam | undefined;
  afterAll(() => iam?.stop());
  const start = pollerProcesses({ databaseUrl: db.url, sqsEndpoint: '' });

  it('exits 2 naming the role and sqs:GetQueueAttributes when its role may not read the queue attributes', async () => {
    // Prepare
    iam = await startLocalIam({
      store: 'postgres',
      region: REGION,
      sqsUpstream: fauxqs.endpoint,
      revoke: [{ component: 'poller', action: 'sqs:GetQueueAttributes' }],
      source,
    });
    const admin = sqsClientFor(iam.sqsEndpoint as string, REGION, 'admin');
    const name = `p-${randomBytes(4).toString('hex')}`;
    const queues = await createLocalQueues(admin, { name });
    iam.bind({ queueName: name, deadLetterQueueName: `${name}-dlq` });

    // Act
    const child = start(queues.queueUrl, {
      SQS_ENDPOINT: iam.sqsEndpoint as string,
      AWS_ACCESS_KEY_ID: LOCAL_ACCESS_KEY_IDS.poller,
    });
    const exited = await child.exited;

    // Assess
    expect(exited.code).toBe(2);
    expect(child.stderr()).toMatch(
      /^poller not started: Cannot read the attributes of queue .* \(AccessDenied: User: arn:aws:sts::000000000000:assumed-role\/SqsInboxWorker-fargate-WorkerPollerTaskRole[0-9A-F]+\/poller is not authorized to perform: sqs:GetQueueAttributes on resource: arn:aws:sqs:us-east-1:000000000000:p-[0-9a-f]+ because no identity-based policy allows the sqs:GetQueueAttributes action\)/m,
    );
    expect(iam.refusals().map(describeRefusal)).toEqual([
      expect.stringMatching(
        /^IAM: poller \(role Worker\/Poller\/TaskRole, stage fargate\) was refused sqs:GetQueueAttributes/,
      ),
    ]);
    admin.destroy();
  });
});
