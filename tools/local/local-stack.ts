import { fileURLToPath } from 'node:url';
import type { SQSClient } from '@aws-sdk/client-sqs';
import postgres from 'postgres';
import { runMigrations } from '../../lambda/run-migrations.ts';
import { startLocalPostgres } from './local-postgres.ts';
import { createLocalQueues, type LocalQueues } from './local-queues.ts';
import { sqsClientFor, startLocalSqs } from './local-sqs.ts';

/** Options of {@link startLocalStack}. */
export interface LocalStackOptions {
  /** Use this PostgreSQL instead of starting an embedded one (it is migrated). */
  readonly databaseUrl?: string;
  /** Use this SQS endpoint instead of starting `fauxqs` in this process. */
  readonly sqsEndpoint?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** Source queue name (the DLQ is `<name>-dlq`). @default 'case-worker' */
  readonly queueName?: string;
  /** RedrivePolicy maxReceiveCount. @default 5 */
  readonly maxReceiveCount?: number;
  /** Visibility timeout of the source queue. @default 30 */
  readonly visibilityTimeoutSeconds?: number;
  /** Migrations folder. @default the project's `migrations/` */
  readonly migrationsDirectory?: string;
}

/** A running local stack: PostgreSQL (migrated), SQS, and a queue with its DLQ. */
export interface LocalStack {
  readonly databaseUrl: string;
  readonly sqsEndpoint: string;
  readonly region: string;
  /** True when PostgreSQL / SQS were started by this stack (not given). */
  readonly embedded: { readonly postgres: boolean; readonly sqs: boolean };
  readonly queues: LocalQueues;
  /** SQS client for the endpoint. */
  readonly sqs: SQSClient;
  /** Migrations applied by this start. */
  readonly migrationsApplied: number;
  /** Stops what this stack started (never a database or endpoint it was given). */
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * Starts what the worker needs on a laptop with nothing installed by hand: embedded PostgreSQL (or
 * `databaseUrl`), the `fauxqs` SQS emulator in this process (or `sqsEndpoint`), the migrations, and the queue
 * with its DLQ and RedrivePolicy.
 *
 * @example
 * ```ts
 * const stack = await startLocalStack({ maxReceiveCount: 5 });
 * // … stack.databaseUrl, stack.queues.queueUrl …
 * await stack.stop();
 * ```
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const region = options.region ?? 'us-east-1';
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
    const pg = options.databaseUrl ? undefined : await startLocalPostgres();
    if (pg) {
      stops.push(() =>
        // Never leave an orphaned server behind: kill by PID only when a clean stop failed (after one, the PID
        // may already belong to another process).
        pg.stop().catch(() => {
          try {
            process.kill(pg.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }),
      );
    }
    const databaseUrl = options.databaseUrl ?? (pg as { url: string }).url;
    const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    const { applied } = await runMigrations(admin, {
      directory: options.migrationsDirectory ?? MIGRATIONS,
    }).finally(() => admin.end());

    const local = options.sqsEndpoint ? undefined : await startLocalSqs({ region });
    if (local) stops.push(() => local.stop());
    const sqs = local ? local.client() : sqsClientFor(options.sqsEndpoint as string, region);
    if (!local) stops.push(async () => sqs.destroy());
    const queues = await createLocalQueues(sqs, {
      name: options.queueName ?? 'case-worker',
      maxReceiveCount: options.maxReceiveCount ?? 5,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
    });
    return {
      databaseUrl,
      sqsEndpoint: local?.endpoint ?? (options.sqsEndpoint as string),
      region,
      embedded: { postgres: !!pg, sqs: !!local },
      queues,
      sqs,
      migrationsApplied: applied.length,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
