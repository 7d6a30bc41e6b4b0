/**
 * `npm run bench [-- --network-delay-ms 1 --messages 2000 --concurrency 1,2,4]`: first, under an RDS-like network
 * (every chunk delayed per direction by the counting proxy, commits delayed by the server), the hand-written
 * baselines, the worker in per-message and per-batch mode, with `prepare: false` and with named prepared
 * statements, at concurrency 1 — the headline figures; then the same on loopback (straight to the database) at
 * each concurrency, round trips and statements counted through the proxy without delay; the statements of every
 * mode checked against RDS Proxy's pinning conditions; then the worker bundle's size and cold load; then the
 * retention purge's effect on worker_inbox's size and on the worker's throughput (`retention-purge.ts`;
 * `-- --only purge` runs that line alone; `-- --only bundle` the bundle line); then the worker's peak memory per
 * `payloadRef` size (`payload-memory.ts`; `-- --only payload-memory` runs that line alone); then the DynamoDB store's
 * calls and write units per message against a hand-written minimal (`dynamodb-calls.ts`; `-- --only dynamodb`);
 * then this poller against sqs-consumer and the poller's scale curve, on SQS and PostgreSQL behind the delaying
 * proxies (`queue-lines-alone.ts`; `-- --only poller-peer`, `-- --only scale`); `-- --only per-message,per-batch`
 * runs the throughput lines of those modes alone. Prints figures and its targets beside them; always exits 0 unless the
 * bench itself fails.
 *
 * Database: DATABASE_URL when set (migrated first; the bench adds rows under consumer `bench-worker`),
 * otherwise a throwaway embedded PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/postgres/provision-roles.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { benchBundle, runBundleAlone } from './bench-bundle.ts';
import { type ConfigResult, since } from './bench-config.ts';
import type { BenchMode } from './bench-lanes.ts';
import { ALL_MODES, NETWORK_MODES, parseBenchOptions, usageError } from './bench-options.ts';
import { runContentionAlone } from './contention-alone.ts';
import { benchDynamoCalls, runDynamoCallsAlone } from './dynamodb-calls.ts';
import { startLaneThreads } from './lane-threads.ts';
import { type BenchPass, type BenchRun, measurePass } from './measure-pass.ts';
import { benchPayloadMemory } from './payload-memory.ts';
import { runPayloadMemoryAlone } from './payload-memory-alone.ts';
import { runQueueLineAlone } from './queue-lines-alone.ts';
import { renderDynamoCalls, renderDynamoTargets } from './render-dynamodb-calls.ts';
import { renderPayloadMemory } from './render-payload-memory.ts';
import {
  type BenchReport,
  renderBundle,
  renderPinningAudit,
  renderTargets,
  renderThroughput,
} from './render-report.ts';
import { renderRetentionPurge } from './render-retention-purge.ts';
import { benchRetentionPurge } from './retention-purge.ts';
import { runRetentionPurgeAlone } from './retention-purge-alone.ts';
import { startRoundTripProxy } from './round-trip-proxy.ts';
import { roundTripTime } from './round-trip-time.ts';
import { formatMs } from './statistics.ts';

/** The modes of the loopback pass. */
const LOOPBACK_MODES: readonly BenchMode[] = [
  'minimal',
  'per-message',
  'baseline',
  'minimal-batch',
  'per-batch',
];

const {
  messages,
  warmupMessages,
  concurrencies,
  rounds,
  networkDelayMs,
  networkMessages,
  networkRounds,
  commitLatencyMs,
  purgeRows,
  peerMessages,
  scaleMessages,
  only,
  onlyModes,
} = parseBenchOptions();
if (only !== undefined && !onlyModes) {
  if (only === 'purge') await runRetentionPurgeAlone(purgeRows);
  else if (only === 'bundle') await runBundleAlone();
  else if (only === 'payload-memory') await runPayloadMemoryAlone();
  else if (only === 'contention') await runContentionAlone();
  else if (only === 'dynamodb') await runDynamoCallsAlone();
  else if (only === 'poller-peer' || only === 'scale') {
    await runQueueLineAlone(only, {
      delayMs: networkDelayMs,
      rounds,
      peerMessages,
      scaleMessagesPerRecord: scaleMessages,
    });
  } else {
    usageError(
      `--only takes purge, bundle, payload-memory, contention, dynamodb, poller-peer or scale, the lines that run alone, or a comma-separated list of modes (${ALL_MODES.join(', ')}) (given ${only})`,
    );
  }
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
const target = { host: proxyTarget.hostname, port: Number(proxyTarget.port || 5432) };
const proxy = await startRoundTripProxy(target);
const networkProxy =
  networkDelayMs > 0 ? await startRoundTripProxy(target, { delayMs: networkDelayMs }) : undefined;
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
  const viaProxy = (port: number) => {
    const address = new URL(url);
    address.hostname = '127.0.0.1';
    address.port = String(port);
    return address.href;
  };
  const proxiedUrl = viaProxy(proxy.port);
  const runId = randomBytes(3).toString('hex');

  const bench: BenchRun = {
    warmupMessages,
    runId,
    admin,
    url,
    proxiedUrl,
    proxy,
    threads,
    started,
    log,
  };
  const measure = (pass: BenchPass) => measurePass(bench, pass);

  // RDS-like network, concurrency 1: every chunk waits --network-delay-ms per direction in the proxy (the
  // network between a Lambda function and RDS Proxy), and every durable commit waits --commit-latency-ms: a
  // local disk flushes WAL in a fraction of a millisecond; RDS commits wait for storage replication (and,
  // Multi-AZ, the standby). The server's commit_delay with commit_siblings = 0 makes every WAL flush wait that
  // long (needs a superuser; without one the pass runs with the network delay alone and says so).
  let network: ConfigResult[] = [];
  let commitNote =
    commitLatencyMs > 0
      ? `${commitLatencyMs} ms durable commits (commit_delay, commit_siblings 0)`
      : 'no commit latency';
  let networkRoundTripMs = Number.NaN;
  if (networkProxy) {
    if (commitLatencyMs > 0) {
      try {
        await admin.unsafe(`alter system set commit_delay = ${Math.round(commitLatencyMs * 1000)}`);
        await admin.unsafe('alter system set commit_siblings = 0');
        await admin`select pg_reload_conf()`;
      } catch (error) {
        commitNote = `no commit latency: ${error instanceof Error ? error.message : String(error)} (needs a superuser)`;
      }
    }
    try {
      networkRoundTripMs = await roundTripTime(viaProxy(networkProxy.port));
      network = await measure({
        label: 'RDS-like network',
        modes: onlyModes ?? NETWORK_MODES,
        concurrencies: [1],
        rounds: networkRounds,
        messages: networkMessages,
        network: { url: viaProxy(networkProxy.port), proxy: networkProxy },
      });
    } finally {
      await admin.unsafe('alter system reset commit_delay').catch(() => {});
      await admin.unsafe('alter system reset commit_siblings').catch(() => {});
      await admin`select pg_reload_conf()`.catch(() => {});
    }
  }

  const results = await measure({
    label: 'loopback',
    modes: onlyModes ?? LOOPBACK_MODES,
    concurrencies,
    rounds,
    messages,
  });

  if (onlyModes) {
    console.log(
      [
        `sqs-inbox-worker bench, throughput of ${onlyModes.join(', ')} alone — load average ${loadavg()
          .map((load) => load.toFixed(1))
          .join(' / ')}, PostgreSQL ${server?.version}`,
        networkProxy
          ? `RDS-like network (${networkDelayMs} ms per direction, ${commitNote}), ${networkMessages} messages, median of ${networkRounds} rounds:\n${renderThroughput(network)}`
          : 'RDS-like network pass skipped (--network-delay-ms 0).',
        `Loopback, ${messages} messages, median of ${rounds} rounds:\n${renderThroughput(results)}`,
        `Statement audit (RDS Proxy pinning conditions, every statement the modes sent):\n${renderPinningAudit([...network, ...results])}`,
        `Targets (figures only: a missed target does not fail the bench)\n${renderTargets({ results, network })}`,
        `total ${since(started)}`,
      ].join('\n'),
    );
  } else {
    log(`[${since(started)}] retention purge of ${purgeRows} rows while the worker runs`);
    const purge = await benchRetentionPurge({ rows: purgeRows, runId, admin, url, threads, log });

    log(`[${since(started)}] bundling the worker and timing its cold load`);
    const bundle = await benchBundle();

    log(`[${since(started)}] the worker's peak memory per payloadRef size`);
    const payloadMemory = await benchPayloadMemory({ admin, url, log });

    log(`[${since(started)}] DynamoDB calls per message: the store vs the hand-written minimal`);
    const dynamodb = await benchDynamoCalls({ log });

    const report: BenchReport = { results, network, bundle };
    console.log(
      [
        `sqs-inbox-worker bench — ${availableParallelism()} cores, load average ${loadavg()
          .map((load) => load.toFixed(1))
          .join(
            ' / ',
          )} (1 / 5 / 15 min, at the end), Node ${process.version}, PostgreSQL ${server?.version} ` +
          `(fsync ${server?.fsync}, synchronous_commit ${server?.sync}${local ? ', embedded' : ', DATABASE_URL'})`,
        'Batches of 10 CaseDeadlineCalculationRequested; concurrency N = N environments, each its own client (pool 1) ' +
          'pulling batches from a shared list. RT = client write bursts that follow a server response, stmts = ' +
          'Parse/Query messages on the wire (BEGIN/COMMIT/SAVEPOINT included), both counted by a TCP proxy. × ref = ' +
          "msgs/s ÷ the reference's, the median of the ratios within a round. minimal / minimal-batch = the smallest " +
          'correct hand-written inbox transaction (claim inserted COMPLETED, domain statement, COMMIT); baseline = ' +
          "the worker's own SQL by hand; -prepared = named prepared statements (DB_PREPARE=true).",
        '',
        networkProxy
          ? `RDS-like network (headline): every chunk delayed ${networkDelayMs} ms per direction by the proxy ` +
            `(a round trip measured ${formatMs(networkRoundTripMs)}), ${commitNote}; ${networkMessages} measured ` +
            `messages per row after ${warmupMessages} warm-up, median of ${networkRounds} interleaved rounds:\n${renderThroughput(network)}`
          : 'RDS-like network pass skipped (--network-delay-ms 0).',
        '',
        `Loopback (straight to PostgreSQL, no commit latency; counted through the proxy without delay): ${messages} ` +
          `measured messages per row after ${warmupMessages} warm-up, median of ${rounds} interleaved rounds:`,
        renderThroughput(results),
        '',
        'Statement audit (RDS Proxy pinning conditions, every statement the modes sent):',
        renderPinningAudit([...network, ...results]),
        '',
        renderBundle(bundle),
        '',
        renderRetentionPurge(purge),
        '',
        renderPayloadMemory(payloadMemory),
        '',
        renderDynamoCalls(dynamodb),
        '',
        'Targets (figures only: a missed target does not fail the bench)',
        renderTargets(report),
        renderDynamoTargets(dynamodb),
      ].join('\n'),
    );
    // The queue lines, each on its rig (SQS and PostgreSQL behind the delaying proxies), printed as they finish.
    const queueLines = {
      delayMs: networkDelayMs,
      rounds,
      peerMessages,
      scaleMessagesPerRecord: scaleMessages,
    };
    log(`[${since(started)}] the poller against sqs-consumer`);
    await runQueueLineAlone('poller-peer', queueLines);
    log(`[${since(started)}] the poller's scale curve`);
    await runQueueLineAlone('scale', queueLines);
    console.log(`total ${since(started)}`);
  }
} finally {
  await admin.end({ timeout: 5 });
  await threads.close();
  await proxy.close();
  await networkProxy?.close();
  await local?.stop();
}
