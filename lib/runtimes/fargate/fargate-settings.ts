import type { Duration } from 'aws-cdk-lib';

/**
 * Where the worker runs. `lambda`: a function behind an SQS event source mapping. `fargate`: the long-running
 * poller (`bin/poller.ts`) as an ECS Fargate service that scales on queue depth.
 */
export type WorkerRuntime = 'lambda' | 'fargate';

/**
 * The runtime choice of {@link SqsDatabaseWorker} and the settings of its Fargate runtime. Everything else of the
 * worker (queues, database, proxy, migrations, outbox relay, health and retention jobs, alarms, dashboard) is the
 * same for both runtimes; with `runtime: 'fargate'` the worker function, its event source mapping and the
 * mapping's breaker are replaced by the poller service (the poller pauses itself while the database is down).
 *
 * The props here apply to `runtime: 'fargate'` only (synth refuses them otherwise), as the Lambda-only props
 * (`timeout`, `memorySize`, `maxBatchingWindow`, `scalingMode`, `maxConcurrency`, `minimumPollers`,
 * `maximumPollers`, `reservedConcurrency`, `breaker*`) are refused with `runtime: 'fargate'`.
 * `batchSize` (`POLLER_BATCH_SIZE`, 1 to 10 there), `recordConcurrency` (`POLLER_CONCURRENCY`), `dbPoolSize`,
 * `visibilityTimeout`, `consumer`, `terminalPolicy`, `commitMode`, `workerEnvironment`, `workerEntry` (its
 * `handlers` run by the poller), `adaptiveConcurrency` and `concurrencyFloor` (`POLLER_ADAPTIVE_CONCURRENCY`,
 * `POLLER_CONCURRENCY_FLOOR`) apply to both.
 */
export interface FargateRuntimeSettings {
  /**
   * The worker's runtime. `fargate` deploys the poller as an ECS Fargate service (tasks always on: see the idle
   * cost in docs/deploy.md) instead of the worker function; its image is built from the project's `Dockerfile`
   * at deploy (synth stays offline and needs no Docker), or, with `workerEntry`, from the poller around your entry,
   * bundled at synth by the local esbuild.
   * @default 'lambda'
   */
  readonly runtime?: WorkerRuntime;
  /**
   * Long-polling wait of one receive (`POLLER_WAIT_SECONDS`), whole seconds from 0 to 20 (the SQS maximum).
   * @default Duration.seconds(20)
   */
  readonly pollerWaitTime?: Duration;
  /**
   * The lease of one receive (`POLLER_VISIBILITY_SECONDS`): the visibility timeout the poller asks for on each
   * receive. The heartbeat extends a record still running at half of it, so it must leave at least 5 s for that
   * call: 10 s to 43200 s (12 h), whole seconds. At most `visibilityTimeout` of the queue.
   * @default Duration.seconds(60)
   */
  readonly pollerVisibility?: Duration;
  /**
   * How long the poller drains on SIGTERM (`POLLER_STOP_TIMEOUT_SECONDS`): records in flight may finish, the
   * rest are handed back. Whole seconds from 1 s; at most half of `pollerVisibility` (a record always has half a
   * lease left, so it finishes before SQS can give it to another task) and at most 110 s (the container's ECS
   * `stopTimeout` is this + 10 s, and Fargate allows 120 s).
   * @default Duration.seconds(30)
   */
  readonly pollerStopTimeout?: Duration;
  /**
   * The most the heartbeat adds to a record's first lease in total (`POLLER_MAX_EXTENSION_SECONDS`): a record
   * still running after `pollerVisibility` + this becomes visible again. Whole seconds from 1 s;
   * `pollerVisibility` + this at most 43140 s (SQS keeps a message invisible for 12 h at most from its receive,
   * and the poller's heartbeat stops a minute short of it).
   * @default Duration.minutes(15)
   */
  readonly pollerMaxExtension?: Duration;
  /**
   * Tasks kept running at all times, 1 to `maxTasks`. Each is billed whether messages arrive or not.
   * @default 1
   */
  readonly minTasks?: number;
  /**
   * Most tasks the service scales out to on queue depth, 1 to 1000 and at most the safe worker concurrency of the
   * capacity formula (one task holds `dbPoolSize` connections, so tasks × `dbPoolSize` stays within the
   * connections the database has for the worker).
   * @default the safe worker concurrency (capacity formula), capped at 1000
   */
  readonly maxTasks?: number;
  /**
   * CPU units of one task: 256, 512, 1024, 2048, 4096, 8192 or 16384.
   * @default 512
   */
  readonly taskCpu?: number;
  /**
   * Memory of one task in MiB, a value Fargate allows with `taskCpu` (512: 1024 to 4096 in steps of 1024; see
   * docs/deploy.md for the others). It bounds `maxPayloadBytes` with `recordConcurrency` (docs/large-payloads.md).
   * @default 1024
   */
  readonly taskMemoryMiB?: number;
}
