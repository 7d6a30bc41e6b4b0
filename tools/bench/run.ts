/**
 * `npm run bench [-- --messages 3000 --warmup 200 --concurrency 1,2,4]`: the raw baseline, the worker in
 * per-message mode and in per-batch mode at each concurrency (batch size 10), all against one database: timed on
 * direct connections, round trips and statements counted through a proxy; then the worker bundle's size and cold
 * load; then the retention purge's effect on worker_inbox's size and on the worker's throughput
 * (`retention-purge.ts`; `-- --only purge` runs that line alone). Prints figures and its targets beside them;
 * always exits 0 unless the bench itself fails.
 *
 * Database: DATABASE_URL when set (migrated first; the bench adds rows under consumer `bench-worker`),
 * otherwise a throwaway embedded PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/connect-options.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/provision-roles.ts';
import { runMigrations } from '../../lambda/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { benchConfig, type ConfigResult, medianRun, pairedRatio, since } from './bench-config.ts';
import type { BenchMode } from './bench-lanes.ts';
import { bundleWorker } from './bundle-worker.ts';
import { coldLoad } from './cold-load.ts';
import { startLaneThreads } from './lane-threads.ts';
import { renderBundle, renderTargets, renderThroughput } from './render-report.ts';
import { renderRetentionPurge } from './render-retention-purge.ts';
import { benchRetentionPurge } from './retention-purge.ts';
import { runRetentionPurgeAlone } from './retention-purge-alone.ts';
import { startRoundTripProxy } from './round-trip-proxy.ts';

const USAGE = `usage: npm run bench [-- options]
  --messages N            measured messages per configuration (default 2000, at least 10)
  --warmup N              warm-up messages before each configuration (default 200)
  --rounds N              interleaved rounds, mode order rotating, median shown (default 6, 1 to 9)
  --concurrency LIST      environments at once, comma-separated (default 1,2,4)
  --commit-latency-ms N   modelled commit latency of the second pass, 0 skips it (default 2)
  --purge-rows N          old inbox rows the retention purge line deletes (default 100000, 1000 to 10000000)
  --only purge            run the retention purge line alone
  --help                  this text`;

/** Prints what was wrong with the options and the usage, and exits 2 (nothing has started yet). */
function usageError(message: string): never {
  process.stderr.write(`bench: ${message}\n${USAGE}\n`);
  process.exit(2);
}

let values: Record<string, string | boolean | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      messages: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '6' },
      warmup: { type: 'string', default: '200' },
      concurrency: { type: 'string', default: '1,2,4' },
      'commit-latency-ms': { type: 'string', default: '2' },
      'purge-rows': { type: 'string', default: '100000' },
      only: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  usageError((error as Error).message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const messages = Number(values.messages);
const warmupMessages = Number(values.warmup);
const concurrencies = String(values.concurrency).split(',').map(Number);
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 9)) {
  usageError(`--rounds must be a whole number from 1 to 9 (given ${values.rounds})`);
}
const commitLatencyMs = Number(values['commit-latency-ms']);
if (!(Number.isFinite(commitLatencyMs) && commitLatencyMs >= 0 && commitLatencyMs <= 100)) {
  usageError(
    `--commit-latency-ms must be a number from 0 (skip that pass) to 100 (given ${values['commit-latency-ms']})`,
  );
}
if (
  !(Number.isInteger(messages) && messages >= 10 && Number.isInteger(warmupMessages) && warmupMessages >= 0)
) {
  usageError(
    `--messages must be a whole number ≥ 10 and --warmup ≥ 0 (given ${values.messages}, ${values.warmup})`,
  );
}
if (!concurrencies.every((c) => Number.isInteger(c) && c >= 1 && c <= 64)) {
  usageError(`--concurrency must list whole numbers from 1 to 64, e.g. 1,2,4 (given ${values.concurrency})`);
}
const purgeRows = Number(values['purge-rows']);
if (!(Number.isInteger(purgeRows) && purgeRows >= 1000 && purgeRows <= 10_000_000)) {
  usageError(`--purge-rows must be a whole number from 1000 to 10000000 (given ${values['purge-rows']})`);
}
if (values.only !== undefined) {
  if (values.only !== 'purge')
    usageError(`--only takes purge, the one line that runs alone (given ${values.only})`);
  await runRetentionPurgeAlone(purgeRows);
  process.exit(0);
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const started = performance.now();
const local: LocalPostgres | undefined = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
const url = process.env.DATABASE_URL ?? (local as LocalPostgres).url;
// Bounded (10 s, 8 attempts): a DATABASE_URL that is not PostgreSQL fails here, naming it.
const admin = postgres(url, {
  ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
  max: 1,
  onnotice: () => {},
});
const proxyTarget = new URL(url);
const proxy = await startRoundTripProxy({
  host: proxyTarget.hostname,
  port: Number(proxyTarget.port || 5432),
});
const threads = await startLaneThreads(Math.max(...concurrencies));
try {
  await runMigrations(admin, { directory: join(PROJECT_ROOT, 'migrations') });
  // The deployed worker role's timeouts (the engine sets none itself): the same here, for the bench's role.
  const [{ role, database } = { role: '', database: '' }] = await admin<{ role: string; database: string }[]>`
    select current_user as role, current_database() as database
  `;
  await setRoleTimeouts(admin, role, database, DEFAULT_ROLE_TIMEOUTS);
  const [server] = await admin<{ version: string; fsync: string; sync: string }[]>`
    select current_setting('server_version') as version, current_setting('fsync') as fsync,
           current_setting('synchronous_commit') as sync
  `;
  const proxiedUrl = new URL(url);
  proxiedUrl.hostname = '127.0.0.1';
  proxiedUrl.port = String(proxy.port);
  const runId = randomBytes(3).toString('hex');

  // Each configuration runs `rounds` times, the modes interleaved, and the order of the modes rotates from round
  // to round (baseline first, then per-message first, then per-batch first, …): whichever mode runs second in a
  // round was measured ~5 % slower, whatever the mode. The round with the median throughput is shown, and ratios
  // are the median of the ratios within a round: a single run on a shared 2-core machine drifts by ±10 %.
  const results: ConfigResult[] = [];
  for (const concurrency of concurrencies) {
    const byMode = new Map<BenchMode, ConfigResult[]>();
    for (let round = 1; round <= rounds; round += 1) {
      const modes: BenchMode[] = ['baseline', 'per-message', 'per-batch'];
      const shift = (round - 1) % modes.length;
      for (const mode of [...modes.slice(shift), ...modes.slice(0, shift)]) {
        const result = await benchConfig({
          mode,
          concurrency,
          messages,
          warmupMessages,
          runId: `${runId}-r${round}`,
          admin,
          directUrl: url,
          proxiedUrl: proxiedUrl.href,
          proxy,
          threads,
        });
        byMode.set(mode, [...(byMode.get(mode) ?? []), result]);
        log(
          `[${since(started)}] ${mode} × ${concurrency}, round ${round}: ${result.messagesPerSecond.toFixed(0)} msgs/s`,
        );
      }
    }
    const runsOf = (mode: BenchMode) => byMode.get(mode) ?? [];
    results.push(
      medianRun(runsOf('baseline')),
      {
        ...medianRun(runsOf('per-message')),
        vsBaseline: pairedRatio(runsOf('per-message'), runsOf('baseline')),
      },
      {
        ...medianRun(runsOf('per-batch')),
        vsBaseline: pairedRatio(runsOf('per-batch'), runsOf('baseline')),
        vsPerMessage: pairedRatio(runsOf('per-batch'), runsOf('per-message')),
      },
    );
  }

  // Second pass at concurrency 1 with a modelled durable-commit latency. A local disk flushes WAL in a fraction
  // of a millisecond; RDS commits wait for storage replication (and, Multi-AZ, the standby): a few ms. The
  // server's commit_delay with commit_siblings = 0 makes every WAL flush wait that long, so per-batch mode's
  // one commit per batch shows what it saves where commits cost what they cost in AWS.
  const slowCommit: ConfigResult[] = [];
  let slowCommitNote = '';
  if (commitLatencyMs > 0) {
    try {
      await admin.unsafe(`alter system set commit_delay = ${Math.round(commitLatencyMs * 1000)}`);
      await admin.unsafe('alter system set commit_siblings = 0');
      await admin`select pg_reload_conf()`;
      for (const mode of ['baseline', 'per-message', 'per-batch'] as BenchMode[]) {
        const result = await benchConfig({
          mode,
          concurrency: 1,
          messages: Math.min(messages, 1000),
          warmupMessages,
          runId: `${runId}-slow`,
          admin,
          directUrl: url,
          proxiedUrl: proxiedUrl.href,
          proxy,
          threads,
        });
        slowCommit.push(result);
        log(
          `[${since(started)}] ${mode} × 1, ${commitLatencyMs} ms commits: ${result.messagesPerSecond.toFixed(0)} msgs/s`,
        );
      }
    } catch (error) {
      slowCommitNote = `skipped: ${error instanceof Error ? error.message : String(error)} (needs a superuser)`;
    } finally {
      await admin.unsafe('alter system reset commit_delay').catch(() => {});
      await admin.unsafe('alter system reset commit_siblings').catch(() => {});
      await admin`select pg_reload_conf()`.catch(() => {});
    }
  }

  log(`[${since(started)}] retention purge of ${purgeRows} rows while the worker runs`);
  const purge = await benchRetentionPurge({ rows: purgeRows, runId, admin, url, threads, log });

  log(`[${since(started)}] bundling the worker and timing its cold load`);
  const bundle = await bundleWorker();
  const cold = await coldLoad(bundle);

  const report = { results, bundle, coldLoad: cold, slowCommit, commitLatencyMs };
  console.log(
    [
      `sqs-inbox-worker bench — ${availableParallelism()} cores, Node ${process.version}, PostgreSQL ${server?.version} ` +
        `(fsync ${server?.fsync}, synchronous_commit ${server?.sync}${local ? ', embedded' : ', DATABASE_URL'})`,
      `${messages} measured messages per row after ${warmupMessages} warm-up (median of ${rounds} interleaved rounds), batches of 10, CaseDeadlineCalculationRequested; ` +
        'concurrency N = N environments, each its own client (pool 1) pulling batches from a shared list.',
      'Timed runs connect straight to PostgreSQL; RT/msg and stmts/msg come from 100 more messages per configuration ' +
        'through a counting TCP proxy: RT = client write bursts that follow a server response, stmts = Parse/Query ' +
        'messages on the wire, BEGIN/COMMIT/SAVEPOINT included.',
      '',
      renderThroughput(results),
      '',
      commitLatencyMs > 0
        ? `With ${commitLatencyMs} ms durable commits (commit_delay, commit_siblings 0: a model of RDS storage/Multi-AZ commit latency), concurrency 1:\n${
            slowCommitNote || renderThroughput(slowCommit)
          }`
        : 'Commit-latency pass skipped (--commit-latency-ms 0).',
      '',
      renderBundle(bundle, cold),
      '',
      renderRetentionPurge(purge),
      '',
      'Targets (figures only: a missed target does not fail the bench)',
      renderTargets(report),
      `total ${since(started)}`,
    ].join('\n'),
  );
} finally {
  await admin.end({ timeout: 5 });
  await threads.close();
  await proxy.close();
  await local?.stop();
}
