/**
 * `npm run bench [-- --network-delay-ms 1 --messages 2000 --concurrency 1,2,4]`: first, under an RDS-like network
 * (every chunk delayed per direction by the counting proxy, commits delayed by the server), the hand-written
 * baselines, the worker in per-message and per-batch mode, with `prepare: false` and with named prepared
 * statements, at concurrency 1 — the headline figures; then the same on loopback (straight to the database) at
 * each concurrency, round trips and statements counted through the proxy without delay; the statements of every
 * mode checked against RDS Proxy's pinning conditions; then the worker bundle's size and cold load; then the
 * retention purge's effect on worker_inbox's size and on the worker's throughput (`retention-purge.ts`;
 * `-- --only purge` runs that line alone; `-- --only bundle` the bundle line); then the worker's peak memory per
 * `payloadRef` size (`payload-memory.ts`; `-- --only payload-memory` runs that line alone); `-- --only per-message,per-batch`
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
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/postgres/provision-roles.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { benchBundle, runBundleAlone } from './bench-bundle.ts';
import { benchConfig, type ConfigResult, medianRun, pairedRatio, since } from './bench-config.ts';
import type { BenchMode } from './bench-lanes.ts';
import { startLaneThreads } from './lane-threads.ts';
import { benchPayloadMemory } from './payload-memory.ts';
import { runPayloadMemoryAlone } from './payload-memory-alone.ts';
import { renderPayloadMemory } from './render-payload-memory.ts';
import {
  type BenchReport,
  REFERENCE_MODE,
  renderBundle,
  renderPinningAudit,
  renderTargets,
  renderThroughput,
} from './render-report.ts';
import { renderRetentionPurge } from './render-retention-purge.ts';
import { benchRetentionPurge } from './retention-purge.ts';
import { runRetentionPurgeAlone } from './retention-purge-alone.ts';
import { type RoundTripProxy, startRoundTripProxy } from './round-trip-proxy.ts';
import { formatMs, median } from './statistics.ts';

/** The modes of the RDS-like network pass, in the order of the first round. */
const NETWORK_MODES: readonly BenchMode[] = [
  'minimal',
  'per-message',
  'baseline',
  'per-message-prepared',
  'minimal-batch',
  'per-batch',
  'per-batch-prepared',
];

/** Every mode, as `--only` takes them. */
const ALL_MODES: readonly BenchMode[] = [...NETWORK_MODES];

/** The modes of the loopback pass. */
const LOOPBACK_MODES: readonly BenchMode[] = [
  'minimal',
  'per-message',
  'baseline',
  'minimal-batch',
  'per-batch',
];

const USAGE = `usage: npm run bench [-- options]
  --network-delay-ms N    RDS-like network: delay per direction of every chunk, 0 skips that pass (default 1)
  --commit-latency-ms N   RDS-like network: modelled durable-commit latency, 0 for none (default 2)
  --network-messages N    RDS-like network: measured messages per configuration (default 300, at least 10)
  --network-rounds N      RDS-like network: interleaved rounds, median shown (default 3, 1 to 9)
  --messages N            loopback: measured messages per configuration (default 1000, at least 10)
  --rounds N              loopback: interleaved rounds, mode order rotating, median shown (default 3, 1 to 9)
  --concurrency LIST      loopback: environments at once, comma-separated (default 1,2,4)
  --warmup N              warm-up messages before each configuration (default 200)
  --purge-rows N          old inbox rows the retention purge line deletes (default 100000, 1000 to 10000000)
  --only purge            run the retention purge line alone
  --only bundle           run the bundle and cold-load line alone (no database)
  --only payload-memory   run the payload-memory line alone (peak RSS per payloadRef size)
  --only MODES            run the throughput lines of these modes alone, comma-separated (e.g. per-message,per-batch;
                          modes: ${ALL_MODES.join(', ')})
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
      messages: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: '3' },
      'network-delay-ms': { type: 'string', default: '1' },
      'network-messages': { type: 'string', default: '300' },
      'network-rounds': { type: 'string', default: '3' },
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
const networkDelayMs = Number(values['network-delay-ms']);
if (!(Number.isFinite(networkDelayMs) && networkDelayMs >= 0 && networkDelayMs <= 100)) {
  usageError(
    `--network-delay-ms must be a number from 0 (skip that pass) to 100 (given ${values['network-delay-ms']})`,
  );
}
const networkMessages = Number(values['network-messages']);
const networkRounds = Number(values['network-rounds']);
if (
  !(
    Number.isInteger(networkMessages) &&
    networkMessages >= 10 &&
    Number.isInteger(networkRounds) &&
    networkRounds >= 1 &&
    networkRounds <= 9
  )
) {
  usageError(
    `--network-messages must be a whole number ≥ 10 and --network-rounds from 1 to 9 (given ${values['network-messages']}, ${values['network-rounds']})`,
  );
}
const commitLatencyMs = Number(values['commit-latency-ms']);
if (!(Number.isFinite(commitLatencyMs) && commitLatencyMs >= 0 && commitLatencyMs <= 100)) {
  usageError(
    `--commit-latency-ms must be a number from 0 (no commit latency) to 100 (given ${values['commit-latency-ms']})`,
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
/** `--only MODES`: the throughput lines of these modes, in both passes, and nothing else. */
const onlyModes =
  typeof values.only === 'string' &&
  values.only.split(',').every((mode) => ALL_MODES.includes(mode as BenchMode))
    ? (values.only.split(',') as BenchMode[])
    : undefined;
if (values.only !== undefined && !onlyModes) {
  if (values.only === 'purge') await runRetentionPurgeAlone(purgeRows);
  else if (values.only === 'bundle') await runBundleAlone();
  else if (values.only === 'payload-memory') await runPayloadMemoryAlone();
  else {
    usageError(
      `--only takes purge, bundle or payload-memory, the lines that run alone, or a comma-separated list of modes (${ALL_MODES.join(', ')}) (given ${values.only})`,
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

  /**
   * Each configuration runs `rounds` times, the modes interleaved, and the order of the modes rotates from round
   * to round: whichever mode runs second in a round was measured ~5 % slower, whatever the mode. The round with
   * the median throughput is shown, and ratios are the median of the ratios within a round: a single run on a
   * shared 2-core machine drifts by ±10 %.
   */
  const measure = async (pass: {
    label: string;
    modes: readonly BenchMode[];
    concurrencies: readonly number[];
    rounds: number;
    messages: number;
    network?: { url: string; proxy: RoundTripProxy };
  }): Promise<ConfigResult[]> => {
    const results: ConfigResult[] = [];
    for (const concurrency of pass.concurrencies) {
      const byMode = new Map<BenchMode, ConfigResult[]>();
      for (let round = 1; round <= pass.rounds; round += 1) {
        const shift = (round - 1) % pass.modes.length;
        for (const mode of [...pass.modes.slice(shift), ...pass.modes.slice(0, shift)]) {
          const result = await benchConfig({
            mode,
            concurrency,
            messages: pass.messages,
            warmupMessages,
            runId: `${runId}-${pass.network ? 'n' : 'l'}${round}`,
            admin,
            directUrl: url,
            proxiedUrl,
            proxy,
            threads,
            ...(pass.network ? { network: pass.network } : {}),
          });
          byMode.set(mode, [...(byMode.get(mode) ?? []), result]);
          log(
            `[${since(started)}] ${pass.label}: ${mode} × ${concurrency}, round ${round}: ${result.messagesPerSecond.toFixed(0)} msgs/s, ${result.roundTripsPerMessage.toFixed(2)} RT/msg`,
          );
        }
      }
      const runsOf = (mode: BenchMode) => byMode.get(mode) ?? [];
      for (const mode of pass.modes) {
        const reference = REFERENCE_MODE[mode];
        const row: ConfigResult = {
          ...medianRun(runsOf(mode)),
          // The pinning audit covers every statement any round sent.
          statements: runsOf(mode).flatMap((run) => run.statements ?? []),
          ...(reference && byMode.has(reference)
            ? { vsBaseline: pairedRatio(runsOf(mode), runsOf(reference)) }
            : {}),
          ...(mode === 'per-batch' && byMode.has('per-message')
            ? { vsPerMessage: pairedRatio(runsOf(mode), runsOf('per-message')) }
            : {}),
        };
        results.push(row);
      }
    }
    return results;
  };

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
        'Targets (figures only: a missed target does not fail the bench)',
        renderTargets(report),
        `total ${since(started)}`,
      ].join('\n'),
    );
  }
} finally {
  await admin.end({ timeout: 5 });
  await threads.close();
  await proxy.close();
  await networkProxy?.close();
  await local?.stop();
}

/** Median time of a parameterless statement through the proxy at `proxiedUrl` (one round trip), in ms. */
async function roundTripTime(proxiedUrl: string): Promise<number> {
  const client = postgres(proxiedUrl, { max: 1, prepare: false, onnotice: () => {} });
  try {
    await client`select 1`;
    const times: number[] = [];
    for (let run = 0; run < 30; run += 1) {
      const t = performance.now();
      await client`select 1`;
      times.push(performance.now() - t);
    }
    return median(times);
  } finally {
    await client.end({ timeout: 5 });
  }
}
