import { type BigPayloadCase, bigPayloadCase } from './big-payload-case.ts';
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
  const stackLimitBytes = Number(
    (options.worker?.environment ?? options.poller?.environment)?.PAYLOAD_MAX_BYTES ?? 0,
  );
  const bigCase = payloadMemoryCase(run, stackLimitBytes);
  const kills: string[] = [];
  const recordKill = killRecorder(kills);
  const esm = await startScenarioConsumer({
    runtime: run.runtime,
    worker: options.worker,
    poller: options.poller,
    variables: {
      ...scenarioVariables(run.consumer, run.workerUrl.toString(), run.runtime, run.concurrency),
      // The payload-memory case above the stack's limit: a limit `cdk synth` would refuse for this memory.
      ...(bigCase && options.payloadBytes && options.payloadBytes > stackLimitBytes
        ? { PAYLOAD_MAX_BYTES: String(options.payloadBytes) }
        : {}),
    },
    sqs: run.clientsOf('worker').sqs,
    inspect: options.sqs,
    queueUrl: options.queues.queueUrl,
    concurrency: run.concurrency,
    recorder: run.recorder,
    dropDelete: (message) => message.receiveCount === 1 && scenario.crashBodies.has(message.body),
    functionTimeoutMs: options.functionTimeoutMs,
    onInvocation: (report) => {
      bigCase?.onInvocation(report);
      recordKill.onInvocation(report);
    },
    onTaskExit: (exit) => {
      bigCase?.onTaskExit(exit);
      recordKill.onTaskExit(exit);
    },
  }).catch(async (error: unknown) => {
    await run.releaseLocked().catch(() => {});
    await run.releaseStuck().catch(() => {});
    await Promise.all([run.side.end({ timeout: 5 }), run.relaySql.end({ timeout: 5 })]);
    throw error;
  });
  return { esm, bigCase, kills };
}

/** The payload-memory case, with `--payload-mib`, S3 and the documents' bucket. */
function payloadMemoryCase(run: PostgresRun, stackLimitBytes: number): BigPayloadCase | undefined {
  const { options, documents } = run;
  const memoryMb = options.worker?.memorySizeMb ?? options.poller?.memoryMiB ?? 0;
  return options.payloadBytes && options.s3 && documents
    ? bigPayloadCase({
        runId: run.runId,
        bytes: options.payloadBytes,
        stackLimitBytes,
        memoryMb,
        memoryOverridden: options.memoryOverridden,
        s3: options.s3,
        bucket: documents.bucket,
      })
    : undefined;
}
