import { type BigPayloadCase, payloadMemoryCaseOf } from './big-payload-case.ts';
import { killRecorder } from './demo-scenario-kills.ts';
import type { PostgresRun } from './demo-scenario-run.ts';
import { type ScenarioConsumer, startScenarioConsumer } from './scenario-consumer.ts';
import { scenarioVariables } from './scenario-variables.ts';

/**
 * What consumes a PostgreSQL demo run's queue, the payload-memory case when it runs, and the kills for memory or
 * time as AWS reports them.
 *
 * @internal
 */
export interface PostgresConsumer {
  readonly esm: ScenarioConsumer;
  readonly bigCase: BigPayloadCase | undefined;
  readonly kills: string[];
}

/**
 * Starts the run's consumer (the event source mapping or the poller) with the run's variables and its crashes
 * after commit; when it cannot start, releases the locked cases and closes the run's connections, then throws.
 *
 * @internal
 */
export async function startPostgresConsumer(run: PostgresRun): Promise<PostgresConsumer> {
  const { options, scenario } = run;
  const { bigCase, variables } = payloadMemoryCaseOf({
    runId: run.runId,
    payloadBytes: options.payloadBytes,
    memoryOverridden: options.memoryOverridden,
    s3: options.s3,
    bucket: run.documents?.bucket,
    worker: options.worker,
    poller: options.poller,
  });
  const kills: string[] = [];
  const esm = await startScenarioConsumer({
    runtime: run.runtime,
    worker: options.worker,
    poller: options.poller,
    variables: {
      ...scenarioVariables(run.consumer, run.workerUrl.toString(), run.runtime, run.concurrency),
      // The payload-memory case above the stack's limit: a limit `cdk synth` would refuse for this memory.
      ...variables,
    },
    sqs: run.clientsOf('worker').sqs,
    inspect: options.sqs,
    queueUrl: options.queues.queueUrl,
    concurrency: run.concurrency,
    recorder: run.recorder,
    ...(options.onLogLine ? { onLogLine: options.onLogLine } : {}),
    dropDelete: (message) => message.receiveCount === 1 && scenario.crashBodies.has(message.body),
    functionTimeoutMs: options.functionTimeoutMs,
    ...killRecorder(kills, bigCase),
  }).catch(async (error: unknown) => {
    await run.releaseLocked().catch(() => {});
    await run.releaseStuck().catch(() => {});
    await Promise.all([run.side.end({ timeout: 5 }), run.relaySql.end({ timeout: 5 })]);
    throw error;
  });
  return { esm, bigCase, kills };
}
