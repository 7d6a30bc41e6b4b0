import postgres from 'postgres';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { enqueueOutbox } from '../../lambda/outbox/enqueue-outbox.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { BigPayloadCase, BigPayloadFigures } from './big-payload-case.ts';
import { type ContentionFigures, contentionPrefix, runContentionCase } from './contention-case.ts';
import type { PostgresConsumer } from './demo-scenario-postgres-consumer.ts';
import type { PostgresRun } from './demo-scenario-run.ts';
import { reportProgress, sendAll } from './demo-scenario-sqs.ts';
import { queueCounts } from './local-queues.ts';
import { type OutboxRelayLoopResult, runOutboxRelayLoop } from './outbox-relay-loop.ts';
import type { ConsumerFigures, ScenarioConsumer } from './scenario-consumer.ts';
import { waitFor } from './wait-for.ts';

/**
 * What driving a PostgreSQL demo run left: the problems met on the way, the payload-memory case's figures, the
 * consumer's, the relay loop (stopped, settling) and the keys of the events written to the outbox.
 *
 * @internal
 */
export interface DrivenScenario {
  readonly problems: readonly string[];
  readonly bigPayload: BigPayloadFigures | undefined;
  /** The adaptive limit's case (a locked hot case), when the rest got that far. */
  readonly contention: ContentionFigures | undefined;
  readonly consumed: ConsumerFigures | undefined;
  readonly relay: Promise<OutboxRelayLoopResult>;
  readonly outboxKeys: readonly string[];
}

/**
 * Drives a PostgreSQL demo run to its end: the relay loop and the producers' outbox transactions, phase 1, the
 * locked case's release after two failures, phase 2, the stuck case's release once it reached the DLQ, the drain,
 * then the payload-memory case alone, then the adaptive limit's contention case. Whatever happens, stops the progress, the relay and the consumer and releases
 * the locked cases.
 *
 * @internal
 */
export async function drivePostgresScenario(
  run: PostgresRun,
  consumer: PostgresConsumer,
): Promise<DrivenScenario> {
  const { options, scenario } = run;
  const { esm } = consumer;
  const stopProgress = reportProgress(
    options.sqs,
    options.queues.dlqUrl,
    run.total,
    esm.deleted,
    options.onProgress,
  );

  // The producer side runs too: the relay loop publishes what producer transactions wrote to the outbox.
  const stopRelay = new AbortController();
  const relay = runOutboxRelayLoop({
    sql: run.relaySql,
    sqs: run.clientsOf('relay').sqs,
    queueUrl: options.queues.queueUrl,
    signal: stopRelay.signal,
    idleMs: 100,
    relayId: `${run.runId}-relay`,
  });
  const outboxKeys = scenario.messages.filter((m) => m.viaOutbox).map((m) => m.key as string);

  const problems: string[] = [];
  let bigPayload: BigPayloadFigures | undefined;
  let contention: ContentionFigures | undefined;
  let consumed: ConsumerFigures | undefined;
  try {
    await sendScenario(run, esm, outboxKeys, problems);
    bigPayload = await runPayloadMemoryCase(run, consumer.bigCase);
    contention = await runContention(run, esm);
  } finally {
    stopProgress();
    stopRelay.abort();
    consumed = await esm.stop();
    await run.releaseLocked().catch(() => {});
    await run.releaseStuck().catch(() => {});
  }
  return { problems, bigPayload, contention, consumed, relay, outboxKeys };
}

/** The contention case, with a breaker's probe of its own (the worker's role, as deployed). */
async function runContention(run: PostgresRun, esm: ScenarioConsumer): Promise<ContentionFigures> {
  const probe = createDatabaseProbe(
    () =>
      postgres(run.workerUrl.toString(), {
        ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 5 }),
        max: 1,
        onnotice: () => {},
      }),
    5000,
  );
  try {
    return await runContentionCase({
      consumer: esm,
      side: run.side,
      sqs: run.options.sqs,
      queueUrl: run.options.queues.queueUrl,
      inboxConsumer: run.consumer,
      prefix: contentionPrefix(run.runId),
      probe,
      timeoutMs: Math.max(30_000, run.timeoutMs - (Date.now() - run.started)),
    });
  } finally {
    await probe.close();
  }
}

/** The scenario's traffic, its two watched cases and the drain; what goes wrong is pushed onto `problems`. */
async function sendScenario(
  run: PostgresRun,
  esm: ScenarioConsumer,
  outboxKeys: readonly string[],
  problems: string[],
): Promise<void> {
  const { options, scenario, recorder, timeoutMs } = run;
  const { sqs, queues } = options;
  await produceOutboxEvents(run);
  await sendAll(
    sqs,
    queues.queueUrl,
    scenario.messages.filter((m) => m.phase === 1 && !m.viaOutbox).map((m) => m.body),
  );
  const lockWatch = waitFor(
    () => recorder.countOf(scenario.lockedKey, 'RETRYABLE_FAILURE') >= 2,
    timeoutMs,
  ).then(async (ok) => {
    if (!ok) problems.push('the locked case never failed twice');
    await run.releaseLocked();
  });
  if (
    !(await waitFor(
      () => scenario.phase2After.every((key) => recorder.countOf(key, 'COMPLETED') > 0),
      timeoutMs,
    ))
  ) {
    problems.push('phase 1 messages did not complete in time');
  }
  await sendAll(
    sqs,
    queues.queueUrl,
    scenario.messages.filter((m) => m.phase === 2).map((m) => m.body),
  );
  const stuckWatch = waitFor(async () => (await queueCounts(sqs, queues.dlqUrl)).visible > 0, timeoutMs).then(
    async (ok) => {
      if (!ok) problems.push('the stuck message did not reach the DLQ in time');
      await run.releaseStuck();
    },
  );
  if (!(await outboxPublished(run, outboxKeys))) {
    problems.push('the outbox relay did not publish every event in time');
  }
  await esm
    .drain({ timeoutMs: Math.max(1000, timeoutMs - (Date.now() - run.started)) })
    .catch((error: Error) => {
      problems.push(error.message);
    });
  await Promise.all([lockWatch, stuckWatch]);
}

/** Producer transactions: each enqueues its event atomically with whatever state change it makes. */
async function produceOutboxEvents(run: PostgresRun): Promise<void> {
  const { options, documents, side } = run;
  for (const message of run.scenario.messages.filter((m) => m.viaOutbox)) {
    // A payload too large for a message goes to S3; the row carries its payloadRef.
    const offload = options.s3 && documents ? { s3: options.s3, bucket: documents.bucket } : undefined;
    await side.begin((tx) => enqueueOutbox(tx, JSON.parse(message.body) as Envelope, { offload }));
  }
}

/** Whether the relay published every outbox event within the run's timeout. */
function outboxPublished(run: PostgresRun, outboxKeys: readonly string[]): Promise<boolean> {
  const { side } = run;
  return waitFor(async () => {
    const [row] = await side<{ pending: number }[]>`
      select count(*)::int as pending from outbox_events
      where idempotency_key in ${side(outboxKeys)} and status = 'PENDING'
    `;
    return row?.pending === 0;
  }, run.timeoutMs);
}

/** Alone, once the rest drained: its batch holds only it, whatever becomes of it. */
async function runPayloadMemoryCase(
  run: PostgresRun,
  bigCase: BigPayloadCase | undefined,
): Promise<BigPayloadFigures | undefined> {
  const { side, consumer } = run;
  return bigCase?.run({
    sqs: run.options.sqs,
    queues: run.options.queues,
    timeoutMs: Math.max(30_000, run.timeoutMs - (Date.now() - run.started)),
    applied: async (idempotencyKey) => {
      const [row] = await side<{ status: string }[]>`
        select status from worker_inbox where consumer = ${consumer} and idempotency_key = ${idempotencyKey}
      `;
      return row?.status === 'COMPLETED';
    },
  });
}
