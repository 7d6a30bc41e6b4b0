import { join } from 'node:path';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/postgres/provision-roles.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { type LocalSqs, startLocalSqs } from '../local/local-sqs.ts';
import { type RoundTripProxy, startRoundTripProxy } from './round-trip-proxy.ts';
import { roundTripTime } from './round-trip-time.ts';
import { type SqsDelayProxy, startSqsDelayProxy } from './sqs-delay-proxy.ts';

/**
 * What the queue lines (the poller against its peer, the scale curve) run on: the bench's PostgreSQL and the
 * in-process SQS emulator, each behind a proxy that delays every chunk `delayMs` per direction and counts what
 * passes (database round trips and statements; SQS calls by action).
 */
export interface QueueRig {
  /** Straight to the database (setup, the pg_stat_activity sampler): never counted, never delayed. */
  readonly admin: postgres.Sql;
  /** The database through its delaying proxy, as the measured consumers reach it. */
  readonly dbUrl: string;
  readonly dbProxy: RoundTripProxy;
  /** The emulator; `sqs.client()` reaches it straight (queue setup, sending). */
  readonly sqs: LocalSqs;
  /** The emulator through its delaying proxy, as the measured consumers reach it. */
  readonly sqsProxy: SqsDelayProxy;
  readonly delayMs: number;
  /** A database round trip through the proxy, measured (median of 30 `select 1`). */
  readonly dbRoundTripMs: number;
  /** The server's version and durability settings, for the report's header. */
  readonly server: string;
  readonly log: (line: string) => void;
}

/**
 * Starts the rig (DATABASE_URL when set, migrated first; otherwise a throwaway embedded PostgreSQL), runs `body`
 * on it, and stops everything. The poller's Powertools metrics are switched off (EMF on stdout would drown the
 * report); its logger is the caller's.
 */
export async function withQueueRig<T>(delayMs: number, body: (rig: QueueRig) => Promise<T>): Promise<T> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'INFO';
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local: LocalPostgres | undefined = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
  const url = process.env.DATABASE_URL ?? (local as LocalPostgres).url;
  const admin = postgres(url, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 2,
    onnotice: () => {},
  });
  const target = new URL(url);
  const dbProxy = await startRoundTripProxy(
    { host: target.hostname, port: Number(target.port || 5432) },
    { delayMs },
  );
  const sqs = await startLocalSqs();
  const sqsProxy = await startSqsDelayProxy(sqs.endpoint, delayMs);
  try {
    await runMigrations(admin, { directory: join(PROJECT_ROOT, 'migrations') });
    const [who] = await admin<{ role: string; database: string; server: string }[]>`
      select current_user as role, current_database() as database,
             'PostgreSQL ' || current_setting('server_version') || ' (fsync ' || current_setting('fsync') ||
             ', synchronous_commit ' || current_setting('synchronous_commit') || ')' as server
    `;
    // The deployed worker role's timeouts (the engine sets none itself): the same here, for the bench's role.
    if (who) await setRoleTimeouts(admin, who.role, who.database, DEFAULT_ROLE_TIMEOUTS);
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(dbProxy.port);
    const dbUrl = proxied.href;
    const dbRoundTripMs = await roundTripTime(dbUrl);
    return await body({
      admin,
      dbUrl,
      dbProxy,
      sqs,
      sqsProxy,
      delayMs,
      dbRoundTripMs,
      server: `${who?.server ?? 'PostgreSQL'}${local ? ', embedded' : ', DATABASE_URL'}`,
      log,
    });
  } finally {
    await admin.end({ timeout: 5 });
    await sqsProxy.close();
    await sqs.stop();
    await dbProxy.close();
    await local?.stop();
  }
}
