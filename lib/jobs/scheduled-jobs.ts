import { join, resolve } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as triggers from 'aws-cdk-lib/triggers';
import { Construct } from 'constructs';
import { acknowledgeTracingWildcard } from '../acknowledge-tracing.ts';
import { bundledFunction, PROJECT_ROOT } from '../bundled-function.ts';
import type { ResolvedWorkerSettings } from '../resolve-worker-settings.ts';
import type { WorkerDatabase } from '../stores/postgres/worker-database.ts';
import type { WorkerSettings } from '../worker-settings.ts';
import { BREAKER_TIMEOUT, breakerEnvironment, scheduleBreaker } from './breaker-function.ts';

/** Time the relay keeps back from its timeout: no round starts later (run time = timeout − guard). */
const RELAY_RUN_GUARD = Duration.seconds(10);
/** The health job's run: seven bounded statements (5 s each at most) and a connect (5 s); far below a minute. */
const HEALTH_TIMEOUT = Duration.seconds(30);
/** Time the retention job keeps back from its timeout: no batch starts later (run time = timeout − guard). */
const RETENTION_RUN_GUARD = Duration.seconds(10);

/** Props of {@link ScheduledJobs}; the values are decided and checked by `SqsDatabaseWorker`. */
export interface ScheduledJobsProps {
  readonly props: WorkerSettings;
  readonly settings: ResolvedWorkerSettings;
  /** The PostgreSQL store the jobs work on (each connects through its proxy as a database user of its own). */
  readonly database: WorkerDatabase;
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  /** The proxy's address and the Powertools service variables, common to every job. */
  readonly environment: Readonly<Record<string, string>>;
  /** The source queue the relay publishes to. */
  readonly queue: sqs.IQueue;
  /** The worker's event source mapping (runtime `lambda`), which the breaker disables and enables. */
  readonly eventSource: SqsEventSource | undefined;
  /** The migrations' trigger: every job starts after the schema exists. */
  readonly migrationTrigger: triggers.Trigger | undefined;
}

/**
 * The worker's scheduled jobs on PostgreSQL, each a function on an EventBridge schedule, with a bounded run, no
 * retry of a late run (the next schedule runs a fresh one) and one run at a time: the outbox relay, the health
 * job, the retention job, and the circuit breaker of the event source mapping. Which of them exist is decided by
 * the settings (`outboxRelay`, `healthCheck`, `retention`, `breaker`).
 */
export class ScheduledJobs extends Construct {
  /** The scheduled outbox relay (when `outboxRelay` is not false). */
  readonly outboxRelayFunction: lambda.Function | undefined;
  /** The scheduled health job (when `healthCheck` is not false). */
  readonly healthFunction: lambda.Function | undefined;
  /** The schedule of the health job. */
  readonly healthSchedule: Duration;
  /** The scheduled retention job (when `retention` is not false). */
  readonly retentionFunction: lambda.Function | undefined;
  /** The circuit breaker of the event source mapping (when `breaker` is not false, runtime `lambda`). */
  readonly breakerFunction: lambda.Function | undefined;

  readonly #jobs: ScheduledJobsProps;

  constructor(scope: Construct, id: string, jobs: ScheduledJobsProps) {
    super(scope, id);
    this.#jobs = jobs;
    const { props, settings } = jobs;
    this.healthSchedule = props.healthCheckSchedule ?? Duration.minutes(1);
    this.outboxRelayFunction = (props.outboxRelay ?? true) ? this.createRelay() : undefined;
    this.healthFunction = (props.healthCheck ?? true) ? this.createHealthJob() : undefined;
    this.retentionFunction = settings.retention ? this.createRetentionJob() : undefined;
    this.breakerFunction =
      settings.breaker && jobs.eventSource ? this.createBreaker(jobs.eventSource) : undefined;
  }

  /** A job's function in the store's subnets, one run at a time (with `reserveConcurrency`). */
  private jobFunction(
    id: string,
    options: {
      readonly entry: string;
      readonly description: string;
      readonly timeout: Duration;
      readonly environment: Readonly<Record<string, string>>;
      readonly tracing?: boolean;
    },
  ): lambda.Function {
    const { vpc, subnets, settings } = this.#jobs;
    return bundledFunction(this, id, {
      entry: options.entry,
      description: options.description,
      vpc,
      vpcSubnets: subnets,
      timeout: options.timeout,
      reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
      ...(options.tracing ? { tracing: lambda.Tracing.ACTIVE } : {}),
      environment: { ...this.#jobs.environment, ...options.environment },
    });
  }

  /** Runs `fn` every `schedule`, never retried; the migrations run first. */
  private schedule(
    fn: lambda.Function,
    id: string,
    what: string,
    schedule: Duration,
    maxEventAge: Duration,
  ): void {
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge });
    new events.Rule(this, id, {
      description: `Runs the ${what}`,
      schedule: events.Schedule.rate(schedule),
      targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
    });
    this.#jobs.migrationTrigger?.executeBefore(fn);
  }

  /** The outbox relay: publishes pending outbox rows to the source queue for a bounded run every schedule. */
  private createRelay(): lambda.Function {
    const { props, settings, database, queue } = this.#jobs;
    const schedule = props.outboxRelaySchedule ?? Duration.minutes(1);
    const maxRun = props.outboxRelayMaxRun ?? Duration.seconds(50);
    const relay = this.jobFunction('OutboxRelayFunction', {
      entry: resolve(props.outboxRelayEntry ?? join(PROJECT_ROOT, 'lambda/handlers/outbox-relay.ts')),
      description: 'Publishes pending outbox rows to the source queue (scheduled, bounded run time)',
      timeout: maxRun.plus(RELAY_RUN_GUARD),
      // The relay's invocations in X-Ray; the messages carry their producers' traces, not the relay's.
      tracing: props.tracing,
      environment: {
        DB_USER: settings.dbUsers.relay,
        DB_POOL_SIZE: '1',
        OUTBOX_QUEUE_URL: queue.queueUrl,
        // The relay starts no round with less than this left: run time = timeout − guard = outboxRelayMaxRun.
        OUTBOX_RUN_GUARD_MS: String(RELAY_RUN_GUARD.toMilliseconds()),
      },
    });
    database.grantRelayConnect(relay);
    if (props.tracing) acknowledgeTracingWildcard(relay.role);
    queue.grantSendMessages(relay);
    // A run that could not start in time is dropped; the next schedule picks the rows up.
    this.schedule(relay, 'OutboxRelaySchedule', 'outbox relay', schedule, schedule);
    return relay;
  }

  /**
   * The health job: database health figures (quarantine, in-flight, outbox, locks, deadlocks) as metrics. One
   * check at a time: it keeps the deadlock counter of the previous run in its module scope.
   */
  private createHealthJob(): lambda.Function {
    const { props, settings, database } = this.#jobs;
    const health = this.jobFunction('HealthFunction', {
      entry: props.healthCheckEntry ?? join(PROJECT_ROOT, 'lambda/handlers/health.ts'),
      description:
        'Publishes database health figures (quarantine, in-flight, outbox, locks, deadlocks) as metrics (scheduled, read-only)',
      timeout: HEALTH_TIMEOUT,
      environment: {
        DB_USER: settings.dbUsers.health,
        DB_POOL_SIZE: '1',
        WORKER_CONSUMER: props.consumer ?? 'case-worker',
        HEALTH_STATEMENT_TIMEOUT_MS: '5000',
      },
    });
    database.grantHealthConnect(health);
    // A check that could not start in time is dropped; the next schedule runs a fresh one.
    this.schedule(health, 'HealthSchedule', 'health job', this.healthSchedule, this.healthSchedule);
    return health;
  }

  /** The retention job: purges settled rows in batches; two runs would only compete for the same rows. */
  private createRetentionJob(): lambda.Function {
    const { props, settings, database } = this.#jobs;
    const windows = settings.retention as NonNullable<ResolvedWorkerSettings['retention']>;
    const retention = this.jobFunction('RetentionFunction', {
      entry: join(PROJECT_ROOT, 'lambda/handlers/retention.ts'),
      description:
        'Purges settled inbox, outbox, effect-log and released quarantine rows in batches (scheduled, bounded run time)',
      timeout: windows.maxRun.plus(RETENTION_RUN_GUARD),
      environment: {
        DB_USER: settings.dbUsers.retention,
        DB_POOL_SIZE: '1',
        WORKER_CONSUMER: props.consumer ?? 'case-worker',
        // The guard: the function refuses an inbox window shorter than these, as the synth does.
        RETENTION_SOURCE_SECONDS: String(settings.retentionPeriod.toSeconds()),
        RETENTION_DLQ_SECONDS: String(settings.dlqRetentionPeriod.toSeconds()),
        RETENTION_INBOX_SECONDS: String(windows.inbox.toSeconds()),
        RETENTION_OUTBOX_SECONDS: String(windows.outbox.toSeconds()),
        RETENTION_EFFECT_LOG_SECONDS: String(windows.effectLog.toSeconds()),
        RETENTION_QUARANTINE_SECONDS: String(windows.quarantine.toSeconds()),
        RETENTION_RUN_GUARD_MS: String(RETENTION_RUN_GUARD.toMilliseconds()),
      },
    });
    database.grantRetentionConnect(retention);
    this.schedule(retention, 'RetentionSchedule', 'retention job', windows.schedule, Duration.minutes(5));
    return retention;
  }

  /**
   * The breaker: disables the worker's event source mapping while the database is unavailable and enables it
   * again. One environment carries its state from run to run; runs never overlap. Its probe goes the worker's
   * way: through the proxy, as the worker's database user (`select 1`).
   */
  private createBreaker(eventSource: SqsEventSource): lambda.Function {
    const { settings, database } = this.#jobs;
    const breakerFn = this.jobFunction('BreakerFunction', {
      entry: join(PROJECT_ROOT, 'lambda/handlers/breaker.ts'),
      description:
        'Disables the worker event source mapping while the database is unavailable and enables it again (scheduled)',
      timeout: BREAKER_TIMEOUT,
      environment: {
        DB_USER: settings.dbUsers.worker,
        DB_POOL_SIZE: '1',
        ...breakerEnvironment(settings, eventSource, this.#jobs.environment),
      },
    });
    database.grantWorkerConnect(breakerFn);
    scheduleBreaker(this, breakerFn, eventSource, settings);
    return breakerFn;
  }
}
